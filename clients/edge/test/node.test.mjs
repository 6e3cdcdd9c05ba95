// The scenarios on Node's own Fetch API and WebCrypto: the connector in a
// node:http server in front of the origin, against a real waitroom.
import { test } from "node:test";
import { createServer } from "node:http";
import { Readable } from "node:stream";
import { handle } from "../edge.mjs";
import { World, freePort, scenarios } from "./harness.mjs";

test("the connector on Node", async (t) => {
  const world = new World();
  await world.start();
  const env = world.env();
  const port = await freePort();
  const next = (r) => {
    const u = new URL(r.url);
    return fetch(world.originURL + u.pathname + u.search, { method: r.method, headers: r.headers, body: r.body, duplex: "half", redirect: "manual" });
  };
  const srv = createServer(async (req, res) => {
    const body = req.method === "GET" || req.method === "HEAD" ? undefined : Readable.toWeb(req);
    const request = new Request(`http://${req.headers.host}${req.url}`, { method: req.method, headers: req.headers, body, duplex: "half" });
    const resp = await handle(request, env, next, { clientAddress: req.socket.remoteAddress });
    const headers = {};
    for (const [k, v] of resp.headers) if (k !== "set-cookie") headers[k] = v;
    headers["set-cookie"] = resp.headers.getSetCookie();
    res.writeHead(resp.status, headers);
    res.end(Buffer.from(await resp.arrayBuffer()));
  });
  await new Promise((r) => srv.listen(port, "127.0.0.1", r));
  try {
    for (const [name, fn] of scenarios(t, world, () => `http://127.0.0.1:${port}`)) {
      await t.test(name, fn);
    }
  } finally {
    await new Promise((r) => srv.close(r));
    await world.close();
  }
});
