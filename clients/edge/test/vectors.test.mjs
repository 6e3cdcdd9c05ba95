// The shared vectors (gateway/testdata/vectors.json), which the Go gateway's
// TestVectors reads too: the connector decides as the Go gateway does, and
// through handle no case the Go gateway refuses or guards reaches the origin.
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { createServer } from "node:net";
import { decide, handle, normalizePath, parseRoutes } from "../edge.mjs";

const vectors = JSON.parse(readFileSync(new URL("../../../gateway/testdata/vectors.json", import.meta.url), "utf8"));

test("paths: normalizePath is gateway.NormalizePath", () => {
  for (const c of vectors.paths) {
    if (c.error) assert.throws(() => normalizePath(c.raw), undefined, JSON.stringify(c.raw));
    else assert.equal(normalizePath(c.raw), c.want, JSON.stringify(c.raw));
  }
});

test("invalid routes files: refused as gateway.Parse refuses them", () => {
  assert.ok(vectors.invalidRoutes.length >= 10);
  for (const c of vectors.invalidRoutes) {
    assert.throws(() => parseRoutes(c.doc), undefined, c.name);
  }
});

test("cases: decide is the Go gateway's decision", () => {
  const cfg = parseRoutes(vectors.routes);
  assert.ok(vectors.cases.length >= 40);
  for (const c of vectors.cases) {
    const h = new Headers(c.headers || {});
    const d = decide(cfg, { method: c.method || "GET", host: c.host, target: c.target, client: c.client || "203.0.113.9", header: (k) => h.get(k) || "" });
    assert.equal(d.action, c.want, c.name);
    if (c.want === "guard") assert.equal(d.route.room, c.room, c.name);
  }
});

// A loopback port nothing listens on: waitroom is out of reach, and the
// rooms fail closed.
async function closedPort() {
  const srv = createServer();
  await new Promise((r) => srv.listen(0, "127.0.0.1", r));
  const port = srv.address().port;
  await new Promise((r) => srv.close(r));
  return port;
}

test("cases through handle: what the Go gateway refuses or guards never reaches the origin", async () => {
  const env = { WAITROOM_URL: `http://127.0.0.1:${await closedPort()}`, WAITROOM_ROUTES: JSON.stringify(vectors.routes), WAITROOM_FAIL_MODE: "closed" };
  for (const c of vectors.cases) {
    let seen = null;
    const next = async (req) => { seen = req; return new Response("origin"); };
    let req;
    try {
      req = new Request(`https://${c.host}${c.target}`, { method: c.method || "GET", headers: { accept: "text/html", ...(c.headers || {}) } });
    } catch {
      assert.notEqual(c.want, "pass", `${c.name}: no Request can be made of it`);
      continue;
    }
    const resp = await handle(req, env, next, { clientAddress: c.client || "203.0.113.9" });
    if (c.want === "pass") {
      assert.ok(seen, `${c.name}: did not reach the origin (${resp.status})`);
      for (const [k] of seen.headers) {
        const name = k.toLowerCase().replace(/_/g, "-");
        assert.ok(!["x-waitroom-room", "x-waitroom-visitor", "x-waitroom-fail-open"].includes(name), `${c.name}: the client's ${k} reached the origin`);
      }
    } else {
      assert.equal(seen, null, `${c.name}: reached the origin`);
      assert.ok([400, 421, 503].includes(resp.status), `${c.name}: status ${resp.status}`);
    }
  }
});
