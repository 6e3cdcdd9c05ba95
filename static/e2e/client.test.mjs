// End-to-end tests of waitroom.js and the page under real conditions: more
// tabs than the server allows, silence, offline, a Redis outage, an
// embedding site, a paused room for screen readers, and the smaller
// retry rules. Run from the module root: node --test static/e2e/
import assert from "node:assert/strict";
import { test } from "node:test";
import {
  ADMIN_KEY, build, join, openBrowser, refusedTransportNoise, serveFiles, startRedis, startServer, unexpected, waitFor,
} from "./harness.mjs";

const T = { timeout: 120000 };

test.before(async () => { await build(); }, { timeout: 180000 });

const text = (page, id) => page.locator("#" + id).textContent().then((s) => (s || "").trim());
const transportIs = (page, key, timeout = 15000) => page.locator(`#transport[data-transport="${key}"]`).waitFor({ timeout });
const position = async (page) => {
  await page.waitForFunction(() => /^\d[\d,]*$/.test(document.getElementById("position").textContent), null, { timeout: 10000 });
  return Number((await text(page, "position")).replace(/,/g, ""));
};

async function admin(base, method, path, body) {
  const res = await fetch(`${base}/api/v1/admin${path}`, {
    method, headers: { "Authorization": `Bearer ${ADMIN_KEY}`, "Content-Type": "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  assert.ok(res.ok, `${method} ${path}: ${res.status}`);
}

// liveRegionChanges counts changes inside every live region and alert
// from now on; read it with page.evaluate(() => window.liveChanges).
async function countLiveRegionChanges(page) {
  await page.evaluate(() => {
    window.liveChanges = 0;
    const obs = new MutationObserver((ms) => { window.liveChanges += ms.length; });
    document.querySelectorAll('[aria-live], [role="alert"], [role="status"], [role="log"]').forEach((n) => {
      obs.observe(n, { childList: true, characterData: true, subtree: true });
    });
  });
}

test("a tab beyond the per-visitor limit polls, says another tab is open and keeps the place", T, async (t) => {
  const srv = await startServer(["-max-conns-per-visitor", "1", "-tick", "1s", "-batch", "1"]);
  t.after(() => srv.stop());
  const room = "e2e-tabs";
  for (let i = 0; i < 15; i++) await join(srv.base, room);
  const b = await openBrowser();
  t.after(() => b.close());
  const first = b.page;
  await first.goto(`${srv.base}/?room=${room}`);
  await transportIs(first, "ws");

  const second = await b.context.newPage(); // same browser: the same visitor
  await second.goto(`${srv.base}/?room=${room}`);
  await transportIs(second, "poll");
  assert.match(await text(second, "transport"), /another tab/);
  await second.locator("#conn-msg").waitFor({ state: "visible" });
  assert.match(await text(second, "conn-msg"), /open in another tab.*keep your place/);
  assert.match(await text(second, "announce"), /open in another tab/);
  // The same place in both tabs (the line moves one a second: allow that).
  const [a, c] = [await position(first), await position(second)];
  assert.ok(Math.abs(a - c) <= 2, `positions ${a} and ${c}`);
  assert.equal(await first.evaluate(() => window.waitroomPage.client.visitor()), await second.evaluate(() => window.waitroomPage.client.visitor()));
  // It stays there rather than looping through "Connecting…".
  await new Promise((r) => setTimeout(r, 1500)); // a window in which a retry loop would show
  assert.equal(await second.locator("#transport").getAttribute("data-transport"), "poll");

  // Once the other tab is gone, the polling tab goes live again by itself.
  await first.close();
  await transportIs(second, "ws", 30000);
  assert.equal(await second.locator("#conn-msg").isHidden(), true);
  assert.deepEqual(unexpected(b.errors, refusedTransportNoise), [], "console errors");
});

test("a connection that goes silent, or a device that goes offline, is noticed and recovered", T, async (t) => {
  // A heartbeat after 300 ms without a message: the server promises
  // 500 ms of silence at most (the interval, a flush step to go out with
  // others and one to be served), the page gives up on a connection after
  // 1 s.
  const srv = await startServer(["-ws-heartbeat", "300ms", "-tick", "1s", "-batch", "1"]);
  let stopped = false;
  t.after(async () => { if (stopped) process.kill(srv.pid, "SIGCONT"); await srv.stop(); });
  const room = "e2e-silence";
  for (let i = 0; i < 30; i++) await join(srv.base, room);
  const b = await openBrowser();
  t.after(() => b.close());
  const { page } = b;
  await page.goto(`${srv.base}/?room=${room}`);
  await transportIs(page, "ws");

  // The server freezes: its socket stays open, nothing comes.
  process.kill(srv.pid, "SIGSTOP");
  stopped = true;
  await transportIs(page, "offline", 10000);
  process.kill(srv.pid, "SIGCONT");
  stopped = false;
  await transportIs(page, "ws", 30000);
  assert.equal(await page.locator("#conn-msg").isHidden(), true);

  // Offline: noticed at once (not after the silence), and the countdown
  // is no live region: the live regions change once or twice, not every
  // second.
  await countLiveRegionChanges(page);
  await b.context.setOffline(true);
  await transportIs(page, "offline", 3000);
  await page.locator("#conn-msg").waitFor({ state: "visible" });
  assert.match(await text(page, "conn-msg"), /can't reach the waiting room.*keep your place/);
  const live = await page.evaluate(() => [...document.querySelectorAll('[aria-live], [role="alert"]')].map((n) => n.id));
  assert.ok(!live.includes("conn-msg"), `#conn-msg is a live region: ${live}`);
  assert.match(await text(page, "announce"), /Connection lost/);
  await new Promise((r) => setTimeout(r, 4000)); // four seconds of countdown
  const changes = await page.evaluate(() => window.liveChanges);
  assert.ok(changes <= 3, `${changes} changes in live regions while offline`);

  await b.context.setOffline(false);
  await transportIs(page, "ws", 15000);
  await waitFor("the page to say it is connected again", async () => /Connected again/.test(await text(page, "announce")), { timeout: 5000 });
  assert.deepEqual(unexpected(b.errors, [...refusedTransportNoise, /ERR_INTERNET_DISCONNECTED/, /Failed to load resource/]), [], "console errors");
});

test("a hidden tab catches up at once when shown", T, async (t) => {
  const srv = await startServer(["-no-ws", "-no-sse", "-tick", "100ms", "-batch", "1"]);
  t.after(() => srv.stop());
  const room = "e2e-hidden";
  await admin(srv.base, "PUT", `/rooms/${room}`, { paused: true, seats: 1 });
  for (let i = 0; i < 2; i++) await join(srv.base, room);
  const b = await openBrowser();
  t.after(() => b.close());
  const { page } = b;
  await page.goto(`${srv.base}/?room=${room}`);
  await transportIs(page, "poll");
  // The one seat goes to the first in line: sold out, and a sold-out page
  // asks again only every 15 s or more.
  await admin(srv.base, "POST", `/rooms/${room}/resume`);
  await page.waitForFunction(() => document.getElementById("headline").textContent === "Sold out", null, { timeout: 15000 });
  // More seats: the line moves, but the page would hear it only at its
  // next poll. Showing the tab again asks at once.
  await admin(srv.base, "PUT", `/rooms/${room}`, { seats: 10 });
  const polls = [];
  page.on("request", (r) => { if (r.url().includes("/status")) polls.push(Date.now()); });
  const shownAt = Date.now();
  await page.evaluate(() => {
    Object.defineProperty(document, "visibilityState", { configurable: true, get: () => "visible" });
    document.dispatchEvent(new Event("visibilitychange"));
  });
  await page.waitForFunction(() => document.getElementById("headline").textContent !== "Sold out", null, { timeout: 5000 });
  assert.ok(polls.length > 0 && polls[0] - shownAt < 1000, `first poll ${polls[0] - shownAt} ms after showing`);
});

test("a Redis outage shows positions paused with the place kept, and clears", T, async (t) => {
  const redis = await startRedis();
  t.after(() => redis.stop());
  const srv = await startServer(["-redis", redis.url, "-secret", "e2e-secret-0123456789", "-tick", "1s", "-batch", "1"]);
  t.after(() => srv.stop());
  const room = "e2e-degraded";
  await admin(srv.base, "PUT", `/rooms/${room}`, { paused: true });
  for (let i = 0; i < 5; i++) await join(srv.base, room);
  const b = await openBrowser();
  t.after(() => b.close());
  const { page } = b;
  await page.goto(`${srv.base}/?room=${room}`);
  await transportIs(page, "ws");
  const pos = await position(page);

  await redis.stop();
  await page.locator("#conn-msg").waitFor({ state: "visible", timeout: 15000 });
  assert.match(await text(page, "conn-msg"), /Positions are paused.*Your place is kept/);
  assert.match(await text(page, "eta"), /paused/);
  assert.equal(await position(page), pos);
  assert.match(await text(page, "announce"), /Positions paused, your place is kept/);
  // The page does not call it offline: the server answers.
  assert.notEqual(await page.locator("#transport").getAttribute("data-transport"), "offline");

  const again = await startRedis({ port: redis.port });
  t.after(() => again.stop());
  await page.locator("#conn-msg").waitFor({ state: "hidden", timeout: 20000 });
  assert.deepEqual(unexpected(b.errors, refusedTransportNoise), [], "console errors");
});

test("status changes are announced at once; positions stay throttled", T, async (t) => {
  const srv = await startServer(["-tick", "1s", "-batch", "1"]);
  t.after(() => srv.stop());
  const room = "e2e-announce";
  for (let i = 0; i < 40; i++) await join(srv.base, room);
  const b = await openBrowser();
  t.after(() => b.close());
  const { page } = b;
  await page.goto(`${srv.base}/?room=${room}`);
  await transportIs(page, "ws");
  await waitFor("the first announcement", async () => /in line/.test(await text(page, "announce")));
  const first = await text(page, "announce");

  const pausedAt = Date.now();
  await admin(srv.base, "POST", `/rooms/${room}/pause`);
  await waitFor("the pause to be announced", async () => /paused/.test(await text(page, "announce")), { timeout: 5000 });
  assert.ok(Date.now() - pausedAt < 5000);
  await admin(srv.base, "POST", `/rooms/${room}/resume`);
  await waitFor("the resume to be announced", async () => /Estimated wait/.test(await text(page, "announce")), { timeout: 5000 });
  // The line moves one a second from here; the announced place does not
  // change with every step.
  await countLiveRegionChanges(page);
  await new Promise((r) => setTimeout(r, 5000)); // five admissions
  assert.equal(await page.evaluate(() => window.liveChanges), 0, "the position was re-announced within 15 s");
  assert.notEqual(first, "");
});

test("join waits out Retry-After; a 5xx is trouble, not offline; falling back asks /status once", T, async (t) => {
  const srv = await startServer(["-no-ws", "-no-sse", "-tick", "100ms", "-batch", "1"]);
  t.after(() => srv.stop());
  const room = "e2e-retry-rules";
  await admin(srv.base, "PUT", `/rooms/${room}`, { paused: true });
  const b = await openBrowser();
  t.after(() => b.close());
  const { page } = b;
  const joins = [];
  const statuses = [];
  page.on("request", (r) => {
    if (r.url().includes("/join")) joins.push(Date.now());
    if (r.url().includes("/status")) statuses.push(Date.now());
  });
  let refused = 0;
  await page.route("**/join", async (route) => {
    if (refused++ > 0) return route.continue();
    await route.fulfill({
      status: 503, contentType: "application/json", headers: { "Retry-After": "2" },
      body: JSON.stringify({ error: { code: "unavailable", message: "the queue store is unreachable; retry shortly" } }),
    });
  });
  await page.goto(`${srv.base}/?room=${room}`);
  // While the join is refused, the page says the room is in trouble, not
  // that it cannot be reached.
  await page.locator("#conn-msg").waitFor({ state: "visible", timeout: 5000 });
  assert.match(await text(page, "conn-msg"), /having trouble.*Trying again in/);
  await transportIs(page, "poll");
  assert.ok(joins.length >= 2 && joins[1] - joins[0] >= 1900, `joins ${joins.map((x) => x - joins[0])} ms: Retry-After 2 s`);

  // Both push transports were refused and probed once: the polls that
  // follow keep to nextPollMs (500 ms at the front).
  await new Promise((r) => setTimeout(r, 2000)); // a few polls
  const gaps = statuses.slice(1).map((x, i) => x - statuses[i]);
  assert.ok(gaps.length >= 2, `${statuses.length} status requests`);
  assert.ok(Math.min(...gaps) >= 300, `status requests ${gaps} ms apart`);

  // The store fails: polls answer 503. The page says positions are paused,
  // not offline.
  await page.route("**/status", (route) => route.fulfill({
    status: 503, contentType: "application/json", headers: { "Retry-After": "1" },
    body: JSON.stringify({ error: { code: "unavailable", message: "the queue store is unreachable; retry shortly" } }),
  }));
  await page.locator("#conn-msg").waitFor({ state: "visible", timeout: 10000 });
  await waitFor("the degraded notice", async () => /Positions are paused/.test(await text(page, "conn-msg")), { timeout: 10000 });
  assert.notEqual(await page.locator("#transport").getAttribute("data-transport"), "offline");
  await page.unroute("**/status");
  await page.locator("#conn-msg").waitFor({ state: "hidden", timeout: 15000 });
  assert.deepEqual(unexpected(b.errors, refusedTransportNoise), [], "console errors");
});

test("the page's 100 ms ticker stops once the order is placed or the visitor left", T, async (t) => {
  const srv = await startServer(["-tick", "100ms", "-batch", "1"]);
  t.after(() => srv.stop());
  const b = await openBrowser();
  t.after(() => b.close());
  const { page } = b;
  await page.addInitScript(() => {
    const set = window.setInterval, clear = window.clearInterval;
    window.fastIntervals = new Set();
    window.setInterval = function (fn, ms, ...rest) {
      const id = set.call(window, fn, ms, ...rest);
      if (ms <= 100) window.fastIntervals.add(id);
      return id;
    };
    window.clearInterval = function (id) { window.fastIntervals.delete(id); return clear.call(window, id); };
  });
  await page.goto(`${srv.base}/?room=e2e-ticker`);
  await page.waitForFunction(() => { const el = document.getElementById("place-order"); return el && !el.disabled; }, null, { timeout: 15000 });
  assert.equal(await page.evaluate(() => window.fastIntervals.size), 1, "one ticker while in the queue");
  await page.locator("#place-order").click();
  await page.waitForFunction(() => document.getElementById("headline").textContent === "Order placed", null, { timeout: 15000 });
  assert.equal(await page.evaluate(() => window.fastIntervals.size), 0, "the ticker still runs after the order");

  // Left the queue (a paused room: the visitor stays in line): no ticker
  // either; joining again starts one.
  await admin(srv.base, "PUT", "/rooms/e2e-ticker-left", { paused: true });
  await page.goto(`${srv.base}/?room=e2e-ticker-left`);
  await page.locator("#leave").waitFor({ state: "visible", timeout: 15000 });
  await page.locator("#leave").click();
  await page.locator("#leave").click();
  await page.waitForFunction(() => document.getElementById("headline").textContent === "You left the queue");
  assert.equal(await page.evaluate(() => window.fastIntervals.size), 0, "the ticker still runs after leaving");
  await page.locator("#rejoin").click();
  await waitFor("a ticker again", async () => (await page.evaluate(() => window.fastIntervals.size)) === 1);
});

test("an embedding site keeps no credential in its storage or URLs, and reads the server's clock", T, async (t) => {
  const files = {};
  const site = await serveFiles(files);
  t.after(() => site.close());
  const srv = await startServer(["-origins", site.base, "-tick", "1s", "-batch", "1"]);
  t.after(() => srv.stop());
  const room = "e2e-embed";
  for (let i = 0; i < 10; i++) await join(srv.base, room);
  // The site's page: waitroom.js from the waitroom's origin.
  files["/shop.html"] = `<!doctype html><meta charset="utf-8"><title>shop</title>
<script src="${srv.base}/waitroom.js"></script>
<script>
window.seen = [];
window.wr = Waitroom.connect({ room: "${room}", base: "${srv.base}",
  onState: function (s, i) { window.seen.push({ s: s, i: i }); } });
</script>`;

  const b = await openBrowser();
  t.after(() => b.close());
  const { page } = b;
  const sockets = [];
  page.on("websocket", (ws) => sockets.push(ws.url()));
  await page.goto(`${site.base}/shop.html`);
  await page.waitForFunction(() => window.wr && window.wr.info().transport === "ws", null, { timeout: 15000 });
  const cred = await page.evaluate(() => window.wr.visitor());
  assert.ok(cred, "the client knows its credential (in memory)");
  const stored = await page.evaluate(() => Object.keys(localStorage).map((k) => k + "=" + localStorage.getItem(k)));
  assert.ok(!stored.some((kv) => kv.includes(cred)), `the site's localStorage holds the credential: ${stored}`);
  assert.ok(sockets.length > 0 && sockets.every((u) => /[?&]ticket=/.test(u) && !/[?&]visitor=/.test(u)), `WebSocket URLs ${sockets}`);
  assert.ok(!sockets.some((u) => u.includes(cred)));
  // The server's Date is readable from the site's origin.
  const date = await page.evaluate((base) => fetch(base + "/api/v1/rooms/x/status", { credentials: "include" }).then((r) => r.headers.get("Date")), srv.base);
  assert.ok(date && !isNaN(Date.parse(date)), `Date header ${date}`);
  // A reload keeps the place through the waitroom's own cookie.
  await page.reload();
  await page.waitForFunction(() => window.wr && window.wr.info().transport === "ws", null, { timeout: 15000 });
  assert.equal(await page.evaluate(() => window.wr.visitor()), cred);
  assert.deepEqual(unexpected(b.errors, [/status of 401/, /status of 404/]), [], "console errors");
});
