// End-to-end test of the dashboard's Webhooks panel, with a receiver that
// checks every delivery's Standard Webhooks signature itself (node:crypto,
// not the server's code).
import assert from "node:assert/strict";
import crypto from "node:crypto";
import fs from "node:fs";
import http from "node:http";
import os from "node:os";
import path from "node:path";
import { test } from "node:test";
import { ADMIN_KEY, build, openBrowser, shot, startServer, unexpected, waitFor } from "./harness.mjs";

const T = { timeout: 120000 };

test.before(async () => { await build(); }, { timeout: 180000 });

const text = (page, sel) => page.locator(sel).textContent().then((s) => (s || "").trim());

// verified is whether a delivery is signed with secret, per the
// specification: v1,base64(HMAC-SHA256(key, id.timestamp.body)).
function verified(secret, headers, body) {
  const key = Buffer.from(secret.replace(/^whsec_/, ""), "base64");
  const id = headers["webhook-id"], ts = headers["webhook-timestamp"];
  if (!id || !ts || Math.abs(Date.now() / 1000 - Number(ts)) > 300) return false;
  const want = crypto.createHmac("sha256", key).update(`${id}.${ts}.${body}`).digest();
  return (headers["webhook-signature"] || "").split(" ").some((s) => {
    const [v, sig] = s.split(",");
    const got = Buffer.from(sig || "", "base64");
    return v === "v1" && got.length === want.length && crypto.timingSafeEqual(got, want);
  });
}

// receive runs an endpoint that records what each path got, checked
// against the secret secrets() gives for that path.
async function receive(secrets) {
  const got = { refused: 0 };
  const srv = http.createServer((req, res) => {
    let body = "";
    req.on("data", (d) => { body += d; });
    req.on("end", () => {
      if (!verified(secrets()[req.url] || "", req.headers, body)) { got.refused++; res.writeHead(401).end(); return; }
      (got[req.url] = got[req.url] || []).push(JSON.parse(body));
      res.writeHead(204).end();
    });
  });
  await new Promise((r) => srv.listen(0, "127.0.0.1", r));
  return { got, url: `http://127.0.0.1:${srv.address().port}`, close: () => new Promise((r) => srv.close(r)) };
}

test("the dashboard sets a room's webhooks, shows the new secret once, and events arrive signed", T, async (t) => {
  const deploySecret = "whsec_" + crypto.randomBytes(32).toString("base64");
  let roomSecret = "";
  const rc = await receive(() => ({ "/deploy": deploySecret, "/room": roomSecret }));
  t.after(() => rc.close());
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "waitroom-e2e-hooks-"));
  const file = path.join(dir, "webhooks.yaml");
  fs.writeFileSync(file, `- url: ${rc.url}/deploy\n  secret: ${deploySecret}\n  events: [room.created, room.paused]\n`);
  // The receiver is on loopback, which webhooks reach only where the operator allows it.
  const srv = await startServer(["-tick", "1s", "-webhooks", file, "-webhook-allow-cidrs", "127.0.0.1/32"]);
  t.after(() => srv.stop());
  const res = await fetch(`${srv.base}/api/v1/admin/rooms`, {
    method: "POST", headers: { Authorization: "Bearer " + ADMIN_KEY, "Content-Type": "application/json" }, body: '{"room":"hooked"}',
  });
  assert.equal(res.status, 201);

  const b = await openBrowser({ viewport: { width: 1200, height: 1400 } });
  t.after(() => b.close());
  const { page } = b;
  await page.goto(`${srv.base}/admin?room=hooked`);
  await page.locator("#key").fill(ADMIN_KEY);
  await page.locator("#use-key").click();
  await page.locator("#webhooks-panel").waitFor({ state: "visible", timeout: 10000 });
  await waitFor("the room in the panel", async () => (await text(page, "#webhooks-room")) === "hooked");
  await waitFor("no webhooks yet", async () => /No webhooks for this room/.test(await text(page, "#webhooks-table tbody")));
  await waitFor("no failed deliveries", async () => /No failed deliveries/.test(await text(page, "#dead-msg")));

  // A bad URL is refused in the server's words.
  await page.locator("#webhook-url").fill("ftp://nowhere.example/");
  await page.locator("#webhook-save").click();
  await waitFor("the refusal", async () => /invalid_webhook_url/.test(await text(page, "#webhooks-msg")));

  // A good one gets a secret, shown this once.
  await page.locator("#webhook-url").fill(`${rc.url}/room`);
  await page.locator('#webhook-events input[value="room.paused"]').check();
  await page.locator("#webhook-save").click();
  await waitFor("the new secret", async () => /new secret .* is whsec_/.test(await text(page, "#webhooks-msg")));
  roomSecret = (await text(page, "#webhooks-msg")).match(/(whsec_[A-Za-z0-9+/=]+)/)[1];
  const row = await text(page, "#webhooks-table tbody");
  assert.match(row, /room\.paused/);
  assert.match(row, /whsec_.{4}…/);
  assert.ok(!row.includes(roomSecret), "the secret is shown back in full");
  await shot(page, "admin-webhooks.png");

  // Pausing sends room.paused to both, signed with each one's secret.
  await page.locator("#pause").click();
  await page.locator("#confirm").waitFor({ state: "visible", timeout: 10000 });
  await page.locator("#confirm-apply").click();
  await waitFor("the deliveries", async () => (rc.got["/room"] || []).length === 1 && (rc.got["/deploy"] || []).length === 2, { timeout: 15000 });
  assert.equal(rc.got.refused, 0);
  assert.equal(rc.got["/room"][0].type, "room.paused");
  assert.equal(rc.got["/room"][0].data.room, "hooked");
  assert.equal(rc.got["/room"][0].data.audit.action, "pause");
  assert.deepEqual(rc.got["/deploy"].map((e) => e.type).sort(), ["room.created", "room.paused"]);
  // The one refusal above is the only failed request.
  assert.deepEqual(unexpected(b.errors, [/status of 400 \(Bad Request\)/]), [], "console errors");
});
