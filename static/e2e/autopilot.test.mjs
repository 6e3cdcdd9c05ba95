// The dashboard of a room with autopilot on shows the rate it set, the
// origin's latency and errors as reported to the health endpoint, why the
// rate last changed, and the origin's chart; "Take manual control" turns
// the autopilot off after the usual confirmation, and the room keeps the
// rate. Headless Chromium against the real server (embedded Redis).
import assert from "node:assert/strict";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { test } from "node:test";
import { ADMIN_KEY, build, openBrowser, startServer, unexpected, waitFor } from "./harness.mjs";

const T = { timeout: 120000 };
const SERVICE_KEY = "e2e-service-key-0123456789";

test.before(async () => { await build(); }, { timeout: 180000 });

const text = (page, sel) => page.locator(sel).textContent().then((s) => (s || "").trim());

async function admin(base, method, p, body) {
  const res = await fetch(`${base}/api/v1/admin${p}`, {
    method, headers: { Authorization: "Bearer " + ADMIN_KEY, "Content-Type": "application/json" },
    body: body ? JSON.stringify(body) : undefined,
  });
  if (!res.ok) throw new Error(`admin ${method} ${p}: ${res.status} ${await res.text()}`);
  return res.json().catch(() => null);
}

// report sends n samples of ms milliseconds to room's health endpoint.
async function report(base, room, n, ms, ok) {
  const samples = Array.from({ length: n }, () => ({ ms, ok }));
  const res = await fetch(`${base}/api/v1/rooms/${room}/health`, {
    method: "POST", headers: { Authorization: "Bearer " + SERVICE_KEY, "Content-Type": "application/json" },
    body: JSON.stringify({ samples }),
  });
  if (!res.ok) throw new Error(`health: ${res.status} ${await res.text()}`);
}

test("the dashboard shows the autopilot's rate, the origin's health and why, and takes manual control", T, async (t) => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "waitroom-e2e-ap-"));
  const keys = path.join(dir, "service-keys.yaml");
  fs.writeFileSync(keys, `shop: ${SERVICE_KEY}\n`, { mode: 0o600 });
  const srv = await startServer(["-tick", "100ms", "-batch", "14", "-service-keys", keys]);
  t.after(() => srv.stop());
  await admin(srv.base, "PUT", "/rooms/ap", { autopilot: true });
  // An origin failing one request in five: the autopilot cuts the rate.
  await waitFor("a cut on errors", async () => {
    await report(srv.base, "ap", 40, 120, true);
    await report(srv.base, "ap", 10, 30, false);
    const ap = (await admin(srv.base, "GET", "/rooms/ap/stats")).autopilot;
    return ap && ap.overloaded;
  });

  const b = await openBrowser({ viewport: { width: 1200, height: 1000 } });
  t.after(() => b.close());
  const { page, errors } = b;
  await page.goto(`${srv.base}/admin?room=ap`);
  await page.locator("#key").fill(ADMIN_KEY);
  await page.locator("#use-key").click();
  await page.locator("#t-autopilot").waitFor({ state: "visible", timeout: 15000 });
  await waitFor("the tile's figures", async () =>
    /^origin p50 \d+ \/ p95 \d+ ms · errors 20\.0 % · \d+ samples · overloaded$/.test(await text(page, "#n-autopilot")));
  assert.match(await text(page, "#v-autopilot"), /^\d+\.\d \/ s$/);
  assert.match(await text(page, "#n-autopilot-why"), /^errors 20 % over 1 % limit: [\d.]+ → [\d.]+\/s \(.+\)$/);
  await page.locator("#origin-panel").waitFor({ state: "visible" });
  await waitFor("the origin's chart", async () => /p95 is \d+ ms against a target of 500 ms, and 20\.0 % of its requests fail\.$/.test(await text(page, "#origin-desc")));
  assert.ok(await page.locator("#origin-chart path.series-a").count() === 1, "the p95 line is drawn");
  assert.ok(await page.locator("#chart path.series-c").count() === 1, "the autopilot's rate is on the main chart");

  // Take manual control: confirmed, then the tile goes and the room keeps
  // the batch the autopilot set last.
  await page.evaluate(() => {
    window.confirmClosed = false;
    document.getElementById("confirm").addEventListener("close", () => setTimeout(() => { window.confirmClosed = true; }, 0), { once: true });
  });
  await page.locator("#manual").click();
  await page.locator("#confirm").waitFor({ state: "visible", timeout: 10000 });
  assert.match(await text(page, "#confirm-changes"), /autopilot: true → false/);
  assert.match(await text(page, "#confirm-effects"), /autopilot off: the room keeps the rate it last set/);
  await page.locator("#confirm-apply").click();
  await page.waitForFunction(() => window.confirmClosed === true, null, { timeout: 10000 });
  await waitFor("the autopilot off", async () => (await text(page, "#action-msg")) === "Autopilot off: the room keeps the rate it last set.");
  await page.locator("#t-autopilot").waitFor({ state: "hidden", timeout: 10000 });
  const after = await admin(srv.base, "GET", "/rooms/ap");
  assert.equal(after.autopilot, false);
  const trail = (await admin(srv.base, "GET", "/rooms/ap/audit")).entries;
  assert.equal(trail[0].who, "admin", "the newest entry is the change to manual control");
  const last = trail.find((e) => e.who === "autopilot");
  assert.match(last.reason, /^errors 20 % over 1 % limit: /);
  const set = last.changes.find((c) => c.field === "batch").to;
  assert.equal(after.batch, set, "the batch the autopilot set last is kept");
  assert.ok(set < 14, `batch ${set}, want it cut under 14`);
  assert.deepEqual(unexpected(errors), []);
});
