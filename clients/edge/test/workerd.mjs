// workerd from npm (the Workers runtime) running the connector: a config
// written for free loopback ports, started and stopped by its PID.
import { spawn } from "node:child_process";
import { mkdtempSync, writeFileSync, copyFileSync, existsSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, dirname } from "node:path";
import { fileURLToPath } from "node:url";
import { freePort, waitFor, stop } from "./harness.mjs";

const here = join(dirname(fileURLToPath(import.meta.url)), "..");

export function workerdBin() {
  const os = process.platform === "win32" ? "windows" : process.platform;
  const arch = process.arch === "x64" ? "64" : process.arch;
  const bin = join(here, "node_modules", "@cloudflare", `workerd-${os}-${arch}`, "bin", os === "windows" ? "workerd.exe" : "workerd");
  if (!existsSync(bin)) {
    throw new Error(`workerd is not installed in clients/edge/node_modules: run make deps-edge (npm ci --prefix clients/edge)`);
  }
  return bin;
}

// The Worker: the connector, with the origin as next.
const WORKER = `import { handle } from "./edge.mjs";
export default {
  fetch(request, env) {
    return handle(request, env, (r) => {
      const u = new URL(r.url);
      return fetch(new Request(env.ORIGIN_URL + u.pathname + u.search, r));
    });
  },
};
`;

function capnpString(s) {
  return JSON.stringify(String(s));
}

// startWorkerd runs the connector in workerd with env's bindings, on port
// (0: a free one); it returns the process and its address.
export async function startWorkerd(env, extraModules = {}, main = WORKER, port = 0) {
  const dir = mkdtempSync(join(tmpdir(), "waitroom-workerd-"));
  copyFileSync(join(here, "edge.mjs"), join(dir, "edge.mjs"));
  writeFileSync(join(dir, "worker.mjs"), main);
  for (const [name, text] of Object.entries(extraModules)) writeFileSync(join(dir, name), text);
  port = port || await freePort();
  const bindings = Object.entries(env).map(([k, v]) => `(name = ${capnpString(k)}, text = ${capnpString(v)})`).join(",\n      ");
  const modules = ["worker.mjs", "edge.mjs", ...Object.keys(extraModules)]
    .map((m) => `(name = ${capnpString(m)}, esModule = embed ${capnpString(m)})`).join(",\n      ");
  writeFileSync(join(dir, "config.capnp"), `using Workerd = import "/workerd/workerd.capnp";

const config :Workerd.Config = (
  services = [
    (name = "main", worker = .edge),
    # Loopback is where waitroom and the origin run here.
    (name = "loopback", network = (allow = ["local", "private", "public"])),
  ],
  sockets = [ (name = "http", address = "127.0.0.1:${port}", http = (), service = "main") ],
);

const edge :Workerd.Worker = (
  modules = [
      ${modules}
  ],
  compatibilityDate = "2025-09-01",
  bindings = [
      ${bindings}
  ],
  globalOutbound = "loopback",
);
`);
  const p = spawn(workerdBin(), ["serve", join(dir, "config.capnp"), "--verbose"], { stdio: ["ignore", "pipe", "pipe"] });
  p.output = "";
  p.stdout.on("data", (d) => { p.output += d; });
  p.stderr.on("data", (d) => { p.output += d; });
  const url = `http://127.0.0.1:${port}`;
  await waitFor("workerd to listen", async () => {
    if (p.exitCode !== null) throw new Error("workerd exited:\n" + p.output);
    await fetch(url + "/__up");
    return true;
  }).catch((e) => { stop(p); throw e; });
  return {
    url, proc: p,
    async close() {
      await stop(p);
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
