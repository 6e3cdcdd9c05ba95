// @waitroom/edge: the waitroom gateway at the edge, on the Fetch API and
// WebCrypto only, so one file runs on Cloudflare Workers, Deno, Bun, Vercel's
// and Netlify's edge functions and Node 20+.
//
// It decides as the Go gateway (gateway/) does: the same routes file, host
// and path normalisation (normalizePath is gateway.NormalizePath), bypass
// rules, and the shared test vectors (gateway/testdata/vectors.json) hold
// both to it. A guarded request passes on an edge session alone (a JWT
// checked against waitroom's JWKS, bound to the visitor's credential); without
// one the edge asks waitroom (POST /api/v1/rooms/{room}/session), and when
// waitroom cannot be reached the room's fail mode decides.

export const version = "0.1.0";

const SESSION_TYPE = "wr-session+jwt";
const SESSION_AUDIENCE = "waitroom:edge";
const GATEWAY_HEADERS = ["x-waitroom-room", "x-waitroom-visitor", "x-waitroom-fail-open"];

/** An error for a path apps could read in more than one way. */
export class AmbiguousPathError extends Error {
  constructor(why) {
    super("ambiguous request path: " + why);
    this.name = "AmbiguousPathError";
  }
}

function isHex(c) {
  return (c >= 48 && c <= 57) || (c >= 65 && c <= 70) || (c >= 97 && c <= 102);
}

// decodeSegment percent-decodes one segment to bytes, refusing what
// gateway.NormalizePath refuses.
function decodeSegment(s) {
  const out = [];
  const bytes = new TextEncoder().encode(s);
  for (let i = 0; i < bytes.length; i++) {
    let c = bytes[i];
    if (c === 37) { // %
      if (i + 2 >= bytes.length || !isHex(bytes[i + 1]) || !isHex(bytes[i + 2])) {
        throw new AmbiguousPathError("an invalid percent escape");
      }
      c = parseInt(String.fromCharCode(bytes[i + 1], bytes[i + 2]), 16);
      i += 2;
      if (c === 47) throw new AmbiguousPathError("an encoded slash (%2F)");
      if (c === 35) throw new AmbiguousPathError("an encoded # (%23)");
    }
    if (c === 92) throw new AmbiguousPathError("a backslash");
    if (c < 0x20 || c === 0x7f) throw new AmbiguousPathError("a control character or NUL");
    out.push(c);
  }
  return out;
}

/**
 * normalizePath returns the path of a request target the way an app that
 * decodes it sees it, exactly as gateway.NormalizePath: the query and
 * fragment go, each segment is percent-decoded once and loses its ;params,
 * dot-segments are resolved, runs of slashes become one, a trailing slash
 * stays. It throws AmbiguousPathError for an invalid escape, an encoded
 * slash or #, a backslash, a control byte, a .. above the root, or a
 * target that does not start with /.
 */
export function normalizePath(raw) {
  const cut = raw.search(/[?#]/);
  if (cut >= 0) raw = raw.slice(0, cut);
  if (raw === "" || raw[0] !== "/") throw new AmbiguousPathError("it does not start with /");
  const segs = [];
  let trailing = false;
  for (const s of raw.slice(1).split("/")) {
    let seg = decodeSegment(s);
    const semi = seg.indexOf(59); // ;
    if (semi >= 0) seg = seg.slice(0, semi);
    const text = latin(seg);
    if (text === "" || text === ".") {
      trailing = true;
      continue;
    }
    if (text === "..") {
      if (segs.length === 0) throw new AmbiguousPathError("a .. segment climbs above the root");
      segs.pop();
      trailing = true;
      continue;
    }
    segs.push(seg);
    trailing = false;
  }
  if (segs.length === 0) return "/";
  // Go strings are bytes: join the bytes, then read them as UTF-8 (what
  // the app sees); invalid UTF-8 keeps its bytes' replacement characters,
  // which no pattern names.
  const parts = [];
  for (const seg of segs) parts.push(47, ...seg);
  if (trailing) parts.push(47);
  return new TextDecoder().decode(new Uint8Array(parts));
}

function latin(bytes) {
  return bytes.length > 2 ? "x" : String.fromCharCode(...bytes);
}

/** normalizeHost is gateway.NormalizeHost: lower case, no trailing dot, the port kept. */
export function normalizeHost(host) {
  let [name, port] = splitHost(host.trim().toLowerCase());
  if (name.endsWith(".")) name = name.slice(0, -1);
  return port !== "" ? name + ":" + port : name;
}

function splitHost(host) {
  const i = host.lastIndexOf(":");
  if (i < 0 || host.slice(i).includes("]")) return [host, ""];
  if (!host.startsWith("[") && host.split(":").length > 2) return [host, ""];
  return [host.slice(0, i), host.slice(i + 1)];
}

function matchHost(want, host) {
  if (want === "") return true;
  const [wname, wport] = splitHost(want);
  const [name, port] = splitHost(host);
  if (wport !== "" && wport !== port) return false;
  if (wname.startsWith("*")) {
    const sub = wname.slice(1);
    return name.endsWith(sub) && name.length > sub.length;
  }
  return name === wname;
}

// globMatch is Go's path.Match: * and ? never cross a /, [...] classes.
function globMatch(pattern, name) {
  let re = "^";
  for (let i = 0; i < pattern.length; i++) {
    const c = pattern[i];
    if (c === "*") re += "[^/]*";
    else if (c === "?") re += "[^/]";
    else if (c === "[") {
      const end = pattern.indexOf("]", i + 2);
      if (end < 0) return false;
      let cls = pattern.slice(i + 1, end);
      if (cls[0] === "^") cls = "^" + cls.slice(1).replace(/[\]\\/]/g, "\\$&");
      else cls = cls.replace(/[\]\\/^]/g, "\\$&");
      re += "(?![/])[" + cls + "]";
      i = end;
    } else if (c === "\\" && i + 1 < pattern.length) {
      re += escapeRe(pattern[++i]);
    } else re += escapeRe(c);
  }
  return new RegExp(re + "$", "u").test(name);
}

function escapeRe(c) {
  return c.replace(/[.*+?^${}()|[\]\\/]/g, "\\$&");
}

/** matchPath is gateway.MatchPath. */
export function matchPath(pattern, p) {
  if (pattern.startsWith("*.")) return p.endsWith(pattern.slice(1));
  if (pattern.endsWith("/*")) {
    const prefix = pattern.slice(0, -2);
    if (!/[*?[]/.test(prefix)) return p === prefix || p.startsWith(prefix + "/");
    const n = prefix.split("/").length - 1;
    const segs = p.split("/");
    if (segs.length < n + 1) return false;
    return globMatch(prefix, segs.slice(0, n + 1).join("/"));
  }
  if (!/[*?[]/.test(pattern)) return p === pattern;
  return globMatch(pattern, p);
}

const ROOM_RE = /^[a-z0-9][a-z0-9-]{0,63}$/;
const COOKIE_RE = /^[A-Za-z0-9_-]{1,64}$/;
const HOST_RE = /^((\*\.)?[a-z0-9]([a-z0-9.-]*[a-z0-9])?|\[[0-9a-f:.]+\])(:[0-9]{1,5})?$/;

/**
 * parseRoutes reads a routes file in its JSON form (the YAML file's
 * fields: routes, bypass, hosts), checked as gateway.Parse checks it.
 */
export function parseRoutes(doc) {
  if (typeof doc === "string") doc = JSON.parse(doc);
  const known = (o, keys, what) => {
    for (const k of Object.keys(o || {})) if (!keys.includes(k)) throw new Error(`routes: ${what}: field ${k} not found`);
  };
  known(doc, ["routes", "bypass", "hosts"], "document");
  const cfg = { routes: [], bypass: { paths: [], cidrs: [], header: "", secret: "" }, hosts: [] };
  for (const r of doc.routes || []) {
    known(r, ["match", "room", "methods", "cookie"], "route");
    const slash = (r.match || "").indexOf("/");
    if (slash < 0) throw new Error(`routes: match ${JSON.stringify(r.match)}: want host/path`);
    let host = r.match.slice(0, slash);
    if (host === "*") host = "";
    host = normalizeHost(host);
    if (host !== "" && !HOST_RE.test(host)) throw new Error(`routes: match ${JSON.stringify(r.match)}: invalid host`);
    const path = "/" + r.match.slice(slash + 1);
    checkPattern(path);
    if (!ROOM_RE.test(r.room || "")) throw new Error(`routes: room ${JSON.stringify(r.room)}: names match ${ROOM_RE.source}`);
    if (r.cookie !== undefined && !COOKIE_RE.test(r.cookie)) throw new Error(`routes: cookie ${JSON.stringify(r.cookie)}: letters, digits, _ and - only`);
    const methods = (r.methods || []).map((m) => String(m).trim().toUpperCase());
    for (const m of methods) if (!/^[A-Z]{1,16}$/.test(m)) throw new Error(`routes: method ${JSON.stringify(m)} is not an HTTP method`);
    cfg.routes.push({ host, path, folded: path.toLowerCase(), room: r.room, methods, cookie: r.cookie || "", cookieSet: r.cookie !== undefined });
  }
  nameCookies(cfg.routes);
  for (const h of doc.hosts || []) {
    const n = normalizeHost(h);
    if (n === "*") { cfg.hosts.push(""); continue; }
    if (!HOST_RE.test(n)) throw new Error(`routes: hosts: ${JSON.stringify(h)} is not a host name or address`);
    cfg.hosts.push(n);
  }
  const b = doc.bypass || {};
  known(b, ["paths", "cidrs", "header"], "bypass");
  for (const p of b.paths || []) { checkPattern(p); cfg.bypass.paths.push(p); }
  for (const c of b.cidrs || []) cfg.bypass.cidrs.push(parseCIDR(String(c).trim()));
  if (b.header) {
    known(b.header, ["name", "secret"], "bypass: header");
    if (!b.header.name) throw new Error("routes: bypass: header: name is required");
    // The secret may come apart (WAITROOM_BYPASS_SECRET); when written here
    // it is held to waitroom's rule.
    if (b.header.secret !== undefined && String(b.header.secret).length < 16) throw new Error("routes: bypass: header: secret must be at least 16 bytes");
    cfg.bypass.header = b.header.name;
    cfg.bypass.secret = b.header.secret || "";
  }
  return cfg;
}

function checkPattern(p) {
  if (p.startsWith("*.")) {
    if (/[*?[/]/.test(p.slice(1))) throw new Error("routes: a suffix pattern is *.ext");
    return;
  }
  if (!p.startsWith("/")) throw new Error(`routes: ${JSON.stringify(p)}: a path pattern starts with / (or is *.ext)`);
  if (p.endsWith("/*")) p = p.slice(0, -1);
  if (!globValid(p)) throw new Error(`routes: ${JSON.stringify(p)}: bad pattern`);
}

// globValid is what Go's path.Match refuses as ErrBadPattern: an unclosed
// or empty [class], a bad range, a trailing backslash.
function globValid(p) {
  for (let i = 0; i < p.length; i++) {
    const c = p[i];
    if (c === "\\") {
      if (++i >= p.length) return false;
    } else if (c === "[") {
      i++;
      if (p[i] === "^") i++;
      let n = 0;
      for (;; n++) {
        if (i >= p.length) return false;
        if (p[i] === "]" && n > 0) break;
        let lo = p[i];
        if (lo === "-" || lo === "]") return false;
        if (lo === "\\") lo = p[++i];
        if (lo === undefined) return false;
        i++;
        if (p[i] === "-") {
          let hi = p[++i];
          if (hi === "-" || hi === "]") return false;
          if (hi === "\\") hi = p[++i];
          if (hi === undefined || hi < lo) return false;
          i++;
        }
      }
    }
  }
  return true;
}

// nameCookies is gateway.Config.NameCookies: a room's one session cookie.
function nameCookies(routes) {
  const named = new Map();
  for (const r of routes) {
    if (!r.cookieSet) continue;
    if (named.has(r.room) && named.get(r.room) !== r.cookie) throw new Error(`routes: room ${r.room} has two session cookies`);
    named.set(r.room, r.cookie);
  }
  const owner = new Map();
  for (const r of routes) {
    r.cookie = named.get(r.room) || "wr_session_" + r.room;
    if (owner.has(r.cookie) && owner.get(r.cookie) !== r.room) throw new Error(`routes: cookie ${r.cookie} is the session cookie of two rooms`);
    owner.set(r.cookie, r.room);
  }
}

// An address as [bits, BigInt value]; v4-mapped v6 addresses read as v4.
function parseAddr(s) {
  if (/^\d+\.\d+\.\d+\.\d+$/.test(s)) {
    const p = s.split(".").map(Number);
    if (p.some((n) => n > 255)) return null;
    return [32, BigInt(((p[0] << 24) >>> 0) + (p[1] << 16) + (p[2] << 8) + p[3])];
  }
  if (!s.includes(":")) return null;
  s = s.replace(/^\[|\]$/g, "").replace(/%.*$/, "");
  const v4 = s.match(/^(.*:)(\d+\.\d+\.\d+\.\d+)$/);
  let tail = [];
  if (v4) {
    const a = parseAddr(v4[2]);
    if (!a) return null;
    s = v4[1] + "0:0";
    tail = [Number(a[1] >> 16n), Number(a[1] & 0xffffn)];
  }
  const halves = s.split("::");
  if (halves.length > 2) return null;
  const head = halves[0] ? halves[0].split(":") : [];
  const rest = halves.length === 2 && halves[1] ? halves[1].split(":") : [];
  const fill = halves.length === 2 ? 8 - head.length - rest.length : 0;
  const groups = [...head, ...Array(fill).fill("0"), ...rest];
  if (groups.length !== 8 || groups.some((g) => !/^[0-9a-fA-F]{1,4}$/.test(g))) return null;
  if (tail.length) { groups[6] = tail[0].toString(16); groups[7] = tail[1].toString(16); }
  let v = 0n;
  for (const g of groups) v = (v << 16n) | BigInt(parseInt(g, 16));
  if (v >> 32n === 0xffffn) return [32, v & 0xffffffffn]; // ::ffff:a.b.c.d
  return [128, v];
}

function parseCIDR(s) {
  const [addr, bits] = s.split("/");
  const a = parseAddr(addr);
  if (!a) throw new Error(`routes: bypass: cidr ${JSON.stringify(s)}: not an address`);
  let n = bits === undefined ? a[0] : Number(bits);
  if (!Number.isInteger(n) || n < 0 || n > a[0]) throw new Error(`routes: bypass: cidr ${JSON.stringify(s)}: bad prefix length`);
  // A v4-mapped v6 prefix: counted in v4 bits, as netip's Unmap does for the address.
  if (a[0] === 32 && addr.includes(":")) n = Math.max(0, n - 96);
  return { bits: a[0], n, net: a[1] >> BigInt(a[0] - n) };
}

function inCIDR(addr, pfx) {
  return addr[0] === pfx.bits && addr[1] >> BigInt(pfx.bits - pfx.n) === pfx.net;
}

function timingSafeEqual(a, b) {
  const x = new TextEncoder().encode(a);
  const y = new TextEncoder().encode(b);
  let diff = x.length ^ y.length;
  for (let i = 0; i < x.length; i++) diff |= x[i] ^ (y[i % (y.length || 1)] || 0);
  return diff === 0;
}

/**
 * decide is the gateway's decision on a request without looking at its
 * session: {action: "pass"}, {action: "guard", route} (the room's queue
 * decides), {action: "invalid_path"} or {action: "unknown_host"}.
 * target is the request target as sent (path and query).
 */
export function decide(cfg, { method = "GET", host, target, client = "", header = () => "" }) {
  if (cfg.routes.length === 0) return { action: "pass" };
  let path;
  try {
    path = normalizePath(target);
  } catch (e) {
    if (e instanceof AmbiguousPathError) return { action: "invalid_path" };
    throw e;
  }
  host = normalizeHost(host);
  if (!serves(cfg, host)) return { action: "unknown_host" };
  if (bypassed(cfg, path, client, header)) return { action: "pass" };
  const folded = path.toLowerCase();
  for (const r of cfg.routes) {
    if (!matchHost(r.host, host) || !matchPath(r.folded, folded)) continue;
    if (r.methods.length > 0 && !r.methods.includes(method)) continue;
    return { action: "guard", route: r, path };
  }
  return { action: "pass", path };
}

function serves(cfg, host) {
  let named = false;
  for (const r of cfg.routes) {
    if (r.host === "") continue;
    named = true;
    if (matchHost(r.host, host)) return true;
  }
  if (!named) return true;
  return cfg.hosts.some((h) => matchHost(h, host));
}

function bypassed(cfg, path, client, header) {
  if (cfg.bypass.paths.some((p) => matchPath(p, path))) return true;
  const addr = client ? parseAddr(client) : null;
  if (addr && cfg.bypass.cidrs.some((p) => inCIDR(addr, p))) return true;
  if (cfg.bypass.header && cfg.bypass.secret) {
    const v = header(cfg.bypass.header);
    if (v && timingSafeEqual(v, cfg.bypass.secret)) return true;
  }
  return false;
}

// ---- edge sessions: JWTs checked against the JWKS ----

function b64url(s) {
  const bin = atob(s.replace(/-/g, "+").replace(/_/g, "/"));
  const out = new Uint8Array(bin.length);
  for (let i = 0; i < bin.length; i++) out[i] = bin.charCodeAt(i);
  return out;
}

function toB64url(bytes) {
  let bin = "";
  for (const b of bytes) bin += String.fromCharCode(b);
  return btoa(bin).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
}

async function importKey(jwk) {
  if (jwk.kty === "OKP" && jwk.crv === "Ed25519") {
    const key = { kty: "OKP", crv: "Ed25519", x: jwk.x };
    try {
      return { alg: "EdDSA", key: await crypto.subtle.importKey("jwk", key, { name: "Ed25519" }, false, ["verify"]), params: { name: "Ed25519" } };
    } catch {
      // Older Workers runtimes name it NODE-ED25519.
      const params = { name: "NODE-ED25519", namedCurve: "NODE-ED25519" };
      return { alg: "EdDSA", key: await crypto.subtle.importKey("jwk", key, params, false, ["verify"]), params };
    }
  }
  if (jwk.kty === "EC" && jwk.crv === "P-256") {
    const key = { kty: "EC", crv: "P-256", x: jwk.x, y: jwk.y };
    return { alg: "ES256", key: await crypto.subtle.importKey("jwk", key, { name: "ECDSA", namedCurve: "P-256" }, false, ["verify"]),
      params: { name: "ECDSA", hash: "SHA-256" } };
  }
  return null;
}

/**
 * Keys caches a JWKS for as long as its Cache-Control max-age says (at
 * least 10 s, at most a day), and fetches again, at most once a second, on
 * a key id it does not know: a rotated key is picked up on its first token.
 */
export class Keys {
  constructor(url, fetcher = (u) => fetch(u, { signal: AbortSignal.timeout(2000) })) {
    this.url = url;
    this.fetcher = fetcher;
    this.keys = new Map();
    this.until = 0;
    this.lastFetch = -Infinity;
    this.pending = null;
  }

  async key(kid, now = Date.now()) {
    if (now >= this.until || (!this.keys.has(kid) && now - this.lastFetch >= 1000)) {
      try {
        await this.refresh(now);
      } catch (e) {
        // Out of reach: the keys held serve on, and the next try is in 10 s.
        if (this.keys.size === 0) throw e;
        this.until = Math.max(this.until, now + 10_000);
      }
    }
    return this.keys.get(kid) || null;
  }

  refresh(now) {
    if (!this.pending) {
      this.pending = this.load(now).finally(() => { this.pending = null; });
    }
    return this.pending;
  }

  async load(now) {
    this.lastFetch = now;
    const resp = await this.fetcher(this.url);
    if (!resp.ok) throw new Error(`waitroom edge: jwks: ${resp.status}`);
    const doc = await resp.json();
    const keys = new Map();
    for (const jwk of doc.keys || []) {
      if (!jwk.kid) continue;
      const k = await importKey(jwk);
      if (k) keys.set(jwk.kid, k);
    }
    this.keys = keys;
    const m = /max-age=(\d+)/.exec(resp.headers.get("cache-control") || "");
    const age = Math.min(Math.max(m ? Number(m[1]) : 300, 10), 86400);
    this.until = now + age * 1000;
  }
}

/** credentialHash is entry.CredentialHash: the first 16 bytes of SHA-256, base64url. */
export async function credentialHash(credential) {
  const h = new Uint8Array(await crypto.subtle.digest("SHA-256", new TextEncoder().encode(credential)));
  return toB64url(h.subarray(0, 16));
}

/**
 * verifySession checks an edge session: its type, signature (a key of the
 * JWKS), audience, room, issuer (when iss is given), time window, and that
 * credential is the one it is bound to. It returns its claims or null.
 */
export async function verifySession(token, { keys, room, credential, iss = "", now = Date.now() }) {
  if (!token || token.length > 4096 || !credential) return null;
  const parts = token.split(".");
  if (parts.length !== 3) return null;
  let head, claims, sig;
  try {
    head = JSON.parse(new TextDecoder().decode(b64url(parts[0])));
    claims = JSON.parse(new TextDecoder().decode(b64url(parts[1])));
    sig = b64url(parts[2]);
  } catch {
    return null;
  }
  if (head.typ !== SESSION_TYPE || head.crit !== undefined || (head.alg !== "EdDSA" && head.alg !== "ES256")) return null;
  const k = await keys.key(head.kid, now);
  if (!k || k.alg !== head.alg) return null;
  const ok = await crypto.subtle.verify(k.params, k.key, sig, new TextEncoder().encode(parts[0] + "." + parts[1]));
  if (!ok) return null;
  if (typeof claims !== "object" || claims === null || typeof claims.exp !== "number" || typeof claims.iat !== "number") return null;
  const nbf = typeof claims.wr_nbf_ms === "number" ? claims.wr_nbf_ms : typeof claims.nbf === "number" ? claims.nbf * 1000 : NaN;
  if (claims.aud !== SESSION_AUDIENCE || claims.wr_room !== room || typeof claims.sub !== "string" || claims.sub === "" ||
      (iss && claims.iss !== iss) || !(now >= nbf) || !(now < claims.exp * 1000)) return null;
  if (claims.wr_cred !== await credentialHash(credential)) return null;
  return claims;
}

// ---- the handler ----

function cookies(request) {
  const out = new Map();
  for (const part of (request.headers.get("cookie") || "").split(";")) {
    const i = part.indexOf("=");
    if (i < 0) continue;
    const k = part.slice(0, i).trim();
    if (!out.has(k)) out.set(k, part.slice(i + 1).trim());
  }
  return out;
}

function wantsPage(accept) { return accept.includes("text/html"); }
function wantsJSON(accept) { return accept.includes("application/json") && !accept.includes("text/html"); }

const MESSAGES = {
  invalid_path: "the request path has an encoded slash, a backslash, a control character, an invalid escape or a .. above the root",
  unknown_host: "this gateway serves no site under the requested host name",
  unavailable: "the queue store is unreachable; retry shortly",
};

function refusal(status, code, request) {
  const h = { "cache-control": "no-store" };
  if (code === "unavailable") h["retry-after"] = "2";
  if (wantsPage(request.headers.get("accept") || "")) {
    h["content-type"] = "text/html; charset=utf-8";
    return new Response(`<!doctype html><html lang="en"><meta charset="utf-8"><title>${status}</title><p data-code="${code}">${MESSAGES[code]}.</p>`, { status, headers: h });
  }
  h["content-type"] = "application/json; charset=utf-8";
  return new Response(JSON.stringify({ error: { code, message: MESSAGES[code] } }), { status, headers: h });
}

// Per isolate: the parsed routes, the JWKS cache, each room's fail mode as
// waitroom last said it, and the sessions ended here.
const states = new Map();

function stateOf(env) {
  const routes = typeof env.WAITROOM_ROUTES === "string" ? env.WAITROOM_ROUTES : JSON.stringify(env.WAITROOM_ROUTES || {});
  const key = routes + "\n" + env.WAITROOM_URL + "\n" + (env.WAITROOM_BYPASS_SECRET || "");
  let st = states.get(key);
  if (!st) {
    if (!env.WAITROOM_URL) throw new Error("waitroom edge: WAITROOM_URL is not set");
    const cfg = parseRoutes(routes);
    if (env.WAITROOM_BYPASS_SECRET) cfg.bypass.secret = env.WAITROOM_BYPASS_SECRET;
    if (cfg.bypass.header && cfg.bypass.secret.length < 16) throw new Error("waitroom edge: the bypass header's secret must be at least 16 bytes (WAITROOM_BYPASS_SECRET)");
    const base = env.WAITROOM_URL.replace(/\/+$/, "");
    st = { cfg, base, keys: new Keys(base + "/.well-known/jwks.json"), failModes: new Map(), ended: new Map(),
      page: env.WAITROOM_PAGE || "/waitroom/" };
    states.set(key, st);
  }
  return st;
}

// The client's address: the platform's (info.clientAddress), or on
// Cloudflare its CF-Connecting-IP (set by Cloudflare, not by the client).
// Never X-Forwarded-For: the edge is the first hop.
function clientOf(request, info) {
  if (info && info.clientAddress) return info.clientAddress;
  if (request.cf) return request.headers.get("cf-connecting-ip") || "";
  return "";
}

// originRequest is request with the client's X-Waitroom-* headers gone
// (however spelt) and the gateway's own set.
function originRequest(request, url, room, visitor, failOpen) {
  const headers = new Headers();
  for (const [k, v] of request.headers) {
    const name = k.toLowerCase().replace(/_/g, "-");
    if (GATEWAY_HEADERS.includes(name)) continue;
    headers.append(k, v);
  }
  if (room) {
    headers.set("x-waitroom-room", room);
    headers.set("x-waitroom-visitor", visitor);
  }
  if (failOpen) headers.set("x-waitroom-fail-open", "1");
  headers.set("x-forwarded-host", url.host);
  headers.set("x-forwarded-proto", url.protocol.slice(0, -1));
  const init = { method: request.method, headers, redirect: "manual" };
  if (request.method !== "GET" && request.method !== "HEAD") {
    init.body = request.body;
    init.duplex = "half";
  }
  return new Request(url.toString(), init);
}

function mutable(resp) {
  return new Response(resp.body, { status: resp.status, statusText: resp.statusText, headers: new Headers(resp.headers) });
}

function setCookies(resp) {
  if (typeof resp.headers.getSetCookie === "function") return resp.headers.getSetCookie();
  const v = resp.headers.get("set-cookie");
  return v ? [v] : [];
}

/**
 * handle is the edge gateway: it returns the Response for request, from
 * next (the origin: (Request) => Promise<Response>), from waitroom, or its
 * own refusal. env holds the configuration (see edge.d.ts); info, when
 * the platform gives it, the client's address.
 */
export async function handle(request, env, next, info) {
  const st = stateOf(env);
  const url = new URL(request.url);
  const accept = request.headers.get("accept") || "";
  const header = (k) => request.headers.get(k) || "";
  // The waiting page and the API under its prefix: to waitroom, on the
  // visitor's host, so its cookies are first-party.
  const bare = st.page.replace(/\/$/, "");
  if (url.pathname === bare || url.pathname.startsWith(st.page)) {
    return proxyToWaitroom(st, request, url, clientOf(request, info));
  }
  const d = decide(st.cfg, { method: request.method, host: url.host, target: url.pathname, client: clientOf(request, info), header });
  if (d.action === "invalid_path") return refusal(400, "invalid_path", request);
  if (d.action === "unknown_host") return refusal(421, "unknown_host", request);
  if (d.action === "pass") return forward(st, next, originRequest(request, url, "", "", false), null);

  const rt = d.route;
  const jar = cookies(request);
  const credential = header("x-visitor") || jar.get(env.WAITROOM_VISITOR_COOKIE || "wr_visitor") || "";
  const edgeName = rt.cookie + "_edge";
  const now = Date.now();
  let claims = null;
  try {
    claims = await verifySession(jar.get(edgeName), { keys: st.keys, room: rt.room, credential, iss: env.WAITROOM_ISSUER || "", now });
  } catch {
    claims = null; // the JWKS out of reach: ask waitroom, whose fail mode decides
  }
  if (claims) {
    // A session ended here: its edge sessions signed before the end are refused.
    const ended = st.ended.get(rt.room + "|" + claims.sub);
    if (!(ended && ended.until > now && claims.iat * 1000 <= ended.at)) {
      const sess = { room: rt.room, visitor: claims.sub, cookie: rt.cookie };
      return forward(st, next, originRequest(request, url, rt.room, claims.sub, false), sess, [], env);
    }
  }
  // No edge session that holds: waitroom decides.
  let answer;
  try {
    const h = new Headers({ accept: accept || "*/*", "x-forwarded-host": url.host, "x-forwarded-proto": url.protocol.slice(0, -1) });
    for (const k of ["cookie", "x-visitor", "x-waitroom-session"]) if (request.headers.has(k)) h.set(k, request.headers.get(k));
    const client = clientOf(request, info);
    if (client) h.set("x-forwarded-for", client);
    answer = await fetch(`${st.base}/api/v1/rooms/${rt.room}/session`, { method: "POST", headers: h, signal: timeout(env) });
  } catch {
    answer = null;
  }
  if (answer && answer.headers.has("x-waitroom-fail-mode")) st.failModes.set(rt.room, answer.headers.get("x-waitroom-fail-mode"));
  if (!answer || (answer.status >= 500 && !(answer.headers.get("content-type") || "").includes("json"))) {
    // waitroom out of reach: the room's fail mode, as waitroom last said
    // it, else WAITROOM_FAIL_MODE (closed by default).
    const mode = st.failModes.get(rt.room) || env.WAITROOM_FAIL_MODE || "closed";
    if (mode === "open") return forward(st, next, originRequest(request, url, rt.room, "", true), null);
    return refusal(503, "unavailable", request);
  }
  if (answer.status === 200) {
    const room = answer.headers.get("x-waitroom-room") || rt.room;
    const visitor = answer.headers.get("x-waitroom-visitor") || "";
    const failOpen = answer.headers.get("x-waitroom-fail-open") === "1";
    const sess = visitor ? { room, visitor, cookie: rt.cookie } : null;
    // An API client let in on the spot gets its session and credential in
    // headers too, for when it keeps no cookies.
    const extra = [];
    for (const k of ["x-waitroom-session", "x-visitor"]) if (answer.headers.has(k)) extra.push([k, answer.headers.get(k)]);
    return forward(st, next, originRequest(request, url, room, visitor, failOpen), sess, setCookies(answer), env, extra);
  }
  if (answer.status === 401 && !wantsJSON(accept)) {
    // The return address is a path: the waiting page is on this host, and
    // waitroom may not be told which host that is (it believes
    // X-Forwarded-Host only from -trusted-proxies). A leading // would read
    // as another host: one slash, the same path to the app.
    const back = url.pathname.replace(/^\/+/, "/") + url.search;
    const loc = st.page + "?room=" + encodeURIComponent(rt.room) + "&return=" + encodeURIComponent(back);
    const h = new Headers({ location: loc, "cache-control": "no-store", "x-waitroom-room": rt.room });
    for (const c of setCookies(answer)) h.append("set-cookie", c);
    return new Response(null, { status: 302, headers: h });
  }
  // The API client's 429, the room's 503: as waitroom said them.
  const out = mutable(answer);
  out.headers.delete("x-waitroom-fail-mode");
  return out;
}

function timeout(env) {
  const ms = Number(env.WAITROOM_TIMEOUT_MS || 2000);
  return typeof AbortSignal.timeout === "function" ? AbortSignal.timeout(ms) : undefined;
}

// forward sends req to the origin and hands its response on with the
// cookies waitroom set; the origin's Waitroom-Session: end ends the session
// (through waitroom, with the service key) and never reaches the visitor.
async function forward(st, next, req, sess, cookiesToSet = [], env = {}, extra = []) {
  const resp = mutable(await next(req));
  const end = resp.headers.get("waitroom-session");
  resp.headers.delete("waitroom-session");
  for (const c of cookiesToSet) resp.headers.append("set-cookie", c);
  for (const [k, v] of extra) resp.headers.set(k, v);
  if (end && end.trim().toLowerCase() === "end" && sess) {
    const now = Date.now();
    if (st.ended.size >= 10_000) for (const [k, e] of st.ended) if (e.until <= now) st.ended.delete(k);
    // An edge session lives at most 60 s: past that, nothing signed before
    // the end is left to refuse.
    st.ended.set(sess.room + "|" + sess.visitor, { at: now, until: now + 60_000 });
    await endSession(st, env, sess);
    for (const name of [sess.cookie, sess.cookie + "_edge"]) {
      resp.headers.append("set-cookie", `${name}=; Path=/; Max-Age=0; HttpOnly; SameSite=Lax`);
    }
  }
  return resp;
}

async function endSession(st, env, sess) {
  if (!env.WAITROOM_SERVICE_KEY) return;
  try {
    await fetch(`${st.base}/api/v1/admin/rooms/${sess.room}/sessions/${encodeURIComponent(sess.visitor)}`, {
      method: "DELETE", headers: { authorization: "Bearer " + env.WAITROOM_SERVICE_KEY }, signal: timeout(env),
    });
  } catch {
    // The session ends at its edge session's expiry here, and at its idle end in waitroom.
  }
}

async function proxyToWaitroom(st, request, url, client) {
  const headers = new Headers(request.headers);
  headers.set("x-forwarded-host", url.host);
  headers.set("x-forwarded-proto", url.protocol.slice(0, -1));
  if (client) headers.set("x-forwarded-for", client);
  const init = { method: request.method, headers, redirect: "manual" };
  if (request.method !== "GET" && request.method !== "HEAD") {
    init.body = request.body;
    init.duplex = "half";
  }
  return fetch(st.base + url.pathname + url.search, init);
}

export default { handle };
