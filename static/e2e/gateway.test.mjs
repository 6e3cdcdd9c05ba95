// Gateway mode end to end: headless Chromium through a real nginx running
// examples/nginx.conf, in front of a small app, with waitroom doing the
// forward-auth check. Run from the module root: node --test static/e2e/
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import fs from "node:fs";
import http from "node:http";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import { test } from "node:test";
import { ADMIN_KEY, build, freePort, moduleRoot, openBrowser, startServer, unexpected, waitFor } from "./harness.mjs";

const T = { timeout: 90000 };

test.before(async () => { await build(); }, { timeout: 180000 });

// startApp is the unchanged app: it shows a page and records the headers
// of each request.
async function startApp() {
  const seen = [];
  const srv = http.createServer((req, res) => {
    seen.push({ url: req.url, headers: req.headers });
    res.writeHead(200, { "Content-Type": "text/html; charset=utf-8" });
    res.end(`<!doctype html><title>Shop</title><h1 id="shop">Shop checkout</h1><p id="path">${req.url.replace(/[<>&"]/g, "")}</p>`);
  });
  await new Promise((r) => srv.listen(0, "127.0.0.1", r));
  return { addr: `127.0.0.1:${srv.address().port}`, seen, stop: () => new Promise((r) => srv.close(r)) };
}

// startNginx runs examples/nginx.conf with the test's ports.
async function startNginx(waitroom, app) {
  const port = await freePort();
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "waitroom-nginx-"));
  const conf = fs.readFileSync(path.join(moduleRoot(), "examples", "nginx.conf"), "utf8")
    .replaceAll("127.0.0.1:8080", waitroom).replaceAll("127.0.0.1:3000", app)
    .replace("listen 8000;", `listen 127.0.0.1:${port};`);
  const file = path.join(dir, "nginx.conf");
  fs.writeFileSync(file, conf);
  const errLog = path.join(dir, "error.log");
  const child = spawn("nginx", ["-p", dir, "-c", file, "-e", errLog, "-g", `daemon off; pid ${dir}/nginx.pid; error_log ${errLog};`],
    { stdio: ["ignore", "pipe", "pipe"] });
  let log = "";
  child.stdout.on("data", (d) => { log += d; });
  child.stderr.on("data", (d) => { log += d; });
  const exited = new Promise((resolve) => child.on("exit", resolve));
  let gone = false;
  exited.then(() => { gone = true; });
  const base = `http://127.0.0.1:${port}`;
  await waitFor("nginx listening", async () => {
    if (gone) throw new Error("nginx exited:\n" + log);
    return new Promise((resolve) => {
      const s = net.connect(port, "127.0.0.1", () => { s.end(); resolve(true); });
      s.on("error", () => resolve(false));
    });
  });
  return {
    base,
    async stop() {
      if (!gone) {
        process.kill(child.pid, "SIGTERM");
        await exited;
      }
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}

async function admin(base, method, p, body) {
  const res = await fetch(`${base}/api/v1/admin${p}`, {
    method, headers: { Authorization: "Bearer " + ADMIN_KEY, "Content-Type": "application/json" },
    body: body ? JSON.stringify(body) : undefined,
  });
  if (!res.ok) throw new Error(`admin ${method} ${p}: ${res.status} ${await res.text()}`);
}

test("through nginx: wait in the room, get admitted, land on the original page, come back straight through", T, async (t) => {
  const app = await startApp();
  t.after(() => app.stop());
  const wr = await startServer(["-tick", "100ms", "-route", "{match: '*/checkout/*', room: gw}", "-trusted-proxies", "127.0.0.1/32"]);
  t.after(() => wr.stop());
  const nginx = await startNginx(`127.0.0.1:${wr.port}`, app.addr);
  t.after(() => nginx.stop());
  // The room is paused, so the visitor is seen waiting first.
  await admin(wr.base, "PUT", "/rooms/gw", { paused: true });

  const b = await openBrowser();
  t.after(() => b.close());
  const { page } = b;
  const target = `${nginx.base}/checkout/item?id=7`;

  // 1. Open a protected URL: the waiting page, with the way back.
  await page.goto(target);
  assert.equal(new URL(page.url()).pathname, "/waitroom/");
  assert.equal(new URL(page.url()).searchParams.get("return"), target);

  // 2. Wait in the room.
  await page.locator('#card[data-status="waiting"]').waitFor({ timeout: 15000 });
  assert.equal(app.seen.filter((r) => r.url.startsWith("/checkout/")).length, 0, "the app saw nothing while the visitor waited");

  // 3. Get admitted, 4. land on the original URL with the app's page shown.
  await admin(wr.base, "POST", "/rooms/gw/resume");
  await page.waitForURL(target, { timeout: 20000 });
  await page.locator("#shop").waitFor({ timeout: 10000 });
  assert.equal((await page.locator("#path").textContent()).trim(), "/checkout/item?id=7");
  const hit = app.seen.findLast((r) => r.url === "/checkout/item?id=7");
  assert.equal(hit.headers["x-waitroom-room"], "gw");
  assert.match(hit.headers["x-waitroom-visitor"] || "", /^[A-Za-z0-9_-]{1,64}$/);

  // 5. The same URL again in the same browser goes straight through.
  const seenWaitroom = [];
  page.on("request", (r) => { if (new URL(r.url()).pathname.startsWith("/waitroom/")) seenWaitroom.push(r.url()); });
  const res = await page.goto(target);
  assert.equal(res.status(), 200);
  assert.equal(page.url(), target);
  await page.locator("#shop").waitFor({ timeout: 10000 });
  assert.deepEqual(seenWaitroom, [], "no trip through the waiting room");

  assert.deepEqual(unexpected(b.errors), []);
});

test("through nginx, a room with activation busy: a fresh browser reaches the app in one round trip, no waiting page", T, async (t) => {
  const app = await startApp();
  t.after(() => app.stop());
  const wr = await startServer(["-tick", "100ms", "-route", "{match: '*/checkout/*', room: gw}", "-trusted-proxies", "127.0.0.1/32"]);
  t.after(() => wr.stop());
  const nginx = await startNginx(`127.0.0.1:${wr.port}`, app.addr);
  t.after(() => nginx.stop());
  await admin(wr.base, "PUT", "/rooms/gw", { strategy: "max-active", maxActive: 10, activation: "busy" });
  // Every instance reads the setting within its next refresh: a request
  // without cookies passes once it has.
  await waitFor("the room letting visitors through", async () => {
    const res = await fetch(`${nginx.base}/checkout/probe`, { headers: { Accept: "text/html" }, redirect: "manual" });
    return res.status === 200;
  });

  const b = await openBrowser();
  t.after(() => b.close());
  const { page } = b;
  const seenWaitroom = [];
  page.on("request", (r) => { if (new URL(r.url()).pathname.startsWith("/waitroom/")) seenWaitroom.push(r.url()); });
  const target = `${nginx.base}/checkout/item?id=9`;
  const res = await page.goto(target);
  assert.equal(res.status(), 200);
  assert.equal(res.request().redirectedFrom(), null, "no redirect");
  assert.equal(page.url(), target);
  await page.locator("#shop").waitFor({ timeout: 10000 });
  assert.deepEqual(seenWaitroom, [], "no waiting page");
  const cookies = Object.fromEntries((await page.context().cookies()).map((c) => [c.name, c.value]));
  assert.ok(cookies.wr_visitor && cookies.wr_session_gw, `cookies ${JSON.stringify(Object.keys(cookies))}`);
  const hit = app.seen.findLast((r) => r.url === "/checkout/item?id=9");
  assert.equal(hit.headers["x-waitroom-visitor"], cookies.wr_visitor.split(".")[0]);

  // Its next page passes with the cookies it was given.
  const again = await page.goto(`${nginx.base}/checkout/pay`);
  assert.equal(again.status(), 200);
  assert.deepEqual(seenWaitroom, [], "still no waiting page");
  assert.deepEqual(unexpected(b.errors), []);
});
