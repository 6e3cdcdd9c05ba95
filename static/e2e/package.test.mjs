// The JS client as a package: npm pack makes a tarball of clients/js; its
// ES module is loaded by a page of another origin from the unpacked
// tarball (not from the server) and takes a visitor through the queue to
// an entry token; its TypeScript declarations type-check a use of the
// whole API and refuse a wrong one.
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { test } from "node:test";
import { promisify } from "node:util";
import { build, join, moduleRoot, openBrowser, serveFiles, startServer, unexpected } from "./harness.mjs";

const run = promisify(execFile);
const T = { timeout: 120000 };
const here = path.dirname(new URL(import.meta.url).pathname);

// unpacked is the package as a shop installs it: packed by npm pack
// (WAITROOM_JS_TARBALL, made by make pack-js, or packed here), unpacked
// under node_modules/@waitroom/client of a fresh directory.
let unpacked;
test.before(async () => {
  await build();
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "waitroom-pkg-"));
  let tarball = process.env.WAITROOM_JS_TARBALL;
  if (!tarball) {
    const { stdout } = await run("npm", ["pack", "--json", "--pack-destination", dir, path.join(moduleRoot(), "clients", "js")]);
    tarball = path.join(dir, JSON.parse(stdout)[0].filename);
  }
  const pkg = path.join(dir, "node_modules", "@waitroom", "client");
  fs.mkdirSync(pkg, { recursive: true });
  await run("tar", ["-xzf", tarball, "-C", pkg, "--strip-components=1"]);
  unpacked = { dir, pkg, tarball };
}, { timeout: 180000 });

test("the tarball holds the module, the classic script, the declarations, the README and the license", async () => {
  const files = fs.readdirSync(unpacked.pkg).sort();
  assert.deepEqual(files, ["LICENSE", "README.md", "package.json", "waitroom.d.ts", "waitroom.js", "waitroom.mjs"]);
  const meta = JSON.parse(fs.readFileSync(path.join(unpacked.pkg, "package.json"), "utf8"));
  assert.equal(meta.type, "module");
  assert.match(meta.version, /^\d+\.\d+\.\d+/);
  assert.equal(meta.license, "Apache-2.0");
  assert.equal(meta.exports["."].import, "./waitroom.mjs");
  assert.equal(meta.exports["."].types, "./waitroom.d.ts");
  // The classic script is the file the server serves.
  const served = fs.readFileSync(path.join(moduleRoot(), "static", "waitroom.js"), "utf8");
  assert.equal(fs.readFileSync(path.join(unpacked.pkg, "waitroom.js"), "utf8"), served);
  // Node resolves the package by name through its exports.
  const { stdout } = await run("node", ["--input-type=module", "-e",
    `import * as m from "@waitroom/client"; import d from "@waitroom/client";
     console.log(JSON.stringify({ keys: Object.keys(m).sort(), same: d === m.Waitroom && d.connect === m.connect,
       shown: m.shown({ position: 10, ratePerSecond: 2 }, 1000) }));`], { cwd: unpacked.dir });
  assert.deepEqual(JSON.parse(stdout), {
    keys: ["Waitroom", "connect", "default", "shown", "solvePow", "version"], same: true, shown: 8,
  });
});

test("a page of another origin imports the packed module and is admitted with an entry token", T, async (t) => {
  const files = { "/waitroom.mjs": fs.readFileSync(path.join(unpacked.pkg, "waitroom.mjs"), "utf8") };
  const site = await serveFiles(files);
  t.after(() => site.close());
  const srv = await startServer(["-origins", site.base, "-tick", "300ms", "-batch", "1"]);
  t.after(() => srv.stop());
  const room = "e2e-package";
  for (let i = 0; i < 2; i++) await join(srv.base, room);
  files["/shop.html"] = `<!doctype html><meta charset="utf-8"><title>shop</title>
<script type="module">
import { connect, version } from "/waitroom.mjs";
window.seen = [];
window.clientVersion = version;
window.wr = connect({ room: "${room}", base: "${srv.base}",
  onState: (s, i) => window.seen.push({ status: s && s.status, position: s && s.position, token: s && s.token, usable: i.usable, transport: i.transport }) });
</script>`;

  const b = await openBrowser();
  t.after(() => b.close());
  const { page } = b;
  const scripts = [];
  page.on("request", (r) => { if (r.resourceType() === "script") scripts.push(r.url()); });
  await page.goto(`${site.base}/shop.html`);
  await page.waitForFunction(() => window.seen && window.seen.some((s) => s.status === "waiting" && s.position >= 1), null, { timeout: 15000 });
  await page.waitForFunction(() => window.seen.some((s) => s.usable && s.token), null, { timeout: 30000 });
  const seen = await page.evaluate(() => window.seen);
  const admitted = seen.find((s) => s.usable);
  assert.equal(admitted.token.split(".").length, 3, "the entry token is a JWS");
  assert.ok(seen.some((s) => s.transport === "ws"), `transports ${seen.map((s) => s.transport)}`);
  assert.equal(typeof (await page.evaluate(() => window.clientVersion)), "string");
  assert.deepEqual(scripts, [`${site.base}/waitroom.mjs`], "the client came from the site, not the server");
  assert.deepEqual(unexpected(b.errors, [/status of 401/, /status of 404/]), [], "console errors");
});

test("the declarations type-check a use of the whole API and refuse a wrong one", async () => {
  const tsc = path.join(here, "node_modules", "typescript", "bin", "tsc");
  const config = { compilerOptions: { strict: true, noEmit: true, module: "nodenext", moduleResolution: "nodenext", target: "es2020", lib: ["es2020", "dom"], types: [] } };
  const check = async (name, source) => {
    const dir = path.join(unpacked.dir, name);
    fs.mkdirSync(dir, { recursive: true });
    fs.writeFileSync(path.join(dir, "tsconfig.json"), JSON.stringify({ ...config, files: ["use.mts"] }));
    fs.writeFileSync(path.join(dir, "use.mts"), source);
    return run("node", [tsc, "-p", dir]).then(() => "", (err) => err.stdout + err.stderr);
  };
  const good = await check("good", `import Waitroom, { connect, shown, solvePow, version, type State, type Info, type Connection } from "@waitroom/client";
const wr: Connection = connect({
  room: "drop", base: "https://queue.example.com", transports: ["ws", "sse", "poll"], remember: "none", invite: "inv1.x",
  onState(state: State | null, info: Info) {
    if (state?.status === "admitted" && info.usable) console.log(state.token, state.expiresAt, wr.visitor());
    if (state?.status === "waiting") console.log(shown(state, 500), state.etaSeconds, state.etaRange?.high.toFixed(), info.error?.code, info.retryInMs);
  },
  onTransport: (name) => console.log(name === "sse"),
});
const s: State | null = wr.state();
wr.info().otherTab;
wr.rejoin();
wr.close();
wr.leave().then(() => undefined);
solvePow("c", 16).then((nonce: string) => nonce.length);
const v: string = version + Waitroom.version;
console.log(s, v, Waitroom.connect === connect);
`);
  assert.equal(good, "", "a right use fails to type-check");
  const bad = await check("bad", `import { connect } from "@waitroom/client";
connect({ base: "https://queue.example.com" });
connect({ room: "drop", transports: ["carrier-pigeon"] });
connect({ room: "drop", onState: (s) => s.position.toFixed() });
`);
  assert.match(bad, /use\.mts\(2,9\).*room/s, bad);
  assert.match(bad, /carrier-pigeon/, bad);
  assert.match(bad, /possibly 'null'|possibly 'undefined'/, bad);
});
