// The connector's cost per request on workerd: requests through it in
// turn, one at a time over one kept-alive connection, of three kinds:
//   bare:    a Worker that answers at once (workerd's own cost, the floor);
//   free:    the connector on a path no route guards (routes, host, path);
//   session: the connector on a guarded path with a valid edge session
//            (the JWKS cached: a signature check and a SHA-256).
// The origin is a Response made in the Worker, so only the connector is
// measured. The edge session is a real one, from a real waitroom.
// Usage: node clients/edge/bench/bench.mjs [requests per kind, default 3000]
import { readFileSync } from "node:fs";
import { World, admit } from "../test/harness.mjs";
import { startWorkerd } from "../test/workerd.mjs";

const n = Number(process.argv[2] || 3000);

const WORKER = `import { handle } from "./edge.mjs";
const ok = () => new Response("ok");
export default {
  fetch(request, env) {
    if (new URL(request.url).pathname === "/bare") return ok();
    return handle(request, env, ok);
  },
};
`;

function pct(xs, p) {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor(p * s.length))];
}

const world = new World();
await world.start();
let w;
try {
  w = await startWorkerd(world.env(), {}, WORKER);
  const { jar } = await admit(w.url, "open-room");
  const cookie = jar.header(["wr_visitor", "wr_session_open-room_edge"]);
  const kinds = {
    bare: [`${w.url}/bare`, {}],
    free: [`${w.url}/about`, {}],
    session: [`${w.url}/shop/x`, { cookie }],
  };
  const times = { bare: [], free: [], session: [] };
  const once = async (k) => {
    const [url, headers] = kinds[k];
    const t0 = process.hrtime.bigint();
    const r = await fetch(url, { headers });
    const b = await r.text();
    const us = Number(process.hrtime.bigint() - t0) / 1000;
    if (b !== "ok") throw new Error(`${k}: ${r.status} ${b.slice(0, 200)}`);
    return us;
  };
  for (let i = 0; i < 200; i++) for (const k of Object.keys(kinds)) await once(k); // warm up
  // The edge session lives at most 60 s; should the run outlast it, the
  // session requests stop answering "ok" and the run fails rather than
  // measure something else.
  for (let i = 0; i < n; i++) {
    for (const k of Object.keys(kinds)) times[k].push(await once(k));
  }
  const version = JSON.parse(readFileSync(new URL("../node_modules/workerd/package.json", import.meta.url), "utf8")).version;
  console.log(`workerd ${version}, ${n} requests per kind, interleaved, one connection; µs per request`);
  console.log("kind     p50      p90      p99");
  for (const k of Object.keys(kinds)) {
    console.log(`${k.padEnd(8)} ${pct(times[k], 0.5).toFixed(0).padStart(6)} ${pct(times[k], 0.9).toFixed(0).padStart(8)} ${pct(times[k], 0.99).toFixed(0).padStart(8)}`);
  }
  const d = (a, b, p) => (pct(times[a], p) - pct(times[b], p)).toFixed(0);
  console.log(`the connector on a free path:         +${d("free", "bare", 0.5)} µs at p50 over bare`);
  console.log(`a pass with a valid edge session:     +${d("session", "bare", 0.5)} µs at p50 over bare (+${d("session", "free", 0.5)} over a free path)`);
} finally {
  if (w) await w.close();
  await world.close();
}
