// The waiting page of a room that queues only when busy (activation busy)
// says since when the room is busy, and once nobody waits, since when it
// lets visitors straight through. Headless Chromium against the real
// server (embedded Redis). Run from the module root: node --test static/e2e/
import assert from "node:assert/strict";
import { test } from "node:test";
import { ADMIN_KEY, build, join, openBrowser, startServer, unexpected, waitFor } from "./harness.mjs";

const T = { timeout: 90000 };

test.before(async () => { await build(); }, { timeout: 180000 });

async function admin(base, method, p, body) {
  const res = await fetch(`${base}/api/v1/admin${p}`, {
    method, headers: { Authorization: "Bearer " + ADMIN_KEY, "Content-Type": "application/json" },
    body: body ? JSON.stringify(body) : undefined,
  });
  if (!res.ok) throw new Error(`admin ${method} ${p}: ${res.status} ${await res.text()}`);
  return res.json().catch(() => null);
}

// activation is the room's activation as the admin stats say it.
const activation = async (base, room) => (await admin(base, "GET", `/rooms/${room}/stats`)).activation || {};

test("the waiting page of a room with activation busy says since when it is busy, then since when it lets visitors through", T, async (t) => {
  const srv = await startServer(["-tick", "100ms"]);
  t.after(() => srv.stop());
  await admin(srv.base, "PUT", "/rooms/bp", { strategy: "max-active", maxActive: 1, activation: "busy" });
  const passing = await waitFor("the room noted passing", async () => {
    const a = await activation(srv.base, "bp");
    return a.state === "passing" && a;
  });
  // One visitor holds the only slot, so the next one waits.
  const first = await join(srv.base, "bp");
  const status = (cred) => fetch(`${srv.base}/api/v1/rooms/bp/status`, { headers: { "X-Visitor": cred } }).then((r) => r.json());
  await waitFor("the first visitor admitted", async () => (await status(first.visitor)).status === "admitted");

  const b = await openBrowser();
  t.after(() => b.close());
  const { page } = b;
  await page.goto(`${srv.base}/?room=bp&lang=en`);
  const line = page.locator('#activation[data-state="queueing"]');
  await line.waitFor({ timeout: 15000 });
  assert.equal(await page.locator("#position").textContent(), "1", "the place is shown as before");
  const queueing = await activation(srv.base, "bp");
  assert.equal(queueing.state, "queueing");
  assert.ok(Date.parse(queueing.since) >= Date.parse(passing.since), `queueing since ${queueing.since}, passing since ${passing.since}`);
  const clock = (iso) => page.evaluate((s) => new Intl.DateTimeFormat("en", { hour: "2-digit", minute: "2-digit" }).format(new Date(s)), iso);
  assert.equal(await line.textContent(), `Busy since ${await clock(queueing.since)}: visitors queue until it calms down.`);

  // The dashboard says the same of the room.
  const dash = await b.context.newPage();
  await dash.goto(`${srv.base}/admin`);
  await dash.locator("#key").fill(ADMIN_KEY);
  await dash.locator("#use-key").click();
  await dash.locator('#rooms-table tr[data-room="bp"]').click();
  const note = () => dash.locator("#n-activation").textContent();
  await waitFor("the dashboard says queueing", async () => /^queueing since .+ \(activation busy\)$/.test(await note()));

  // The first visitor gives its slot back: the page's visitor is admitted,
  // nobody waits, and the room lets visitors straight through again.
  const left = await fetch(`${srv.base}/api/v1/rooms/bp/queue`, { method: "DELETE", headers: { "X-Visitor": first.visitor } });
  assert.equal(left.status, 204);
  await page.waitForFunction(() => document.getElementById("card").dataset.status === "admitted", null, { timeout: 15000 });
  const after = await waitFor("the room noted passing again", async () => {
    const a = await activation(srv.base, "bp");
    return a.state === "passing" && a;
  });
  assert.ok(Date.parse(after.since) >= Date.parse(queueing.since));
  // A reload reads the visitor's state afresh, as the room now is.
  await waitFor("the page says passing", async () => {
    await page.reload();
    await page.waitForFunction(() => document.getElementById("card").dataset.status === "admitted", null, { timeout: 10000 });
    return page.locator('#activation[data-state="passing"]').isVisible();
  }, { every: 300 });
  assert.equal(await page.locator("#activation").textContent(), `Not busy since ${await clock(after.since)}: visitors go straight in.`);
  await waitFor("the dashboard says passing", async () => /^letting visitors straight through since /.test(await note()));
  assert.deepEqual(unexpected(b.errors), []);
});
