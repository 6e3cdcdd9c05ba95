// The shared vectors' requests sent as raw HTTP (the Host and the target
// exactly as written) to the connector on workerd, in front of a real
// origin, with waitroom out of reach and rooms failing closed: what the Go
// gateway passes reaches the origin without the client's X-Waitroom-*
// headers; nothing it guards or refuses does.
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { request } from "node:http";
import { World, freePort } from "./harness.mjs";
import { startWorkerd } from "./workerd.mjs";

const vectors = JSON.parse(readFileSync(new URL("../../../gateway/testdata/vectors.json", import.meta.url), "utf8"));

function send(url, c) {
  const u = new URL(url);
  return new Promise((resolve, reject) => {
    const req = request({ host: u.hostname, port: u.port, method: c.method || "GET", path: c.target,
      headers: { host: c.host, accept: "text/html", ...(c.headers || {}) } }, (res) => {
      let b = "";
      res.on("data", (d) => { b += d; });
      res.on("end", () => resolve({ status: res.statusCode, body: b }));
    });
    req.on("error", reject);
    req.end();
  });
}

test("the bypass attacks against the connector on workerd", async (t) => {
  const world = new World();
  await world.origin();
  const env = { WAITROOM_URL: `http://127.0.0.1:${await freePort()}`, WAITROOM_ROUTES: JSON.stringify(vectors.routes),
    WAITROOM_FAIL_MODE: "closed", ORIGIN_URL: world.originURL };
  const w = await startWorkerd(env);
  try {
    for (const c of vectors.cases) {
      // The client's address is the platform's (CF-Connecting-IP on
      // Cloudflare): the CIDR cases are decide's, in vectors.test.mjs.
      if (c.client) continue;
      await t.test(c.name, async () => {
        let r;
        try {
          r = await send(w.url, c);
        } catch (e) {
          assert.notEqual(c.want, "pass", `refused on the way: ${e.message}`);
          return;
        }
        let b = null;
        try { b = JSON.parse(r.body); } catch { /* a refusal page */ }
        const reached = b && b.origin === true;
        if (c.want === "pass") {
          assert.ok(reached, `status ${r.status}: ${r.body.slice(0, 200)}`);
          for (const k of Object.keys(b.headers)) {
            assert.ok(!/^x[-_]waitroom[-_](room|visitor|fail[-_]open)$/i.test(k), `the client's ${k} reached the origin`);
          }
        } else {
          assert.ok(!reached, `reached the origin as ${b && b.url}`);
          assert.ok([400, 421, 503].includes(r.status), `status ${r.status}`);
        }
      });
    }
  } finally {
    await w.close();
    await new Promise((r) => world.originSrv.close(r));
  }
});
