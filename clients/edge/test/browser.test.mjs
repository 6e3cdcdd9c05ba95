// A real browser (headless Chromium, driven as static/e2e drives it)
// through the connector on workerd: sent to the waiting page, admitted,
// back on the page it asked for with the room's headers at the origin, and
// its next page passes on the edge session.
import { test } from "node:test";
import assert from "node:assert/strict";
import { openBrowser, waitFor } from "../../../static/e2e/harness.mjs";
import { World, freePort } from "./harness.mjs";
import { startWorkerd } from "./workerd.mjs";

test("a browser through the connector on workerd", { timeout: 120000 }, async (t) => {
  // The page's WebSocket reaches waitroom with the shop's Origin but the
  // Host waitroom is fetched by: the shop's origin is in -origins.
  const port = await freePort();
  const world = new World();
  world.origins = [`http://127.0.0.1:${port}`];
  await world.start();
  t.after(() => world.close());
  const w = await startWorkerd(world.env(), {}, undefined, port);
  t.after(() => w.close());
  const b = await openBrowser();
  t.after(() => b.close());
  const { page } = b;
  const sockets = [];
  page.on("websocket", (ws) => sockets.push(ws.url()));

  await page.goto(`${w.url}/shop/pay?item=7`);
  // The waiting page, on the shop's host.
  assert.equal(new URL(page.url()).pathname, "/waitroom/");
  // Admitted (50 a tick), it enters and comes back.
  await waitFor("the page asked for", async () => new URL(page.url()).pathname === "/shop/pay", { timeout: 30000 });
  const got = JSON.parse(await page.locator("body").innerText());
  assert.equal(got.origin, true);
  assert.equal(got.url, "/shop/pay?item=7");
  assert.equal(got.headers["x-waitroom-room"], "open-room");
  const visitor = got.headers["x-waitroom-visitor"];
  assert.ok(visitor);
  const names = (await b.context.cookies()).map((c) => c.name).sort();
  assert.deepEqual(names, ["wr_session_open-room", "wr_session_open-room_edge", "wr_visitor"]);
  // The next page passes on the edge session, as the same visitor.
  await page.goto(`${w.url}/shop/next`);
  const next = JSON.parse(await page.locator("body").innerText());
  assert.equal(next.headers["x-waitroom-visitor"], visitor);
  // The page's live updates came over a WebSocket through workerd.
  assert.ok(sockets.some((u) => new URL(u).pathname === "/waitroom/api/v1/rooms/open-room/ws"), sockets.join());
  assert.deepEqual(b.errors.filter((e) => !/favicon/.test(e)), []);
});
