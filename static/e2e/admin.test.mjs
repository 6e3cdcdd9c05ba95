// End-to-end tests of the steering dashboard and the live message to the
// waiting, in headless Chromium against the real server (embedded Redis).
import assert from "node:assert/strict";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { test } from "node:test";
import { ADMIN_KEY, build, join, openBrowser, shot, startServer, unexpected, waitFor } from "./harness.mjs";

const T = { timeout: 120000 };
const OPS_KEY = "ops-alice-key-0123456789";

test.before(async () => { await build(); }, { timeout: 180000 });

const text = (page, sel) => page.locator(sel).textContent().then((s) => (s || "").trim());

function tempFile(name, content) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "waitroom-e2e-ops-"));
  const file = path.join(dir, name);
  fs.writeFileSync(file, content);
  return file;
}

async function admin(base, method, p, body) {
  const res = await fetch(`${base}/api/v1/admin${p}`, {
    method,
    headers: { Authorization: "Bearer " + ADMIN_KEY, "Content-Type": "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const raw = await res.text();
  return { status: res.status, body: raw ? JSON.parse(raw) : null };
}

// confirm waits for the confirmation dialog, checks what it says, and
// applies or cancels.
async function confirm(page, { change, effect, apply = true }) {
  await page.locator("#confirm").waitFor({ state: "visible", timeout: 10000 });
  if (change) assert.match(await text(page, "#confirm-changes"), change);
  if (effect) assert.match(await text(page, "#confirm-effects"), effect);
  // The dialog's close event, whose handler writes the outcome, is a task
  // of its own after the dialog hides: wait until it has run.
  await page.evaluate(() => {
    window.confirmClosed = false;
    document.getElementById("confirm").addEventListener("close", () => setTimeout(() => { window.confirmClosed = true; }, 0), { once: true });
  });
  await page.locator(apply ? "#confirm-apply" : "#confirm-cancel").click();
  await page.locator("#confirm").waitFor({ state: "hidden", timeout: 10000 });
  await page.waitForFunction(() => window.confirmClosed === true, null, { timeout: 10000 });
}

test("the dashboard creates rooms, edits settings with a confirmation, shows the audit trail and the rooms file's pins", T, async (t) => {
  const rooms = tempFile("rooms.yaml", "rooms:\n  pinned:\n    batch: 5\n    message: \"From the file.\"\n");
  const keys = tempFile("keys.yaml", `ops-alice: ${OPS_KEY}\n`);
  const srv = await startServer(["-tick", "1s", "-batch", "14", "-rooms", rooms, "-admin-keys", keys]);
  t.after(() => srv.stop());
  const b = await openBrowser({ viewport: { width: 1200, height: 1000 } });
  t.after(() => b.close());
  const { page } = b;

  const resp = await page.goto(`${srv.base}/admin`);
  // The dashboard runs under its own policy, framed by nobody: a violation
  // would be a console error, which the assertions at the end refuse.
  assert.match(resp.headers()["content-security-policy"] || "", /script-src 'self';.*frame-ancestors 'none'/);
  assert.equal(resp.headers()["x-frame-options"], "DENY");
  await page.locator("#key").fill(OPS_KEY);
  await page.locator("#use-key").click();
  await page.locator("#rooms-panel").waitFor({ state: "visible", timeout: 10000 });
  // The room the file declares is listed, marked as the file's.
  await page.locator('#rooms-table tr[data-room="pinned"]').waitFor({ timeout: 10000 });
  assert.match(await text(page, '#rooms-table tr[data-room="pinned"]'), /rooms file/);

  // Create a room.
  await page.locator("#new-room").fill("Bad Name");
  await page.locator("#create").click();
  assert.match(await text(page, "#create-msg"), /lower-case/);
  await page.locator("#new-room").fill("sale");
  await page.locator("#create").click();
  await waitFor("the room to be created", async () => /Room sale created/.test(await text(page, "#create-msg")));
  await waitFor("sale selected", async () => (await page.locator("#room").inputValue()) === "sale");
  await waitFor("its settings", async () => (await page.locator("#s-batch").inputValue()) === "14");

  // Pause it (with a confirmation), then people join.
  await page.locator("#pause").click();
  await confirm(page, { change: /paused: false → true/, effect: /admissions stop/ });
  await waitFor("the pause", async () => /paused/.test(await text(page, "#action-msg")));
  for (let i = 0; i < 40; i++) await join(srv.base, "sale");
  await waitFor("40 waiting in the list", async () => /^40$/.test(await text(page, '#rooms-table tr[data-room="sale"] td:nth-of-type(1)')), { timeout: 15000 });
  assert.match(await text(page, '#rooms-table tr[data-room="sale"]'), /paused/);

  // A cancelled change changes nothing.
  await page.locator("#s-seats").fill("500");
  await page.locator("#review").click();
  await confirm(page, { change: /seats: 0 → 500/, effect: /sold out after 500 more admissions/, apply: false });
  assert.match(await text(page, "#settings-msg"), /Nothing was changed/);
  assert.equal((await admin(srv.base, "GET", "/rooms/sale")).body.seats, 0);

  // A change shows its effect, in the server's words, and is applied.
  await page.locator("#revert").click();
  await page.locator("#s-batch").fill("30");
  await page.locator("#review").click();
  await confirm(page, {
    change: /batch: 14 → 30/,
    effect: /14 per 1 s → 30 per 1 s: about 30 admitted\/s; ETA for the last in line 3 s → 2 s/,
  });
  await waitFor("saved", async () => /Saved/.test(await text(page, "#settings-msg")));
  assert.equal((await admin(srv.base, "GET", "/rooms/sale")).body.batch, 30);

  // Every other setting is editable too.
  await page.locator("#s-strategy").selectOption("max-active");
  await page.locator("#s-maxActive").fill("25");
  await page.locator("#s-seats").fill("1000");
  await page.locator("#s-opensAt").fill("2030-01-01T09:00:00Z");
  await page.locator("#s-tokenTtlSeconds").fill("600");
  await page.locator("#s-tokenMaxSeconds").fill("1800");
  await page.locator("#s-failMode").selectOption("closed");
  await page.locator("#s-joinRate").fill("5");
  await page.locator("#s-joinBurst").fill("20");
  await page.locator("#review").click();
  await confirm(page, { change: /strategy: “fixed” → “max-active”/, effect: /at most 25 hold an entry token at once/ });
  // The message still says Saved from the change before: the settings as
  // stored tell when this save is done.
  const want = ["max-active", 25, 1000, "2030-01-01T09:00:00Z", 600, 1800, "closed", 5, 20];
  let got;
  await waitFor("the settings saved", async () => {
    const s = (await admin(srv.base, "GET", "/rooms/sale")).body;
    got = [s.strategy, s.maxActive, s.seats, s.opensAt, s.tokenTtlSeconds, s.tokenMaxSeconds, s.failMode, s.joinRate, s.joinBurst];
    return JSON.stringify(got) === JSON.stringify(want);
  }).catch(() => {});
  assert.deepEqual(got, want);
  // The store may answer with the new settings before the page has read
  // its own save's reply: the message says Saved once it has.
  await waitFor("the page's save done", async () => /Saved/.test(await text(page, "#settings-msg")));
  await admin(srv.base, "PUT", "/rooms/sale", { opensAt: "" });

  // The page's look too; the footer is stored cleaned.
  await page.locator("#s-brandTitle").fill("Sale of the year");
  await page.locator("#s-brandAccent").fill("#c0392b");
  await page.locator("#s-brandFooter").fill('<b>Shop</b> <img src=x onerror=alert(1)>');
  await page.locator("#review").click();
  await confirm(page, { change: /brandTitle/ });
  await waitFor("saved", async () => /Saved/.test(await text(page, "#settings-msg")));
  const brand = (await admin(srv.base, "GET", "/rooms/sale")).body;
  assert.deepEqual([brand.brandTitle, brand.brandAccent], ["Sale of the year", "#c0392b"]);
  assert.match(brand.brandFooter, /^<b>Shop<\/b>/);
  assert.doesNotMatch(brand.brandFooter, /img|onerror/);

  // A bad value is refused with the field marked.
  await page.locator("#s-message").fill("<b>Sale</b>");
  await page.locator("#review").click();
  await waitFor("the refusal", async () => /message: must be plain text/.test(await text(page, "#settings-msg")));
  assert.equal(await page.locator("#s-message").getAttribute("aria-invalid"), "true");
  assert.equal(await page.locator("#confirm").isVisible(), false);

  // The audit trail names the key's label.
  await waitFor("the audit trail", async () => (await page.locator("#audit-table tbody tr").count()) >= 4, { timeout: 10000 });
  const trail = await text(page, "#audit-table tbody");
  assert.match(trail, /ops-alice/);
  assert.match(trail, /update: batch 14 → 30/);
  assert.match(trail, /pause: paused false → true/);
  assert.match(trail, /create/);
  await shot(page, "admin-steer.png", "admin-steer.png");

  // The file's fields are read-only, with the reason.
  await page.locator('#rooms-table tr[data-room="pinned"] button').click();
  await waitFor("pinned's settings", async () => (await page.locator("#s-batch").inputValue()) === "5");
  assert.equal(await page.locator("#s-batch").getAttribute("readonly"), "");
  assert.equal(await page.locator("#s-message").getAttribute("readonly"), "");
  assert.match(await text(page, "#s-batch-lock"), /Read-only: set by the rooms file \(.*rooms\.yaml, line 3\)/);
  assert.match(await text(page, "#s-message-lock"), /line 4/);
  assert.equal(await page.locator("#s-seats").getAttribute("readonly"), null);
  await shot(page, "admin-pinned.png");
  // And the API refuses them as the dashboard says.
  const r = await admin(srv.base, "PUT", "/rooms/pinned", { batch: 9 });
  assert.equal(r.status, 409);
  assert.equal(r.body.error.code, "set_by_rooms_file");

  assert.deepEqual(unexpected(b.errors, [/status of 40[0-9]/]), [], "console errors");
});

test("a message reaches every waiting page at once over WebSocket, SSE and polling; clearing removes it", T, async (t) => {
  const srv = await startServer(["-tick", "1s", "-batch", "1"]);
  t.after(() => srv.stop());
  const room = "e2e-message";
  assert.equal((await admin(srv.base, "POST", "/rooms", { room, paused: true })).status, 201);
  const b = await openBrowser();
  t.after(() => b.close());
  const pages = {};
  const firstSockets = [];
  b.page.on("websocket", (ws) => firstSockets.push(ws.url()));
  for (const tr of ["ws", "sse", "poll"]) {
    const p = tr === "ws" ? b.page : await b.context.newPage();
    await p.goto(`${srv.base}/?room=${room}&transports=${tr}`);
    await p.locator(`#transport[data-transport="${tr}"]`).waitFor({ timeout: 15000 });
    pages[tr] = p;
  }
  for (const p of Object.values(pages)) {
    const box = p.locator("#room-message");
    assert.equal(await box.getAttribute("role"), "status");
    assert.equal(await box.getAttribute("aria-live"), "polite");
    assert.equal(await text(p, "#room-message"), "");
  }

  const msg = "The sale is delayed by 10 minutes; your place is kept.";
  assert.equal((await admin(srv.base, "PUT", `/rooms/${room}/message`, { text: msg })).status, 200);
  // Push pages show it at once; the polling page at its next poll (a paused
  // room near the front is polled every few seconds).
  await waitFor("the message over WebSocket", async () => (await text(pages.ws, "#room-message")) === msg, { timeout: 5000 });
  await waitFor("the message over SSE", async () => (await text(pages.sse, "#room-message")) === msg, { timeout: 5000 });
  await waitFor("the message by polling", async () => (await text(pages.poll, "#room-message")) === msg, { timeout: 15000 });
  await shot(pages.ws, "page-message.png", "page-message.png");

  // Shown as text: markup sent by mistake is refused by the server, and
  // what is shown is never parsed as HTML.
  assert.equal((await admin(srv.base, "PUT", `/rooms/${room}/message`, { text: "<img src=x onerror=alert(1)>" })).status, 400);
  assert.equal(await pages.ws.locator("#room-message *").count(), 0);

  // A page opened now gets it on connect.
  const late = await b.context.newPage();
  const lateSockets = [];
  late.on("websocket", (ws) => lateSockets.push(ws.url()));
  await late.goto(`${srv.base}/?room=${room}`);
  await waitFor("the message on a new page", async () => (await text(late, "#room-message")) === msg, { timeout: 10000 });
  // A page that shows a message says so when it connects (msg=1), so that
  // an instance that never saw the message cleared still clears it. The
  // join answer shows the message before the WebSocket opens.
  await waitFor("the new page's WebSocket", async () => lateSockets.length > 0, { timeout: 10000 });
  assert.ok(firstSockets.length > 0 && !/[?&]msg=/.test(firstSockets[0]), `first page's WebSocket URL ${firstSockets}`);
  assert.ok(lateSockets.length > 0 && lateSockets.every((u) => /[?&]msg=1(&|$)/.test(u)), `late page's WebSocket URLs ${lateSockets}`);

  assert.equal((await admin(srv.base, "DELETE", `/rooms/${room}/message`)).status, 200);
  for (const [name, p] of Object.entries({ ...pages, late })) {
    await waitFor(`the message cleared (${name})`, async () => (await text(p, "#room-message")) === "", { timeout: 15000 });
  }
  assert.deepEqual(unexpected(b.errors, [/status of 400/]), [], "console errors");
});

test("a read-only key sees the rooms, the stats, the settings and the audit trail, with no control to change them", T, async (t) => {
  const VIEW_KEY = "wall-viewer-key-0123456789";
  const keys = tempFile("keys.yaml", `wall: {key: ${VIEW_KEY}, role: read-only}\n`);
  const srv = await startServer(["-tick", "1s", "-batch", "14", "-admin-keys", keys]);
  t.after(() => srv.stop());
  assert.equal((await admin(srv.base, "POST", "/rooms", { room: "sale", message: "Doors at nine." })).status, 201);
  const b = await openBrowser({ viewport: { width: 1200, height: 1000 } });
  t.after(() => b.close());
  const { page } = b;

  await page.goto(`${srv.base}/admin?room=sale`);
  await page.locator("#key").fill(VIEW_KEY);
  await page.locator("#use-key").click();
  await page.locator("#rooms-panel").waitFor({ state: "visible", timeout: 10000 });
  await waitFor("the role note", async () => /wall \(read-only\)/.test(await text(page, "#role-note")));
  await page.locator('#rooms-table tr[data-room="sale"]').waitFor({ timeout: 10000 });
  await waitFor("its settings", async () => (await page.locator("#s-message").inputValue()) === "Doors at nine.");
  await waitFor("its stats", async () => (await page.locator("#board").isVisible()));

  // No control that changes anything is offered.
  for (const sel of ["#create-form", "#pause", "#resume", "#review", "#revert"]) {
    assert.equal(await page.locator(sel).isVisible(), false, sel + " is shown");
  }
  for (const f of ["batch", "message", "seats"]) {
    assert.equal(await page.locator(`#s-${f}`).getAttribute("readonly"), "", f + " is editable");
  }
  assert.equal(await page.locator("#s-method").isDisabled(), true);
  assert.match(await text(page, "#s-batch-lock"), /Read-only: your key \(wall\) has the read-only role; this needs admin/);
  assert.match(await text(page, "#s-message-lock"), /this needs operator/);
  await waitFor("the audit trail", async () => /create/.test(await text(page, "#audit-table tbody")));
  await shot(page, "admin-read-only.png");

  // The server refuses what the page does not offer.
  const res = await fetch(`${srv.base}/api/v1/admin/rooms/sale/pause`, { method: "POST", headers: { Authorization: "Bearer " + VIEW_KEY } });
  assert.equal(res.status, 403);
  assert.equal((await res.json()).error.code, "forbidden");
  assert.equal((await admin(srv.base, "GET", "/rooms/sale")).body.paused, false);
  assert.deepEqual(unexpected(b.errors, []), [], "console errors");
});
