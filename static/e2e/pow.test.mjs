// Proof of work on join, in Chromium: the page solves the room's challenge
// in Web Workers and joins with the solution. With WAITROOM_POW_MEASURE=1 it
// also times the default strength (18 bits) on a phone-class CPU (Chromium
// throttled 4×), the figure docs/rooms.md quotes.
import assert from "node:assert/strict";
import { test } from "node:test";
import { ADMIN_KEY, build, openBrowser, startServer, unexpected, waitFor } from "./harness.mjs";

const T = { timeout: 120000 };

test.before(async () => { await build(); }, { timeout: 180000 });

async function setPow(base, room, bits) {
  const res = await fetch(`${base}/api/v1/admin/rooms/${room}`, {
    method: "PUT",
    headers: { "Authorization": "Bearer " + ADMIN_KEY, "Content-Type": "application/json" },
    body: JSON.stringify({ powBits: bits }),
  });
  assert.equal(res.status, 200, await res.text());
}

test("a room with proof of work: the page solves it off the main thread and joins", T, async (t) => {
  const srv = await startServer(["-tick", "100ms", "-batch", "1"]);
  t.after(() => srv.stop());
  await setPow(srv.base, "pow", 12);
  // Once the instance has read the setting (its room cache refreshes every
  // 2 s), a join without a solution gets a challenge, not a place.
  const bare = await waitFor("joins to need a proof of work", async () => {
    const res = await fetch(`${srv.base}/api/v1/rooms/pow/join`, { method: "POST" });
    return res.status === 428 ? res : null;
  });
  assert.equal((await bare.json()).error.code, "pow_required");

  const b = await openBrowser();
  t.after(() => b.close());
  const { page } = b;
  const joins = [];
  page.on("request", (r) => { if (r.url().endsWith("/api/v1/rooms/pow/join")) joins.push(r.postData() || ""); });
  const workers = [];
  page.on("worker", (w) => workers.push(w));
  await page.goto(`${srv.base}/?room=pow`);
  await page.waitForFunction(() => {
    const h = document.getElementById("headline").textContent;
    return /your turn|in line|You're/i.test(h) || document.getElementById("card").dataset.status === "waiting" ||
      document.getElementById("card").dataset.status === "admitted";
  }, null, { timeout: 60000 });
  const solved = joins.find((j) => j.includes('"pow"'));
  assert.ok(solved, "the page joined with a solution: " + JSON.stringify(joins));
  assert.ok(workers.length >= 1, "the challenge was solved in a Web Worker");
  // The first join's 428 is the challenge, which the browser logs.
  assert.deepEqual(unexpected(b.errors, [/status of 428/]), []);
});

test("the default strength takes a phone-class CPU (4× throttled) how long", { ...T, skip: !process.env.WAITROOM_POW_MEASURE }, async (t) => {
  const srv = await startServer([]);
  t.after(() => srv.stop());
  const b = await openBrowser();
  t.after(() => b.close());
  const { page, context } = b;
  await page.goto(`${srv.base}/`);
  const cdp = await context.newCDPSession(page);
  // Chromium's CPU throttling slows the page's thread, not its workers: the
  // phone-class figure solves on the page's thread alone (one core, 4×
  // slower), which is pessimistic for phones with several cores.
  for (const [rate, workers] of [[1, true], [1, false], [4, false]]) {
    await cdp.send("Emulation.setCPUThrottlingRate", { rate });
    const times = [];
    for (let i = 0; i < 15; i++) {
      // A challenge as long as the server's, at 18 bits.
      const ch = "p1.drop.18." + Date.now().toString(36) + ".m" + i + "abcdefghijklmnop.0123456789abcdefghijkl";
      times.push(await page.evaluate(async ([c, w]) => {
        const keep = window.Worker;
        if (!w) window.Worker = undefined;
        try {
          const t0 = performance.now();
          await window.Waitroom.solvePow(c, 18);
          return performance.now() - t0;
        } finally { window.Worker = keep; }
      }, [ch, workers]));
    }
    times.sort((x, y) => x - y);
    const cores = await page.evaluate(() => navigator.hardwareConcurrency);
    console.log(`# proof of work, 18 bits, ${workers ? `workers (${cores} cores)` : "page thread only"}, CPU throttled ${rate}x: median ${Math.round(times[7])} ms, p90 ${Math.round(times[13])} ms, max ${Math.round(times[14])} ms (15 challenges)`);
  }
});
