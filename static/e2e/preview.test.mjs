// End-to-end test of the operator's page preview: the dashboard shows a
// room's waiting page in each state and language, with its branding and
// message, from GET /admin/preview, and nothing of it reaches the queue in
// Redis.
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { test } from "node:test";
import { promisify } from "node:util";
import fs from "node:fs";
import path from "node:path";
import { ADMIN_KEY, build, openBrowser, shot, shotsDir, startRedis, startServer, unexpected, waitFor } from "./harness.mjs";

const T = { timeout: 120000 };

test.before(async () => { await build(); }, { timeout: 180000 });

async function admin(base, method, p, body) {
  const res = await fetch(`${base}/api/v1/admin${p}`, {
    method,
    headers: { Authorization: "Bearer " + ADMIN_KEY, "Content-Type": "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const raw = await res.text();
  return { status: res.status, body: raw ? JSON.parse(raw) : null };
}

// redis runs one redis-cli command against port and returns its lines.
async function redis(port, ...args) {
  const { stdout } = await promisify(execFile)("redis-cli", ["-p", String(port), "--raw", ...args]);
  return stdout.split("\n").filter((l) => l !== "");
}

// roomKeys are the keys of room's queue and settings (all tagged {room}).
async function roomKeys(port, room) {
  return (await redis(port, "--scan", "--pattern", `*{${room}}*`)).sort();
}

// keysBesideReports are Redis's keys but the rooms' report keys, which
// the ticks write on their own schedule (minute buckets, peak waiting),
// whatever the preview does: a key written during the scan is one of
// those.
async function keysBesideReports(port, pattern = "*") {
  return (await redis(port, "--scan", "--pattern", pattern)).filter((k) => !k.includes(":rep:")).sort();
}

// frameShot saves a screenshot of the preview frame alone into shots/.
async function frameShot(page, name) {
  fs.mkdirSync(shotsDir, { recursive: true });
  await page.locator("#preview-frame").screenshot({ path: path.join(shotsDir, name) });
}

// What the card of the page in the frame shows for each preview state.
const CARD = {
  waiting: { status: "waiting", headline: /in line/i },
  paused: { status: "waiting", eyebrow: /paused/i },
  prequeue: { status: "waiting", eyebrow: /opens/i },
  soldout: { status: "sold_out" },
  admitted: { status: "admitted" },
  closed: { status: "closed" },
};

test("the dashboard previews a room's page in every state and language without a queue entry", T, async (t) => {
  const rds = await startRedis();
  t.after(() => rds.stop());
  const srv = await startServer(["-redis", rds.url, "-secret", "e2e-secret-0123456789", "-tick", "1s", "-batch", "14"]);
  t.after(() => srv.stop());

  const made = await admin(srv.base, "POST", "/rooms", {
    room: "shop", message: "Doors open at ten.", brandTitle: "Shop drop", brandAccent: "#c2185b", brandLogo: "/assets/favicon.svg",
  });
  assert.equal(made.status, 201, JSON.stringify(made.body));

  // Bad input is a JSON error with a stable code, and renders nothing.
  for (const [q, status, code] of [
    ["room=shop&state=asleep", 400, "invalid_state"],
    ["room=shop&lang=xx", 400, "invalid_lang"],
    ["room=Shop!", 400, "invalid_room"],
    ["room=nowhere", 404, "room_not_found"],
  ]) {
    const res = await fetch(`${srv.base}/admin/preview?${q}`, { headers: { Authorization: "Bearer " + ADMIN_KEY } });
    assert.equal(res.status, status, q);
    assert.equal((await res.json()).error.code, code, q);
  }
  const noKey = await fetch(`${srv.base}/admin/preview?room=shop`);
  assert.equal(noKey.status, 401);

  // The tick loop keeps the clock of every room an operator made, waited
  // for or not: the baseline is taken once it has.
  await waitFor("the room's first tick", async () => (await roomKeys(rds.port, "shop")).includes("wr:{shop}:tick"));
  const keysBefore = await keysBesideReports(rds.port, "*{shop}*");
  const sizeBefore = (await keysBesideReports(rds.port)).length;

  const b = await openBrowser({ viewport: { width: 1200, height: 1400 } });
  t.after(() => b.close());
  const { page } = b;
  const visitorCalls = [];
  page.on("request", (req) => { if (/\/api\/v1\/rooms\//.test(req.url())) visitorCalls.push(req.url()); });

  await page.goto(`${srv.base}/admin?room=shop`);
  await page.locator("#key").fill(ADMIN_KEY);
  await page.locator("#use-key").click();
  await page.locator("#preview-panel").waitFor({ state: "visible", timeout: 10000 });
  const frame = page.frameLocator("#preview-frame");
  const shown = (state, lang) => waitFor(`the ${state} preview in ${lang}`, async () => {
    const f = page.locator("#preview-frame");
    return (await f.getAttribute("data-state")) === state && (await f.getAttribute("data-lang")) === lang &&
      (await frame.locator("#card").getAttribute("data-status")) === CARD[state].status &&
      (await frame.locator("html").getAttribute("lang")) === lang;
  });

  for (const state of Object.keys(CARD)) {
    await page.locator("#preview-state").selectOption(state);
    await shown(state, "en");
    const want = CARD[state];
    if (want.headline) assert.match(await frame.locator("#headline").textContent(), want.headline);
    if (want.eyebrow) assert.match(await frame.locator("#eyebrow").textContent(), want.eyebrow);
    // The room's look and message, as its visitors see them.
    assert.match(await frame.locator("#room-message, #detail").allTextContents().then((a) => a.join(" ")), /Doors open at ten\./);
    assert.match(await frame.locator("title").textContent(), /Shop drop/);
    await frameShot(page, `preview-${state}.png`);
  }

  // The branding is applied: the accent, and the logo, loaded.
  const look = await page.frames().find((f) => f !== page.mainFrame()).evaluate(() => {
    const logo = document.getElementById("brand-logo");
    return { branded: document.body.classList.contains("branded"), logo: !!logo && logo.complete && logo.naturalWidth > 0 };
  });
  assert.deepEqual(look, { branded: true, logo: true });

  // A waiting visitor is told a range where the rate varies.
  await page.locator("#preview-state").selectOption("waiting");
  await shown("waiting", "en");
  assert.equal((await frame.locator("#eta").textContent()).trim(), "about 4–6 minutes");
  await page.locator("#preview-lang").selectOption("fr");
  await shown("waiting", "fr");
  assert.match(await frame.locator("#eta").textContent(), /^environ 4\s*–\s*6 minutes$/);
  await page.locator("#preview-lang").selectOption("ja");
  await shown("waiting", "ja");
  assert.match(await frame.locator("#eta").textContent(), /^約4\s*[～〜–-]\s*6\s*分$/);
  await frameShot(page, "preview-waiting-ja.png");
  await shot(page, "preview-dashboard.png");

  // The frame's page cannot reach the dashboard's key: it runs in an
  // origin of its own.
  const frameOrigin = await page.frames().find((f) => f !== page.mainFrame()).evaluate(() => self.origin);
  assert.equal(frameOrigin, "null");

  // Nothing joined, connected or was written: the room's keys are those
  // its creation made (beside its report's, which the ticks keep), and
  // Redis holds no more keys than before.
  assert.deepEqual(visitorCalls, []);
  const keysAfter = await keysBesideReports(rds.port, "*{shop}*");
  assert.deepEqual(keysAfter, keysBefore);
  for (const k of await roomKeys(rds.port, "shop")) assert.doesNotMatch(k, /:(q|seq|pre|seen|t:.*)$/, "a queue entry: " + k);
  assert.equal((await redis(rds.port, "SISMEMBER", "wr:{rooms}:waiting", "shop"))[0], "0");
  assert.equal((await keysBesideReports(rds.port)).length, sizeBefore);
  assert.deepEqual(unexpected(b.errors), []);
});
