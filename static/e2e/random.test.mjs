// The waiting page of a room that admits by lottery (method random), in
// headless Chromium against the real server (embedded Redis). Run from the
// module root: node --test static/e2e/random.test.mjs
import assert from "node:assert/strict";
import { test } from "node:test";
import { ADMIN_KEY, build, join, openBrowser, shot, startServer, unexpected, waitFor } from "./harness.mjs";

const T = { timeout: 90000 };

test.before(async () => { await build(); }, { timeout: 180000 });

const text = (page, id) => page.locator("#" + id).textContent().then((s) => (s || "").trim());

async function settings(base, room, body) {
  const res = await fetch(`${base}/api/v1/admin/rooms/${room}`, {
    method: "PUT", headers: { Authorization: "Bearer " + ADMIN_KEY, "Content-Type": "application/json" }, body: JSON.stringify(body),
  });
  if (!res.ok) throw new Error(`PUT settings: ${res.status} ${await res.text()}`);
}

test("a random room shows the draw instead of a place, then admits", T, async (t) => {
  const srv = await startServer(["-tick", "500ms", "-batch", "1"]);
  t.after(() => srv.stop());
  const room = "e2e-random";
  await settings(srv.base, room, { method: "random", paused: true });
  for (let i = 0; i < 4; i++) await join(srv.base, room);
  const b = await openBrowser();
  t.after(() => b.close());
  const { page } = b;

  await page.goto(`${srv.base}/?room=${room}`);
  await page.locator('#transport[data-transport="ws"]').waitFor({ timeout: 10000 });
  await waitFor("the draw", async () => (await text(page, "headline")) === "You're in the draw", { timeout: 15000 });
  assert.match(await text(page, "detail"), /^In the draw: 5 people, about [\d.]+% chance per minute\.$/);
  assert.equal(await page.locator("#figures").isHidden(), true, "no place shown");
  // Paused, a lottery has no place to keep: the page says the draw is
  // paused and the visitor stays in it.
  assert.equal(await text(page, "eyebrow"), "Draw paused");
  assert.equal(await text(page, "sub"), "The draw is paused for a moment. You stay in it, and it starts again on its own.");
  assert.equal(await text(page, "announce"), "The draw is paused. You stay in it.");
  assert.doesNotMatch(await page.locator("#card").innerText(), /place/i, "no place promised");
  await shot(page, "random-draw.png");

  // Another joins: the page hears the draw grow (the room stays paused, so
  // it is the reconcile or the next pushed change that carries it; a
  // settings change is pushed at once).
  await join(srv.base, room);
  await settings(srv.base, room, { method: "random", paused: true, message: "Drawing soon" });
  await waitFor("a draw of 6", async () => /^In the draw: 6 people/.test(await text(page, "detail")), { timeout: 15000 });

  // Resumed, the lottery lets everyone in, one a tick; the page's turn comes.
  await settings(srv.base, room, { method: "random", paused: false });
  await waitFor("the draw resumed", async () => (await text(page, "sub")).startsWith("The next people to go in are drawn at random"), { timeout: 15000 });
  assert.notEqual(await text(page, "eyebrow"), "Draw paused");
  await page.waitForFunction(() => !!document.getElementById("place-order"), null, { timeout: 30000 });
  assert.deepEqual(unexpected(b.errors, [/status of 404/]), [], "console errors");
});
