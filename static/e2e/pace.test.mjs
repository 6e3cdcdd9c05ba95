// The page moves a waiting visitor's place on by itself between messages,
// at the rate the state carries; the server sends a new position only when
// that figure drifts from the true one. Run from the module root:
// node --test static/e2e/
import assert from "node:assert/strict";
import { test } from "node:test";
import { build, join, openBrowser, startServer, waitFor } from "./harness.mjs";

const T = { timeout: 90000 };

test.before(async () => { await build(); }, { timeout: 180000 });

const shownPosition = (page) => page.locator("#position").textContent().then((s) => Number((s || "").replace(/\D/g, "")));

test("the page moves the place on between messages, and few positions come", T, async (t) => {
  const srv = await startServer(["-tick", "100ms", "-batch", "2", "-join-rate", "0"]); // 20 a second
  t.after(() => srv.stop());
  const room = "e2e-pace";
  for (let i = 0; i < 400; i++) await join(srv.base, room);
  const b = await openBrowser();
  t.after(() => b.close());
  const { page } = b;
  const waiting = []; // arrival times of waiting states over the WebSocket
  page.on("websocket", (ws) => ws.on("framereceived", (f) => {
    if (typeof f.payload === "string" && f.payload.includes('"status":"waiting"')) waiting.push(Date.now());
  }));
  await page.goto(`${srv.base}/?room=${room}`);
  await page.locator('#transport[data-transport="ws"]').waitFor({ timeout: 10000 });
  await waitFor("a place", async () => (await shownPosition(page)) > 100);

  const from = Date.now();
  const first = await shownPosition(page);
  await new Promise((r) => setTimeout(r, 4000)); // 80 admissions
  const last = await shownPosition(page);
  const heard = waiting.filter((at) => at >= from).length;
  // The figure moved on about as far as the queue did (20 a second), with
  // at most a correction or two on a busy machine that missed ticks.
  assert.ok(first - last >= 40, `the place went ${first} → ${last} in 4 s`);
  assert.ok(heard <= 3, `${heard} positions pushed in 4 s`);
  // The sentence moves with the figure.
  const [fig, detail] = await page.evaluate(() => [document.getElementById("position").textContent, document.getElementById("detail").textContent]);
  assert.match(detail, new RegExp(`^You are ${fig.trim()}(st|nd|rd|th) in line\\.$`));
  // And it stays near the truth: the visitor's own poll.
  const cred = await page.evaluate(() => window.waitroomPage.client.visitor());
  const res = await fetch(`${srv.base}/api/v1/rooms/${room}/status`, { headers: { "X-Visitor": cred } });
  const truth = (await res.json()).position;
  const now = await shownPosition(page);
  assert.ok(Math.abs(now - truth) <= 40, `shown ${now}, true ${truth}`);
});
