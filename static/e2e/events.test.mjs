// End-to-end test of the dashboard's scheduled events (admin-events.js),
// in headless Chromium against the real server (embedded Redis).
import assert from "node:assert/strict";
import { test } from "node:test";
import { ADMIN_KEY, build, openBrowser, startServer, unexpected, waitFor } from "./harness.mjs";

const T = { timeout: 120000 };

test.before(async () => { await build(); }, { timeout: 180000 });

const text = (page, sel) => page.locator(sel).textContent().then((s) => (s || "").trim());

async function admin(base, method, p, body) {
  const res = await fetch(`${base}/api/v1/admin${p}`, {
    method,
    headers: { Authorization: "Bearer " + ADMIN_KEY, "Content-Type": "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const raw = await res.text();
  return { status: res.status, body: raw ? JSON.parse(raw) : null };
}

// local is a time as a datetime-local input takes it, in the browser's zone.
function local(d) {
  return new Date(d.getTime() - d.getTimezoneOffset() * 60000).toISOString().slice(0, 19);
}

test("the dashboard schedules, edits and deletes an event through the confirmation, on a timeline", T, async (t) => {
  const srv = await startServer([]);
  t.after(() => srv.stop());
  assert.equal((await admin(srv.base, "POST", "/rooms", { room: "sale", batch: 10 })).status, 201);
  const b = await openBrowser({ viewport: { width: 1200, height: 1000 } });
  t.after(() => b.close());
  const { page } = b;
  page.on("dialog", (d) => d.accept());
  await page.goto(`${srv.base}/admin?room=sale`);
  await page.locator("#key").fill(ADMIN_KEY);
  await page.locator("#use-key").click();
  await page.locator("#events-panel").waitFor({ state: "visible", timeout: 10000 });
  await waitFor("no events yet", async () => /No events scheduled/.test(await text(page, "#events-table")));

  const start = new Date(Date.now() + 3600e3), end = new Date(Date.now() + 7200e3);
  await page.locator("#ev-name").fill("launch");
  await page.locator("#ev-start").fill(local(start));
  await page.locator("#ev-end").fill(local(end));
  await page.locator("#ev-atend").selectOption("close");
  await page.locator("#ev-settings").fill('{"batch": 50, "message": "Launch day."}');
  await page.locator("#ev-review").click();
  await page.locator("#confirm").waitFor({ state: "visible", timeout: 10000 });
  assert.match(await text(page, "#confirm-changes"), /batch: 10 → 50 while the event runs/);
  assert.match(await text(page, "#confirm-effects"), /told the room is closed/);
  await page.locator("#confirm-apply").click();
  await waitFor("the event saved", async () => /Saved launch/.test(await text(page, "#events-msg")));
  await waitFor("the event listed", async () => /launch\s*scheduled/.test(await text(page, "#events-table")));
  assert.equal(await page.locator("#events-timeline rect.ev-scheduled").count(), 1);
  // What axe asks of the signed-in dashboard: a level-one heading that is
  // not hidden with the sign-in form, and no table header without text
  // (the events table's action column).
  const a11y = await page.evaluate(() => ({
    h1: [...document.querySelectorAll("h1")].filter((h) => !h.closest("[hidden]")).map((h) => h.textContent.trim()),
    emptyHeaders: [...document.querySelectorAll("th")].filter((th) => !th.textContent.trim()).map((th) => th.closest("table").id),
  }));
  assert.deepEqual(a11y, { h1: ["waitroom dashboard"], emptyHeaders: [] });
  let got = (await admin(srv.base, "GET", "/rooms/sale/events/launch")).body;
  assert.deepEqual([got.atEnd, got.settings.batch, got.startsAt], ["close", 50, new Date(Math.floor(start / 1000) * 1000).toISOString().replace(".000Z", "Z")]);

  // An overlapping one is refused with the server's words.
  await page.locator("#ev-name").fill("encore");
  await page.locator("#ev-start").fill(local(new Date(start.getTime() + 60e3)));
  await page.locator("#ev-end").fill(local(end));
  await page.locator("#ev-settings").fill("{}");
  await page.locator("#ev-review").click();
  await page.locator("#confirm").waitFor({ state: "visible", timeout: 10000 });
  await page.locator("#confirm-apply").click();
  await waitFor("the overlap refused", async () => /overlaps event launch.*event_overlap/.test(await text(page, "#events-msg")));

  // Edit: later end, kept waiting.
  await page.locator("#events-table button", { hasText: "Edit" }).click();
  assert.equal(await page.locator("#ev-name").inputValue(), "launch");
  await page.locator("#ev-end").fill(local(new Date(end.getTime() + 1800e3)));
  await page.locator("#ev-atend").selectOption("keep");
  await page.locator("#ev-review").click();
  await page.locator("#confirm").waitFor({ state: "visible", timeout: 10000 });
  await page.locator("#confirm-apply").click();
  await waitFor("the change saved", async () => /Saved launch/.test(await text(page, "#events-msg")));
  got = (await admin(srv.base, "GET", "/rooms/sale/events/launch")).body;
  assert.equal(got.atEnd, "keep");

  await page.locator("#events-table button", { hasText: "Delete" }).click();
  await waitFor("the event deleted", async () => /Deleted launch/.test(await text(page, "#events-msg")));
  assert.equal((await admin(srv.base, "GET", "/rooms/sale/events")).body.events.length, 0);
  const audit = (await admin(srv.base, "GET", "/rooms/sale/audit")).body.entries.map((e) => e.action);
  assert.deepEqual(audit.slice(0, 3), ["event-delete", "event-update", "event-create"]);
  assert.deepEqual(unexpected(b.errors, [/status of 409/]), [], "console errors");
});
