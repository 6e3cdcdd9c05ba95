// End-to-end test of the report page: a room's report with its SVG
// charts, in headless Chromium against the real server (embedded Redis).
import assert from "node:assert/strict";
import { test } from "node:test";
import { ADMIN_KEY, build, join, openBrowser, shot, startServer, unexpected, waitFor } from "./harness.mjs";

const T = { timeout: 120000 };

test.before(async () => { await build(); }, { timeout: 180000 });

test("the report page shows a room's totals and charts, with the key the dashboard keeps", T, async (t) => {
  const srv = await startServer(["-tick", "100ms", "-batch", "3"]);
  t.after(() => srv.stop());
  for (let i = 0; i < 8; i++) await join(srv.base, "drop");
  const auth = { headers: { Authorization: "Bearer " + ADMIN_KEY } };
  await waitFor("8 admissions in the report", async () => {
    const r = await fetch(`${srv.base}/api/v1/admin/rooms/drop/report`, auth).then((res) => res.json());
    return r.totals.admitted === 8 && r.totals.queueSeconds.count === 8;
  }, { timeout: 20000 });

  const b = await openBrowser({ viewport: { width: 1100, height: 900 } });
  t.after(() => b.close());
  const page = b.page;
  await page.goto(srv.base + "/admin");
  await page.evaluate((k) => sessionStorage.setItem("waitroom:admin-key", k), ADMIN_KEY);
  await page.goto(srv.base + "/admin/report?room=drop");
  await page.locator("#report").waitFor({ state: "visible", timeout: 10000 });
  assert.match(await page.locator("#report-title").textContent(), /drop/);
  const totals = await page.locator("#totals").textContent();
  assert.match(totals, /Arrivals\s*8/);
  assert.match(totals, /Admitted\s*8/);
  assert.equal(await page.locator("#chart-flow svg rect").count() > 0, true);
  assert.equal(await page.locator("#chart-waiting svg path").count(), 1);
  assert.equal(await page.locator("#key-field").isHidden(), true);
  await shot(page, "report.png");

  // A bad range is the server's message, not a broken page.
  await page.locator("#from").fill("2026-12-02T10:00");
  await page.locator("#to").fill("2026-12-01T10:00");
  await page.locator("#report-form button[type=submit]").click();
  await page.locator("#msg").waitFor({ state: "visible", timeout: 10000 });
  assert.match(await page.locator("#msg").textContent(), /after/);
  assert.deepEqual(unexpected(b.errors, [/status of 400/]), []);
});
