// The world the connector's runtime tests run in, on loopback: a real
// redis-server, a real waitroom server (go build ./server, or the binary
// WAITROOM_SERVER names),
// an origin that echoes what it got, and the scenarios every runtime must
// pass. Each process is stopped by its PID.
import { spawn, execFileSync } from "node:child_process";
import { createServer as createNetServer } from "node:net";
import { createServer } from "node:http";
import { mkdtempSync, writeFileSync, chmodSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, dirname } from "node:path";
import { fileURLToPath } from "node:url";
import assert from "node:assert/strict";

export const root = join(dirname(fileURLToPath(import.meta.url)), "..", "..", "..");

export async function freePort() {
  const srv = createNetServer();
  await new Promise((r) => srv.listen(0, "127.0.0.1", r));
  const port = srv.address().port;
  await new Promise((r) => srv.close(r));
  return port;
}

// waitFor polls cond until it holds or the deadline passes.
export async function waitFor(what, cond, ms = 15000) {
  const end = Date.now() + ms;
  let last;
  for (;;) {
    try {
      if (await cond()) return;
    } catch (e) {
      last = e;
    }
    if (Date.now() > end) throw new Error(`waited ${ms} ms for ${what}${last ? ": " + last.message : ""}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

function need(cmd, how) {
  try {
    execFileSync("sh", ["-c", `command -v ${cmd}`], { stdio: "ignore" });
  } catch {
    throw new Error(`${cmd} is not installed: ${how}`);
  }
}

function start(cmd, args, opts = {}) {
  const p = spawn(cmd, args, { stdio: ["ignore", "pipe", "pipe"], ...opts });
  p.output = "";
  p.stdout.on("data", (d) => { p.output += d; });
  p.stderr.on("data", (d) => { p.output += d; });
  return p;
}

export function stop(p) {
  if (p && p.exitCode === null && p.signalCode === null) {
    const done = new Promise((r) => p.once("exit", r));
    process.kill(p.pid, "SIGTERM");
    return done;
  }
  return Promise.resolve();
}

let built = "";
function waitroomBin(dir) {
  if (process.env.WAITROOM_SERVER) return process.env.WAITROOM_SERVER;
  if (!built) {
    need("go", "install Go (https://go.dev/dl/) or set WAITROOM_SERVER to a waitroom binary");
    built = join(dir, "waitroom");
    execFileSync("go", ["build", "-o", built, "./server"], { cwd: root, stdio: "inherit" });
  }
  return built;
}

export const ROUTES = {
  routes: [
    { match: "*/shop/*", room: "open-room" },
    { match: "*/vault/*", room: "closed-room" },
    { match: "*/busy/*", room: "busy-room" },
  ],
  bypass: { paths: ["/shop/static/*"], header: { name: "X-Partner" } },
};
export const BYPASS_SECRET = "partner-secret-0123456789";
export const SERVICE_KEY = "edge-service-key-0123456789abcdef";

// World is redis-server, waitroom and the origin. origins, when set
// before start, are waitroom's -origins: the pages of the visitor's host.
export class World {
  async start() {
    need("redis-server", "make deps-redis (apt-get install redis-server)");
    this.dir = mkdtempSync(join(tmpdir(), "waitroom-edge-"));
    this.bin = waitroomBin(this.dir);
    this.redisPort = await freePort();
    this.redis = start("redis-server", ["--port", String(this.redisPort), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"]);
    this.keys = join(this.dir, "signing-keys.json");
    execFileSync(this.bin, ["keys", "generate", "-kid", "k1", "-out", this.keys]);
    // waitroom's copy holds the bypass secret; the edge's gets it apart
    // (WAITROOM_BYPASS_SECRET, a Worker secret).
    writeFileSync(join(this.dir, "routes.json"), JSON.stringify({ ...ROUTES, bypass: { ...ROUTES.bypass, header: { name: "X-Partner", secret: BYPASS_SECRET } } }));
    writeFileSync(join(this.dir, "rooms.yaml"),
      "rooms:\n  open-room:\n    strategy: fixed\n    batch: 50\n    failMode: open\n  closed-room:\n    strategy: fixed\n    batch: 50\n    failMode: closed\n" +
      "  busy-room:\n    strategy: max-active\n    maxActive: 1000\n    activation: busy\n");
    const sk = join(this.dir, "service-keys.yaml");
    writeFileSync(sk, `edge: ${SERVICE_KEY}\n`);
    chmodSync(sk, 0o600);
    this.port = await freePort();
    this.url = `http://127.0.0.1:${this.port}`;
    await this.origin();
    await this.startWaitroom();
  }

  async startWaitroom() {
    this.server = start(this.bin, [
      "-addr", `127.0.0.1:${this.port}`, "-redis", `redis://127.0.0.1:${this.redisPort}`, "-secret", "edge-test-secret-0123456789",
      "-signing-keys", this.keys, "-routes", join(this.dir, "routes.json"), "-rooms", join(this.dir, "rooms.yaml"),
      "-service-keys", join(this.dir, "service-keys.yaml"), "-admin-key", "edge-admin-key-0123456789", "-issuer", this.url,
      ...(this.origins ? ["-origins", this.origins.join(",")] : []),
    ]);
    const p = this.server;
    await waitFor("waitroom to be ready", async () => {
      if (p.exitCode !== null) throw new Error("waitroom exited");
      return (await fetch(this.url + "/readyz")).ok;
    }).catch((e) => {
      throw new Error(`${e.message}\n${this.server.output}`);
    });
  }

  async stopWaitroom() {
    await stop(this.server);
  }

  // rotate adds key k2 (ES256; k1 is EdDSA), the active one, and restarts
  // waitroom with it.
  async rotate() {
    await this.stopWaitroom();
    execFileSync(this.bin, ["keys", "rotate", "-in", this.keys, "-alg", "ES256", "-kid", "k2"]);
    await this.startWaitroom();
  }

  // origin echoes the method, path and headers it got; /shop/end ends the
  // session.
  async origin() {
    this.originPort = await freePort();
    this.originURL = `http://127.0.0.1:${this.originPort}`;
    this.originSrv = createServer((req, res) => {
      const h = { "content-type": "application/json" };
      if (req.url.startsWith("/shop/end")) h["waitroom-session"] = "end";
      res.writeHead(200, h);
      res.end(JSON.stringify({ origin: true, method: req.method, url: req.url, headers: req.headers }));
    });
    await new Promise((r) => this.originSrv.listen(this.originPort, "127.0.0.1", r));
  }

  env() {
    return {
      WAITROOM_URL: this.url, WAITROOM_ROUTES: JSON.stringify(ROUTES), WAITROOM_BYPASS_SECRET: BYPASS_SECRET,
      WAITROOM_SERVICE_KEY: SERVICE_KEY, WAITROOM_ISSUER: this.url, ORIGIN_URL: this.originURL,
    };
  }

  async close() {
    await stop(this.server);
    await stop(this.redis);
    await new Promise((r) => this.originSrv.close(r));
    rmSync(this.dir, { recursive: true, force: true });
  }
}

// A browser's cookie jar, enough for the scenarios.
class Jar {
  constructor() { this.c = new Map(); }
  take(resp) {
    for (const sc of resp.headers.getSetCookie()) {
      const [pair] = sc.split(";");
      const i = pair.indexOf("=");
      const k = pair.slice(0, i), v = pair.slice(i + 1);
      if (/max-age=(0|-)/i.test(sc) || v === "") this.c.delete(k);
      else this.c.set(k, v);
    }
  }
  header(only) {
    return [...this.c].filter(([k]) => !only || only.includes(k)).map(([k, v]) => `${k}=${v}`).join("; ");
  }
}

async function body(resp) {
  const t = await resp.text();
  try { return JSON.parse(t); } catch { return t; }
}

// admit joins room through the edge, waits to be admitted and enters: the
// jar then holds the visitor's credential, session and edge session.
export async function admit(edge, room) {
  const jar = new Jar();
  const j = await fetch(`${edge}/waitroom/api/v1/rooms/${room}/join`, { method: "POST", headers: { accept: "application/json" } });
  assert.equal(j.status, 200, `join: ${j.status}`);
  jar.take(j);
  const cred = (await j.json()).visitor;
  let st;
  await waitFor("admission", async () => {
    const r = await fetch(`${edge}/waitroom/api/v1/rooms/${room}/status`, { headers: { "x-visitor": cred } });
    st = await r.json();
    return st.status === "admitted" && Date.parse(st.notBefore) <= Date.now();
  });
  // The return address as the edge's redirect to the waiting page gives
  // it: a path on the visitor's host.
  const ret = "/shop/x";
  const e = await fetch(`${edge}/waitroom/api/v1/rooms/${room}/enter?return=${encodeURIComponent(ret)}`, { headers: { cookie: jar.header() }, redirect: "manual" });
  assert.equal(e.status, 302, `enter: ${e.status} ${await e.text()}`);
  assert.equal(e.headers.get("location"), ret);
  jar.take(e);
  assert.ok(jar.c.has(`wr_session_${room}_edge`), `no edge session among ${[...jar.c.keys()]}`);
  return { jar, cred };
}

// scenarios runs what every runtime must pass against edge, the
// connector's address in front of world.
export function scenarios(t, world, edgeURL) {
  const edge = () => edgeURL();
  return [
    ["a free path passes, without the client's X-Waitroom-* headers", async () => {
      const r = await fetch(`${edge()}/about`, { headers: { "x-waitroom-room": "open-room", "x-waitroom-visitor": "v1", "x-waitroom-fail-open": "1" } });
      const b = await body(r);
      assert.equal(r.status, 200);
      assert.equal(b.origin, true);
      assert.equal(b.headers["x-waitroom-room"], undefined);
      assert.equal(b.headers["x-waitroom-visitor"], undefined);
      assert.equal(b.headers["x-waitroom-fail-open"], undefined);
    }],
    ["a bypassed path and the bypass secret pass", async () => {
      assert.equal((await body(await fetch(`${edge()}/shop/static/app.js`))).origin, true);
      assert.equal((await body(await fetch(`${edge()}/shop/pay`, { headers: { "x-partner": BYPASS_SECRET } }))).origin, true);
    }],
    ["a browser without a session goes to the waiting page", async () => {
      const r = await fetch(`${edge()}/shop/pay?x=1`, { headers: { accept: "text/html" }, redirect: "manual" });
      assert.equal(r.status, 302);
      const loc = new URL(r.headers.get("location"), edge());
      assert.equal(loc.pathname, "/waitroom/");
      assert.equal(loc.searchParams.get("room"), "open-room");
      assert.equal(loc.searchParams.get("return"), "/shop/pay?x=1");
      // The waiting page's enter takes that return address as it is.
      const enter = await fetch(`${edge()}/waitroom/api/v1/rooms/open-room/enter?return=${encodeURIComponent(loc.searchParams.get("return"))}`, { redirect: "manual" });
      assert.notEqual(enter.status, 400, await enter.text());
      // A doubled slash would name another host: the edge sends one.
      const dbl = await fetch(`${edge()}//shop/pay`, { headers: { accept: "text/html" }, redirect: "manual" });
      assert.equal(new URL(dbl.headers.get("location"), edge()).searchParams.get("return"), "/shop/pay");
      const page = await fetch(loc);
      assert.equal(page.status, 200);
      assert.match(page.headers.get("content-type"), /text\/html/);
    }],
    ["an API client without a session gets its place (429)", async () => {
      const r = await fetch(`${edge()}/shop/api`, { headers: { accept: "application/json" } });
      const b = await body(r);
      assert.equal(r.status, 429, JSON.stringify(b));
      assert.ok(["waiting", "admitted"].includes(b.status), JSON.stringify(b));
      assert.ok(b.visitor);
    }],
    ["an admitted visitor passes, on the edge session alone", async () => {
      const { jar, cred } = await admit(edge(), "open-room");
      const r = await fetch(`${edge()}/shop/x`, { headers: { cookie: jar.header(), "x-waitroom-visitor": "someone-else" } });
      const b = await body(r);
      assert.equal(r.status, 200);
      assert.equal(b.headers["x-waitroom-room"], "open-room");
      assert.ok(b.headers["x-waitroom-visitor"] && b.headers["x-waitroom-visitor"] !== "someone-else");
      // Without the session cookie waitroom could not pass it: the edge did.
      const alone = await fetch(`${edge()}/shop/x`, { headers: { cookie: jar.header(["wr_visitor", "wr_session_open-room_edge"]) } });
      assert.equal((await body(alone)).headers["x-waitroom-visitor"], b.headers["x-waitroom-visitor"]);
      // A copy of the edge session without its credential is no session.
      const copy = await fetch(`${edge()}/shop/x`, { headers: { accept: "text/html", cookie: jar.header(["wr_session_open-room_edge"]) }, redirect: "manual" });
      assert.equal(copy.status, 302);
      // An API client with the credential in X-Visitor and no cookie but the edge session.
      const api = await fetch(`${edge()}/shop/x`, { headers: { "x-visitor": cred, cookie: jar.header(["wr_session_open-room_edge"]) } });
      assert.equal(api.status, 200);
    }],
    ["the session alone gets a fresh edge session from waitroom", async () => {
      const { jar } = await admit(edge(), "open-room");
      const r = await fetch(`${edge()}/shop/x`, { headers: { cookie: jar.header(["wr_visitor", "wr_session_open-room"]) } });
      const b = await body(r);
      assert.equal(b.headers["x-waitroom-room"], "open-room");
      assert.ok(r.headers.getSetCookie().some((c) => c.startsWith("wr_session_open-room_edge=")));
    }],
    ["activation busy: a fresh browser and API client pass in one round trip", async () => {
      const r = await fetch(`${edge()}/busy/x`, { headers: { accept: "text/html" } });
      const b = await body(r);
      assert.equal(b.headers?.["x-waitroom-room"], "busy-room", JSON.stringify(b));
      const jar = new Jar();
      jar.take(r);
      assert.ok(jar.c.has("wr_visitor") && jar.c.has("wr_session_busy-room") && jar.c.has("wr_session_busy-room_edge"), [...jar.c.keys()].join());
      // Its next request passes at the edge.
      const again = await fetch(`${edge()}/busy/y`, { headers: { cookie: jar.header(["wr_visitor", "wr_session_busy-room_edge"]) } });
      assert.equal((await body(again)).headers["x-waitroom-visitor"], b.headers["x-waitroom-visitor"]);
      // An API client that keeps no cookies: the session and credential in headers.
      const api = await fetch(`${edge()}/busy/x`, { headers: { accept: "application/json" } });
      const sess = api.headers.get("x-waitroom-session"), cred = api.headers.get("x-visitor");
      assert.ok(sess && cred, `headers: ${[...api.headers.keys()]}`);
      const next = await fetch(`${edge()}/busy/y`, { headers: { accept: "application/json", "x-waitroom-session": sess, "x-visitor": cred } });
      assert.equal((await body(next)).headers?.["x-waitroom-room"], "busy-room");
    }],
    ["Waitroom-Session: end ends the session and never reaches the visitor", async () => {
      const { jar } = await admit(edge(), "open-room");
      const r = await fetch(`${edge()}/shop/end`, { headers: { cookie: jar.header() } });
      const copy = jar.header(["wr_visitor", "wr_session_open-room_edge"]);
      assert.equal(r.status, 200);
      assert.equal(r.headers.get("waitroom-session"), null);
      const cleared = r.headers.getSetCookie().filter((c) => /max-age=0/i.test(c)).map((c) => c.split("=")[0]);
      assert.ok(cleared.includes("wr_session_open-room") && cleared.includes("wr_session_open-room_edge"), cleared.join());
      // The session is over in waitroom too: the old cookie gets no pass.
      const old = await fetch(`${edge()}/shop/x`, { headers: { accept: "text/html", cookie: jar.header(["wr_visitor", "wr_session_open-room"]) }, redirect: "manual" });
      assert.equal(old.status, 302);
      // A copy of its edge session kept from before is refused here too.
      const kept = await fetch(`${edge()}/shop/x`, { headers: { accept: "text/html", cookie: copy }, redirect: "manual" });
      assert.equal(kept.status, 302);
    }],
    ["a key rotation (EdDSA to ES256): a session signed with the new key passes", async () => {
      await admit(edge(), "open-room"); // the JWKS is cached with k1 alone
      await world.rotate();
      const { jar } = await admit(edge(), "open-room");
      const head = JSON.parse(Buffer.from(jar.c.get("wr_session_open-room_edge").split(".")[0], "base64url"));
      assert.equal(head.kid, "k2");
      assert.equal(head.alg, "ES256");
      // Only the edge can pass this (waitroom gets no session cookie): once
      // it has fetched the JWKS again for k2.
      await waitFor("a pass on the k2 edge session", async () => {
        const r = await fetch(`${edge()}/shop/x`, { headers: { cookie: jar.header(["wr_visitor", "wr_session_open-room_edge"]) } });
        return (await body(r)).headers?.["x-waitroom-room"] === "open-room";
      }, 5000);
    }],
    ["waitroom out of reach: the room's fail mode decides", async () => {
      const { jar } = await admit(edge(), "open-room");
      // The edge learns each room's mode from waitroom's answers.
      await fetch(`${edge()}/vault/x`, { headers: { accept: "text/html" }, redirect: "manual" });
      await fetch(`${edge()}/shop/y`, { headers: { accept: "text/html" }, redirect: "manual" });
      await world.stopWaitroom();
      try {
        const open = await fetch(`${edge()}/shop/y`, { headers: { accept: "text/html" }, redirect: "manual" });
        const b = await body(open);
        assert.equal(open.status, 200);
        assert.equal(b.headers["x-waitroom-fail-open"], "1");
        const closed = await fetch(`${edge()}/vault/x`, { headers: { accept: "application/json" } });
        assert.equal(closed.status, 503);
        assert.equal((await body(closed)).error.code, "unavailable");
        // An admitted visitor's edge session still holds.
        const admitted = await fetch(`${edge()}/shop/x`, { headers: { cookie: jar.header(["wr_visitor", "wr_session_open-room_edge"]) } });
        assert.equal((await body(admitted)).headers["x-waitroom-fail-open"], undefined);
      } finally {
        await world.startWaitroom();
      }
    }],
  ];
}
