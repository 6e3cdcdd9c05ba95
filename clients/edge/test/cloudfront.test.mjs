// The Lambda@Edge wrapper on CloudFront-shaped viewer-request events,
// against a real waitroom.
import { test } from "node:test";
import assert from "node:assert/strict";
import { handle } from "../edge.mjs";
import { cloudfront } from "../cloudfront.mjs";
import { World, freePort, admit } from "./harness.mjs";
import { createServer } from "node:http";
import { Readable } from "node:stream";

function event(uri, headers, querystring = "") {
  const h = { host: [{ key: "Host", value: "shop.example.com" }] };
  for (const [k, v] of Object.entries(headers)) h[k.toLowerCase()] = [{ key: k, value: v }];
  return { Records: [{ cf: { request: { clientIp: "203.0.113.9", method: "GET", uri, querystring, headers: h } } }] };
}

test("the connector on CloudFront's viewer-request events", async (t) => {
  const world = new World();
  await world.start();
  const env = world.env();
  // Visitors are admitted through the connector on Node, as a browser on
  // the same host would be.
  const port = await freePort();
  const srv = createServer(async (req, res) => {
    const body = req.method === "GET" || req.method === "HEAD" ? undefined : Readable.toWeb(req);
    const resp = await handle(new Request(`http://${req.headers.host}${req.url}`, { method: req.method, headers: req.headers, body, duplex: "half" }), env, () => new Response("ok"));
    const headers = {};
    for (const [k, v] of resp.headers) if (k !== "set-cookie") headers[k] = v;
    headers["set-cookie"] = resp.headers.getSetCookie();
    res.writeHead(resp.status, headers);
    res.end(Buffer.from(await resp.arrayBuffer()));
  });
  await new Promise((r) => srv.listen(port, "127.0.0.1", r));
  try {
    await t.test("a free path goes on, without the client's X-Waitroom-* headers", async () => {
      const out = await cloudfront(event("/about", { "X-Waitroom-Visitor": "v1", "X_Waitroom_Room": "open-room" }), env);
      assert.equal(out.uri, "/about");
      assert.equal(out.headers["x-waitroom-visitor"], undefined);
      assert.equal(out.headers["x_waitroom_room"], undefined);
      assert.equal(out.headers.host[0].value, "shop.example.com");
    });
    await t.test("a browser without a session goes to the waiting page", async () => {
      const out = await cloudfront(event("/shop/pay", { Accept: "text/html" }, "a=1"), env);
      assert.equal(out.status, "302");
      const loc = new URL(out.headers.location[0].value, "https://shop.example.com");
      assert.equal(loc.pathname, "/waitroom/");
      assert.equal(loc.searchParams.get("return"), "/shop/pay?a=1");
    });
    await t.test("an admitted visitor goes on with its room and visitor", async () => {
      const { jar } = await admit(`http://127.0.0.1:${port}`, "open-room");
      const out = await cloudfront(event("/shop/x", { Cookie: jar.header(["wr_visitor", "wr_session_open-room_edge"]), "X-Waitroom-Visitor": "someone-else" }), env);
      assert.equal(out.uri, "/shop/x");
      assert.equal(out.headers["x-waitroom-room"][0].value, "open-room");
      assert.ok(out.headers["x-waitroom-visitor"][0].value && out.headers["x-waitroom-visitor"][0].value !== "someone-else");
      // With the session cookie alone waitroom hands out a fresh edge
      // session: the visitor gets it and comes back.
      const again = await cloudfront(event("/shop/x", { Cookie: jar.header(["wr_visitor", "wr_session_open-room"]) }), env);
      assert.equal(again.status, "307");
      assert.equal(again.headers.location[0].value, "https://shop.example.com/shop/x");
      assert.ok(again.headers["set-cookie"].some((c) => c.value.startsWith("wr_session_open-room_edge=")));
    });
  } finally {
    await new Promise((r) => srv.close(r));
    await world.close();
  }
});
