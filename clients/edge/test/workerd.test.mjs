// The scenarios on workerd, the Workers runtime, from npm.
import { test } from "node:test";
import { World, scenarios } from "./harness.mjs";
import { startWorkerd } from "./workerd.mjs";

test("the connector on workerd", async (t) => {
  const world = new World();
  await world.start();
  let w;
  try {
    w = await startWorkerd(world.env());
    for (const [name, fn] of scenarios(t, world, () => w.url)) {
      await t.test(name, fn);
    }
  } finally {
    if (w) await w.close();
    await world.close();
  }
});
