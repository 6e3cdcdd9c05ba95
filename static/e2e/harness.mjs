// harness.mjs: what the end-to-end tests share. It builds the server once per
// test process, starts it on a free port with the embedded Redis, opens
// headless Chromium (Debian's, via playwright-core) with a fresh profile, and
// collects console errors. Nothing here sleeps to synchronise: every wait is
// for a condition, with a deadline.
import { spawn, execFile } from "node:child_process";
import fs from "node:fs";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { chromium } from "playwright-core";

const here = path.dirname(fileURLToPath(import.meta.url));
export const shotsDir = path.join(here, "shots");
export const ADMIN_KEY = "e2e-admin-key-0123456789";

// moduleRoot walks up from this file to the waitroom go.mod.
export function moduleRoot() {
  for (let dir = here; ; dir = path.dirname(dir)) {
    const mod = path.join(dir, "go.mod");
    if (fs.existsSync(mod) && /^module github\.com\/waitroom\/waitroom\s*$/m.test(fs.readFileSync(mod, "utf8"))) return dir;
    if (path.dirname(dir) === dir) throw new Error("e2e: go.mod of github.com/waitroom/waitroom not found above " + here);
  }
}

const tmpRoot = fs.mkdtempSync(path.join(os.tmpdir(), "waitroom-e2e-"));
let binary = null;

// build compiles ./server once per process (WAITROOM_SERVER, a built
// binary, skips it; WAITROOM_BIN is the tools directory of the Makefile).
export async function build() {
  if (binary) return binary;
  if (process.env.WAITROOM_SERVER) return (binary = process.env.WAITROOM_SERVER);
  const out = path.join(tmpRoot, "waitroom");
  await promisify(execFile)("go", ["build", "-o", out, "./server"], { cwd: moduleRoot(), env: process.env, maxBuffer: 8 << 20 })
    .catch((err) => { throw new Error("e2e: go build failed:\n" + (err.stderr || err.message)); });
  return (binary = out);
}

// freePort finds a free TCP port on 127.0.0.1.
export function freePort() {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.unref();
    srv.on("error", reject);
    srv.listen(0, "127.0.0.1", () => {
      const { port } = srv.address();
      srv.close(() => resolve(port));
    });
  });
}

// waitFor polls fn until it returns a truthy value or the deadline passes.
export async function waitFor(what, fn, { timeout = 15000, every = 50 } = {}) {
  const deadline = Date.now() + timeout;
  let lastErr;
  for (;;) {
    try {
      const v = await fn();
      if (v) return v;
    } catch (err) { lastErr = err; }
    if (Date.now() > deadline) throw new Error(`e2e: timed out waiting for ${what}` + (lastErr ? `: ${lastErr.message}` : ""));
    await new Promise((r) => setTimeout(r, every));
  }
}

// startServer runs the server with flags on a free port and waits for
// /readyz. stop() kills it by PID.
export async function startServer(flags = [], { port } = {}) {
  const bin = await build();
  port = port || await freePort();
  const base = `http://127.0.0.1:${port}`;
  const args = ["-addr", `127.0.0.1:${port}`, "-admin-key", ADMIN_KEY, "-log-level", "warn", "-open-rooms", "-demo",
    "-shutdown-timeout", "2s", "-drain-window", "200ms", ...flags];
  const child = spawn(bin, args, { stdio: ["ignore", "pipe", "pipe"] });
  let log = "";
  child.stdout.on("data", (d) => { log += d; });
  child.stderr.on("data", (d) => { log += d; });
  const exited = new Promise((resolve) => child.on("exit", (code, sig) => resolve({ code, sig })));
  let gone = null;
  exited.then((r) => { gone = r; });
  await waitFor("the server's /readyz", async () => {
    if (gone) throw new Error(`server exited (${gone.code ?? gone.sig}):\n${log}`);
    const res = await fetch(base + "/readyz").catch(() => null);
    return res && res.ok;
  }, { timeout: 20000 });
  return {
    base,
    port,
    pid: child.pid,
    log: () => log,
    async stop() {
      if (gone) return;
      process.kill(child.pid, "SIGTERM");
      const t = setTimeout(() => { if (!gone) process.kill(child.pid, "SIGKILL"); }, 4000);
      await exited;
      clearTimeout(t);
    },
  };
}

// join puts a visitor into room straight over HTTP (no browser) and returns
// its state and credential.
export async function join(base, room) {
  const res = await fetch(`${base}/api/v1/rooms/${room}/join`, { method: "POST", headers: { "Content-Type": "application/json" }, body: "{}" });
  if (!res.ok) throw new Error(`join ${room}: ${res.status} ${await res.text()}`);
  return res.json();
}

const CHROMIUM = process.env.CHROMIUM_PATH || "/usr/bin/chromium";
const ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
  "--disable-background-networking", "--disable-component-update", "--disable-sync"];

// openBrowser starts Chromium with a fresh profile. Console errors and page
// errors of every page are collected in errors.
export async function openBrowser(options = {}) {
  const dir = fs.mkdtempSync(path.join(tmpRoot, "profile-"));
  const context = await chromium.launchPersistentContext(dir, {
    executablePath: CHROMIUM,
    headless: true,
    args: ARGS,
    viewport: options.viewport || { width: 900, height: 760 },
    deviceScaleFactor: options.deviceScaleFactor || 1,
    colorScheme: options.colorScheme || "light",
    reducedMotion: "reduce",
    timeout: 30000,
  });
  const errors = [];
  const watch = (page) => {
    page.on("console", (msg) => { if (msg.type() === "error") errors.push(msg.text()); });
    page.on("pageerror", (err) => errors.push("pageerror: " + err.message));
  };
  context.pages().forEach(watch);
  context.on("page", watch);
  const page = context.pages()[0] || await context.newPage();
  return {
    context,
    page,
    errors,
    async close() {
      await context.close().catch(() => {});
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}

// shot saves a screenshot into static/e2e/shots/ and, with WAITROOM_DOCS=1,
// also as docs/<docsName> for the README.
export async function shot(page, name, docsName) {
  fs.mkdirSync(shotsDir, { recursive: true });
  const file = path.join(shotsDir, name);
  await page.screenshot({ path: file, fullPage: true });
  if (docsName && process.env.WAITROOM_DOCS === "1") {
    const docs = path.join(moduleRoot(), "docs");
    fs.mkdirSync(docs, { recursive: true });
    fs.copyFileSync(file, path.join(docs, docsName));
  }
  return file;
}

// Browser messages that are expected when a transport is refused on
// purpose: Chromium logs the refused handshake itself.
export const refusedTransportNoise = [
  /WebSocket connection to .* failed/i,
  /EventSource's response has a MIME type/i,
  /Failed to load resource: the server responded with a status of 503/i,
];

export function unexpected(errors, allowed = []) {
  return errors.filter((e) => !allowed.some((re) => re.test(e)));
}

process.on("exit", () => { fs.rmSync(tmpRoot, { recursive: true, force: true }); });

// startRedis runs redis-server on a free port (or port), without
// persistence, and waits until it answers PING. stop() kills it by PID.
export async function startRedis({ port } = {}) {
  port = port || await freePort();
  const dir = fs.mkdtempSync(path.join(tmpRoot, "redis-"));
  const child = spawn("redis-server", ["--port", String(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
    "--dir", dir, "--protected-mode", "no"], { stdio: "ignore" });
  let gone = null;
  const exited = new Promise((resolve) => child.on("exit", (code, sig) => resolve({ code, sig })));
  exited.then((r) => { gone = r; });
  child.on("error", (err) => { gone = { code: err.message }; });
  await waitFor("redis-server to answer", async () => {
    if (gone) throw new Error(`redis-server exited (${gone.code ?? gone.sig})`);
    return await ping(port);
  }, { timeout: 15000 });
  return {
    port,
    url: `redis://127.0.0.1:${port}`,
    pid: child.pid,
    async stop() {
      if (gone) return;
      process.kill(child.pid, "SIGKILL");
      await exited;
    },
  };
}

function ping(port) {
  return new Promise((resolve) => {
    const s = net.connect(port, "127.0.0.1");
    let buf = "";
    s.setTimeout(1000, () => { s.destroy(); resolve(false); });
    s.on("error", () => resolve(false));
    s.on("connect", () => s.write("PING\r\n"));
    s.on("data", (d) => {
      buf += d;
      if (buf.includes("\r\n")) { s.destroy(); resolve(buf.startsWith("+PONG")); }
    });
  });
}

// serveFiles serves a few files (path → body) from another origin on a
// free port, as an embedding site would: .mjs and .js paths as JavaScript,
// the rest as HTML. close() stops it.
export async function serveFiles(files) {
  const http = await import("node:http");
  const port = await freePort();
  const srv = http.createServer((req, res) => {
    const body = files[req.url.split("?")[0]];
    if (body === undefined) { res.writeHead(404); res.end(); return; }
    const type = /\.m?js$/.test(req.url.split("?")[0]) ? "text/javascript" : "text/html";
    res.writeHead(200, { "Content-Type": type + "; charset=utf-8", "Cache-Control": "no-store" });
    res.end(body);
  });
  await new Promise((resolve) => srv.listen(port, "127.0.0.1", resolve));
  return {
    base: `http://127.0.0.1:${port}`,
    close: () => new Promise((resolve) => { srv.closeAllConnections(); srv.close(resolve); }),
  };
}
