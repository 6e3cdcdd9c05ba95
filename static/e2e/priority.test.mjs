// Priority codes in Chromium: a link with ?invite=CODE joins ahead of the
// public queue; a code that is not good stops the page with the server's
// reason.
import assert from "node:assert/strict";
import { test } from "node:test";
import { ADMIN_KEY, build, openBrowser, startServer, unexpected } from "./harness.mjs";

const T = { timeout: 120000 };

test.before(async () => { await build(); }, { timeout: 180000 });

async function admin(base, method, path, body) {
  const res = await fetch(`${base}/api/v1/admin${path}`, {
    method,
    headers: { "Authorization": "Bearer " + ADMIN_KEY, "Content-Type": "application/json" },
    body: body && JSON.stringify(body),
  });
  const text = await res.text();
  assert.ok(res.ok, `${method} ${path}: ${res.status} ${text}`);
  return JSON.parse(text);
}

test("a priority link joins ahead of the public queue; a bad code says why", T, async (t) => {
  const srv = await startServer(["-tick", "100ms"]);
  t.after(() => srv.stop());
  await admin(srv.base, "PUT", "/rooms/vip", { paused: true });
  for (let i = 0; i < 5; i++) {
    const res = await fetch(`${srv.base}/api/v1/rooms/vip/join`, { method: "POST" });
    assert.equal(res.status, 200);
  }
  const { codes } = await admin(srv.base, "POST", "/rooms/vip/invites", { priority: true });

  const b = await openBrowser();
  t.after(() => b.close());
  const { page } = b;
  const joins = [];
  page.on("request", (r) => { if (r.url().endsWith("/api/v1/rooms/vip/join")) joins.push(r.postData() || ""); });
  await page.goto(`${srv.base}/?room=vip&invite=${encodeURIComponent(codes[0])}`);
  await page.waitForFunction(() => document.getElementById("position").textContent.trim() === "1", null, { timeout: 30000 });
  assert.ok(joins.some((j) => JSON.parse(j).invite === codes[0]), "the join carried the code: " + JSON.stringify(joins));
  // A reload keeps the place and spends nothing (the code had one use).
  await page.reload();
  await page.waitForFunction(() => document.getElementById("position").textContent.trim() === "1", null, { timeout: 30000 });

  const other = await b.context.newPage();
  await other.goto(`${srv.base}/?room=vip&invite=${encodeURIComponent(codes[0] + "x")}`);
  await other.waitForFunction(() => /invite code/i.test(document.getElementById("card").textContent), null, { timeout: 30000 });
  assert.deepEqual(unexpected(b.errors, [/status of 403/]), []);
});
