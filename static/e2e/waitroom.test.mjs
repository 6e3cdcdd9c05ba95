// End-to-end tests of the waiting-room page and the dashboard in headless
// Chromium against the real server (embedded Redis). Run from the module
// root: node --test static/e2e/
import assert from "node:assert/strict";
import { test } from "node:test";
import {
  ADMIN_KEY, build, join, openBrowser, refusedTransportNoise, shot, startServer, unexpected, waitFor,
} from "./harness.mjs";

const T = { timeout: 90000 };

test.before(async () => { await build(); }, { timeout: 180000 });

// text returns the trimmed text of the element with id.
const text = (page, id) => page.locator("#" + id).textContent().then((s) => (s || "").trim());

// admittedAndOrder waits for the page to offer the order, places it from
// the keyboard and waits for the confirmation.
async function admittedAndOrder(page) {
  await page.waitForFunction(() => {
    const b = document.getElementById("place-order");
    return b && !b.disabled;
  }, null, { timeout: 15000 });
  assert.equal(await text(page, "headline"), "It's your turn");
  // The one action gets focus when it becomes usable: Enter places the order.
  assert.equal(await page.evaluate(() => document.activeElement && document.activeElement.id), "place-order");
  await page.keyboard.press("Enter");
  await page.waitForFunction(() => document.getElementById("headline").textContent === "Order placed", null, { timeout: 15000 });
  assert.match(await text(page, "order-msg"), /order is confirmed/i);
}

test("a visitor is admitted over WebSocket and places an order", T, async (t) => {
  const srv = await startServer(["-tick", "100ms", "-batch", "1"]);
  t.after(() => srv.stop());
  const b = await openBrowser();
  t.after(() => b.close());
  const { page } = b;

  const resp = await page.goto(`${srv.base}/?room=e2e-ws`);
  // The page runs under its own policy: a violation would be a console
  // error, which the last assertion refuses.
  assert.match(resp.headers()["content-security-policy"] || "", /script-src 'self';/);
  await page.locator('#transport[data-transport="ws"]').waitFor({ timeout: 10000 });
  assert.equal(await text(page, "transport"), "Live via WebSocket");
  await page.waitForFunction(() => !!document.getElementById("place-order"), null, { timeout: 15000 });
  await shot(page, "ws-admitted.png");
  await admittedAndOrder(page);
  await shot(page, "ws-ordered.png");
  assert.deepEqual(b.errors, [], "console errors");
});

test("with -no-ws the page works over SSE", T, async (t) => {
  const srv = await startServer(["-tick", "100ms", "-batch", "1", "-no-ws"]);
  t.after(() => srv.stop());
  const b = await openBrowser();
  t.after(() => b.close());
  const { page } = b;

  await page.goto(`${srv.base}/?room=e2e-sse`);
  await page.locator('#transport[data-transport="sse"]').waitFor({ timeout: 10000 });
  assert.equal(await text(page, "transport"), "Live via SSE");
  await admittedAndOrder(page);
  await shot(page, "sse-ordered.png");
  assert.deepEqual(unexpected(b.errors, refusedTransportNoise), [], "console errors");
});

test("with -no-ws -no-sse the page works by polling", T, async (t) => {
  const srv = await startServer(["-tick", "100ms", "-batch", "1", "-no-ws", "-no-sse"]);
  t.after(() => srv.stop());
  const b = await openBrowser();
  t.after(() => b.close());
  const { page } = b;

  await page.goto(`${srv.base}/?room=e2e-poll`);
  await page.locator('#transport[data-transport="poll"]').waitFor({ timeout: 10000 });
  assert.equal(await text(page, "transport"), "Live via polling");
  await admittedAndOrder(page);
  await shot(page, "poll-ordered.png");
  assert.deepEqual(unexpected(b.errors, refusedTransportNoise), [], "console errors");
});

test("a reload keeps the place in line, with and without the cookie", T, async (t) => {
  // Slow admission: 2 visitors every 2 s, 40 joined ahead from node.
  const srv = await startServer(["-tick", "2s", "-batch", "2"]);
  t.after(() => srv.stop());
  const room = "e2e-reload";
  for (let i = 0; i < 40; i++) await join(srv.base, room);
  const b = await openBrowser();
  t.after(() => b.close());
  const { page } = b;

  const position = async () => {
    await page.waitForFunction(() => /^\d[\d,]*$/.test(document.getElementById("position").textContent), null, { timeout: 10000 });
    return Number((await text(page, "position")).replace(/,/g, ""));
  };
  await page.goto(`${srv.base}/?room=${room}`);
  const first = await position();
  assert.ok(first > 20 && first <= 41, `first position ${first}`);
  assert.match(await text(page, "detail"), /^You are \d+(st|nd|rd|th) in line\.$/);
  const live = page.locator("#announce");
  assert.equal(await live.getAttribute("aria-live"), "polite");
  assert.match(await live.textContent(), /in line/);
  const credential = await page.evaluate(() => window.waitroomPage.client.visitor());

  await page.reload();
  const second = await position();
  assert.ok(second <= first, `after reload: ${second} > ${first}`);
  assert.equal(await page.evaluate(() => window.waitroomPage.client.visitor()), credential);

  // Without the cookie the credential kept in localStorage still holds the place.
  await b.context.clearCookies();
  await page.reload();
  const third = await position();
  assert.ok(third <= second, `after reload without cookie: ${third} > ${second}`);
  assert.equal(await page.evaluate(() => window.waitroomPage.client.visitor()), credential);

  // The progress bar moves once the line moves.
  await page.waitForFunction(() => Number(document.getElementById("bar").getAttribute("aria-valuenow")) > 0, null, { timeout: 15000 });
  await page.locator('#transport[data-transport="ws"]').waitFor();
  await shot(page, "reload-waiting.png", "page.png");

  // The same place on a phone, and in dark mode.
  await page.setViewportSize({ width: 360, height: 740 });
  const width = await page.evaluate(() => document.documentElement.scrollWidth);
  assert.ok(width <= 360, `page is ${width}px wide on a 360px screen`);
  // The header shows the room's name whole, not cut to "e2e-r…".
  const name = await page.evaluate(() => {
    const n = document.getElementById("room-name");
    return { text: n.textContent, scroll: n.scrollWidth, client: n.clientWidth };
  });
  assert.ok(name.text.endsWith(room), `room name ${name.text}`);
  assert.ok(name.scroll <= name.client, `the room name needs ${name.scroll}px and has ${name.client}px on a 360px screen`);
  await shot(page, "reload-phone.png", "page-phone.png");
  await page.emulateMedia({ colorScheme: "dark" });
  await page.setViewportSize({ width: 900, height: 760 });
  await shot(page, "reload-dark.png", "page-dark.png");
  assert.deepEqual(b.errors, [], "console errors");
});

test("the dashboard shows the numbers moving", T, async (t) => {
  const srv = await startServer(["-tick", "1s", "-batch", "2"]);
  t.after(() => srv.stop());
  const room = "e2e-admin";
  for (let i = 0; i < 30; i++) await join(srv.base, room);
  const b = await openBrowser({ viewport: { width: 1200, height: 900 } });
  t.after(() => b.close());
  const { page } = b;
  // A visitor with the page open, so a connection shows.
  const visitor = await b.context.newPage();
  await visitor.goto(`${srv.base}/?room=${room}`);
  await visitor.locator('#transport[data-transport="ws"]').waitFor({ timeout: 10000 });

  await page.goto(`${srv.base}/admin`);
  // A wrong key is refused with a clear message.
  await page.locator("#key").fill("not-the-admin-key-000");
  await page.keyboard.press("Enter");
  await page.locator("#msg").waitFor({ state: "visible", timeout: 10000 });
  assert.match(await text(page, "msg"), /refused/);

  await page.locator("#key").fill(ADMIN_KEY);
  await page.locator("#use-key").click();
  await page.locator("#board").waitFor({ state: "visible", timeout: 10000 });
  assert.equal(await page.locator("#room").inputValue(), room);
  assert.equal(await page.evaluate(() => sessionStorage.getItem("waitroom:admin-key")), "e2e-admin-key-0123456789");

  const num = (id) => text(page, id).then((s) => Number(s.replace(/[^\d.]/g, "")));
  const waiting0 = await waitFor("a waiting count", async () => { const n = await num("v-waiting"); return n > 0 && n; });
  // Admission goes on: the waiting count falls and the rate shows.
  await waitFor("the waiting count to fall", async () => (await num("v-waiting")) < waiting0, { timeout: 15000 });
  await waitFor("a positive admitted/s", async () => (await num("v-rate")) > 0, { timeout: 15000 });
  // New joins push the count up again.
  const before = await num("v-waiting");
  for (let i = 0; i < 20; i++) await join(srv.base, room);
  await waitFor("the waiting count to rise", async () => (await num("v-waiting")) > before, { timeout: 15000 });
  await waitFor("a connection", async () => (await num("v-conns")) >= 1, { timeout: 15000 });

  // The chart has drawn several seconds of both series.
  await page.waitForFunction(() => {
    const a = document.querySelector("#chart .series-a"), r = document.querySelector("#chart .series-b");
    return a && r && (a.getAttribute("d").match(/L/g) || []).length >= 8;
  }, null, { timeout: 20000 });

  await shot(page, "admin.png", "admin.png");

  // Pause stops admission and the dashboard shows it; resume starts it again.
  // Pause and resume ask for confirmation with their effect first.
  await page.locator("#pause").click();
  await page.locator("#confirm-apply").click();
  await waitFor("the pause to show", async () => /paused/.test(await text(page, "n-waiting")), { timeout: 10000 });
  assert.match(await text(page, "action-msg"), /Admission is paused/);
  // The rooms table's admitted/s falls to 0 too (it showed the rate the
  // ETAs use, which a pause leaves standing).
  const tableRate = () => page.locator(`#rooms-table tr[data-room="${room}"] td:nth-of-type(2)`).textContent();
  await waitFor("the paused room's admitted/s in the table to read 0.0", async () => (await tableRate()) === "0.0", { timeout: 20000 });
  await shot(page, "admin-paused.png");
  await page.locator("#resume").click();
  await page.locator("#confirm-apply").click();
  // Resumed: the paused badge gives way to the line's note (who is present
  // and away, when presence is on).
  await waitFor("the resume to show", async () => /^(in line now|[\d,]+ present · [\d,]+ away)$/.test(await text(page, "n-waiting")), { timeout: 10000 });
  assert.match(await text(page, "action-msg"), /Admission resumed/);

  // A room that is not the one shown: its admitted/s is measured between
  // two room lists, and reads 0.0 once it is paused.
  const side = "e2e-side";
  for (let i = 0; i < 40; i++) await join(srv.base, side);
  const sideRate = () => page.locator(`#rooms-table tr[data-room="${side}"] td:nth-of-type(2)`).textContent().then((s) => Number(s));
  await waitFor("the other room's admitted/s above 0", async () => (await sideRate()) > 0, { timeout: 30000 });
  const paused = await fetch(`${srv.base}/api/v1/admin/rooms/${side}/pause`, { method: "POST", headers: { Authorization: "Bearer " + ADMIN_KEY } });
  assert.equal(paused.status, 200);
  await waitFor("the paused other room's admitted/s to read 0.0", async () => (await sideRate()) === 0, { timeout: 30000 });
  assert.deepEqual(unexpected(b.errors, [/status of 401/, /status of 404/]), [], "console errors");
});

test("leaving and joining again; an unreachable server is retried", T, async (t) => {
  const flags = ["-tick", "1s", "-batch", "1"];
  let srv = await startServer(flags);
  t.after(() => srv.stop());
  const room = "e2e-retry";
  for (let i = 0; i < 10; i++) await join(srv.base, room);
  const b = await openBrowser();
  t.after(() => b.close());
  const { page } = b;
  await page.goto(`${srv.base}/?room=${room}`);
  await page.locator('#transport[data-transport="ws"]').waitFor({ timeout: 10000 });

  // Leaving takes two presses (no accidental loss of the place), then
  // "Join again" is offered and works, from the keyboard.
  await page.locator("#leave").click();
  await page.locator("#leave").click();
  await page.waitForFunction(() => document.getElementById("headline").textContent === "You left the queue");
  await page.locator("#rejoin").focus();
  await page.keyboard.press("Enter");
  await page.waitForFunction(() => document.getElementById("headline").textContent === "You're in line", null, { timeout: 10000 });
  await page.locator('#transport[data-transport="ws"]').waitFor({ timeout: 10000 });

  // The server goes away: the page says so and keeps trying.
  await srv.stop();
  await page.locator('#transport[data-transport="offline"]').waitFor({ timeout: 15000 });
  await page.locator("#conn-msg").waitFor({ state: "visible" });
  assert.match(await text(page, "conn-msg"), /can't reach the waiting room/);
  await shot(page, "unreachable.png");

  // It comes back (a fresh server: new secret, empty queue): the page
  // recovers on its own with a new place.
  srv = await startServer(flags, { port: srv.port });
  await page.locator('#transport[data-transport="ws"]').waitFor({ timeout: 40000 });
  await page.waitForFunction(() => ["You're in line", "You're next", "It's your turn"].includes(document.getElementById("headline").textContent), null, { timeout: 10000 });
  assert.equal(await page.locator("#conn-msg").isHidden(), true);
  assert.deepEqual(unexpected(b.errors, [/WebSocket connection to .* failed/, /Failed to load resource/]), [], "console errors");
});

test("after a 425 the page retries at waitMs, not at Retry-After", T, async (t) => {
  const srv = await startServer(["-tick", "100ms", "-batch", "1"]);
  t.after(() => srv.stop());
  const b = await openBrowser();
  t.after(() => b.close());
  const { page } = b;

  // The first order attempt is answered 425 with waitMs 100 and a
  // Retry-After of 30 s: a page that waited Retry-After would not place
  // the order within the test's deadline.
  let early = 0;
  await page.route("**/orders", async (route) => {
    if (early++ > 0) return route.continue();
    await route.fulfill({
      status: 425, contentType: "application/json", headers: { "Retry-After": "30" },
      body: JSON.stringify({ error: { code: "too_early", message: "the entry token is valid in 100 ms", waitMs: 100 } }),
    });
  });
  await page.goto(`${srv.base}/?room=e2e-early`);
  await page.waitForFunction(() => {
    const b = document.getElementById("place-order");
    return b && !b.disabled;
  }, null, { timeout: 15000 });
  await page.locator("#place-order").click();
  await page.waitForFunction(() => document.getElementById("headline").textContent === "Order placed", null, { timeout: 10000 });
  assert.equal(early, 2, "one 425, then the real order");
});

test("a room no operator made says it does not exist", T, async (t) => {
  const srv = await startServer(["-open-rooms=false"]);
  t.after(() => srv.stop());
  const res = await fetch(`${srv.base}/api/v1/admin/rooms/made`, {
    method: "PUT", headers: { "Authorization": `Bearer ${ADMIN_KEY}`, "Content-Type": "application/json" }, body: "{}",
  });
  assert.equal(res.status, 200);
  const b = await openBrowser();
  t.after(() => b.close());
  const { page } = b;

  await page.goto(`${srv.base}/?room=nobody-made-this`);
  await page.waitForFunction(() => document.getElementById("headline").textContent === "This waiting room does not exist", null, { timeout: 15000 });
  assert.match(await text(page, "detail"), /no waiting room called/);
  await shot(page, "room-not-found.png");

  // The room an operator made works: in line, or (the tick is quick)
  // already admitted.
  await page.goto(`${srv.base}/?room=made`);
  await page.waitForFunction(() => /in line|next|your turn/i.test(document.getElementById("headline").textContent), null, { timeout: 15000 });
  assert.deepEqual(unexpected(b.errors, [/404/]), [], "console errors");
});

test("without -demo an admitted visitor sees the admission and its hold time, and no order button", T, async (t) => {
  const srv = await startServer(["-demo=false", "-tick", "100ms", "-batch", "1"]);
  t.after(() => srv.stop());
  const b = await openBrowser();
  t.after(() => b.close());
  const { page } = b;

  await page.goto(`${srv.base}/?room=e2e-nodemo`);
  await page.waitForFunction(() => document.getElementById("detail").textContent === "Your entry is ready.", null, { timeout: 15000 });
  assert.equal(await text(page, "headline"), "It's your turn");
  assert.match(await text(page, "sub"), /held until/);
  assert.equal(await page.locator("#place-order").count(), 0, "an order button");
  assert.equal(await page.locator("#actions button").count(), 0, "an action button");
  const res = await fetch(`${srv.base}/api/v1/rooms/e2e-nodemo/orders`, { method: "POST", body: "{}" });
  assert.equal(res.status, 404);
  await shot(page, "nodemo-admitted.png");
  assert.deepEqual(b.errors, [], "console errors");
});
