/*
 * waitroom.js: the browser client of a waitroom server. No dependencies.
 *
 *   <script src="https://queue.example.com/waitroom.js"></script>
 *   <script>
 *     var wr = Waitroom.connect({
 *       room: "drop-2026",                   // required
 *       base: "https://queue.example.com",   // optional; default: this page's origin
 *       transports: ["ws", "sse", "poll"],   // optional; tried in this order
 *       remember: "auto",                    // optional; where the credential is kept (below)
 *       invite: "inv1.…",                    // optional; an invite or priority code sent with the join
 *       onState: function (state, info) {},  // every change (see below)
 *       onTransport: function (name) {}      // "ws" | "sse" | "poll", when one goes live
 *     });
 *   </script>
 *
 * connect() joins the room at once and returns a handle:
 *   wr.state()    the last state object (or null before the first one)
 *   wr.info()     the last info object (see below)
 *   wr.visitor()  the visitor credential (send it as X-Visitor to the
 *                 protected API so it matches the entry token)
 *   wr.close()    stop: close the connection, cancel timers. Call it once the
 *                 visitor is done (e.g. the order is placed).
 *   wr.leave()    give the place (or the entry token) back, then close().
 *                 Returns a Promise.
 *   wr.rejoin()   take a new ticket (after "expired" or "not_in_queue").
 *
 * Waitroom.shown(state, elapsedMs) is the position a waiting state stands
 * for elapsedMs after it arrived: the queue moves at ratePerSecond, and a
 * live connection (ws, sse) is sent a new position only when that figure
 * drifts from the true one (by more than a quarter second of admissions or
 * a twentieth of the position), so a page that shows a position should
 * move it on with this between messages. Rounded up, never below 1; it
 * stands still while paused or degraded.
 *
 * Waitroom.solvePow(challenge, bits) resolves to the nonce that solves a
 * proof of work challenge (what connect() does by itself for a room that
 * asks for one), for a page that joins on its own.
 *
 * onState(state, info) is called for every state message and whenever info
 * changes. state is the server's message:
 *   { type: "state", room, status: "waiting" | "admitted" | "expired" |
 *     "not_in_queue" | "sold_out", position, etaSeconds, etaRange,
 *     ratePerSecond, nextPollMs, paused,
 *     degraded, token, notBefore, expiresAt, inDraw, chancePerMinute,
 *     activation }
 * In a room that admits by lottery a waiting state has no position: inDraw
 * is how many people are in the draw and chancePerMinute (0..1) the chance
 * of being drawn within a minute.
 * etaRange { low, high } (seconds), when sent, is the span the wait likely
 * falls in: around etaSeconds for a place (low <= etaSeconds <= high), the
 * 25th to 75th percentile of the wait in a lottery. Between messages count
 * both ends down with the time since the state arrived, like etaSeconds.
 * degraded is true while the server cannot reach its store: positions stand
 * still, the place is kept.
 * activation { state: "queueing" | "passing", since }, in a room that
 * queues only when busy (activation busy), says whether it is queueing
 * (anyone waits) or letting visitors straight through, and since when
 * (RFC 3339); absent in other rooms, or while the server does not know.
 * info is what the client knows beside it:
 *   transport      "ws" | "sse" | "poll" | null (not connected yet)
 *   validInMs      admitted only: milliseconds until the entry token may be
 *                  used. A poll can report "admitted" before the token's
 *                  notBefore; onState is called again when it reaches 0.
 *   usable         status is "admitted" and validInMs is 0
 *   startPosition  the position when this ticket was first seen (kept across
 *                  reloads), for a progress bar
 *   degraded       the server says positions are paused (its store is
 *                  unreachable, or it answers 5xx): the place is kept
 *   otherTab       this visitor already holds as many live connections as
 *                  the server allows (other tabs): this one polls instead
 *   error          null, or { code, message, status } for the problem being
 *                  retried or that stopped the client. code "network" means
 *                  the server could not be reached (or the live connection
 *                  went silent, or the browser went offline).
 *   retryInMs      when error is set and a retry is scheduled: the wait
 *   fatal          true when the client gave up (e.g. invalid room name)
 *   solving        true while the client works out the room's proof of work
 *                  before it may join (rooms with powBits): a few seconds
 *   message        the operator's message to everyone waiting in the room,
 *                  plain text ("" = none); show it as text, never as HTML.
 *                  It changes at once when the operator sets or clears it
 *                  ({"type":"message","text":…} over WebSocket and SSE, the
 *                  "message" field of a join or poll answer).
 *
 * Where the credential is kept (remember):
 *   "auto"   in localStorage when base is this page's own origin (the
 *            waitroom's page: that storage is the waitroom origin's own);
 *            otherwise only in memory and in the waitroom origin's HttpOnly
 *            cookie, so no script of an embedding site can read it from
 *            storage. A reload keeps the place through that cookie.
 *   "local"  always in localStorage (an embedding site whose visitors'
 *            browsers block the waitroom's cookie, and that accepts that
 *            every script on it can read the credential).
 *   "none"   only in memory and the cookie.
 *
 * How it works: POST /join (the answer carries "visitor", the credential),
 * then a WebSocket. Stream URLs carry a one-minute, single-use connect
 * ticket (POST /ticket) instead of the credential, so access logs and
 * proxies never see it. If the WebSocket fails before it opens while the
 * server answers HTTP, the client falls back to SSE, and from SSE to
 * polling /status at the nextPollMs the server asks for, reusing the
 * answer it just probed with. From a fallback it tries the WebSocket again
 * now and then (backoff from 5 s up to 5 min). A WebSocket refused by
 * policy (close 1008: too many connections for this visitor; or 1013
 * too_many_connections) polls at once and sets info.otherTab for the
 * former. Reconnects use full-jitter exponential backoff (base 500 ms, cap
 * 30 s); a 503 or 429 waits at least its Retry-After. The first message of
 * a push connection ("hello") says the longest the server stays silent
 * (heartbeatMs); twice that without a message counts as a lost connection.
 * Going offline drops the connection at once; coming back online, or a
 * hidden tab shown again, catches up at once; pagehide and freeze close
 * the connection (freeing the server's slot) and pageshow or resume open
 * it again. A {"type":"reconnect","afterMs":n} message closes the
 * connection and reconnects after n ms on the same transport.
 */
(function (global) {
  "use strict";

  var TRANSPORTS = ["ws", "sse", "poll"];
  var BACKOFF_BASE_MS = 500;
  var BACKOFF_CAP_MS = 30000;
  var UPGRADE_BASE_MS = 5000; // from a fallback, the first try upward
  var UPGRADE_CAP_MS = 300000;
  var SKEW_IGNORE_MS = 2000; // the Date header has 1 s resolution
  var DEFAULT_SILENCE_MS = 41100; // until the server's hello says otherwise
  var PROBE_FRESH_MS = 5000; // a probe this recent answers for the next one
  var REQUEST_TIMEOUT_MS = 15000;

  function noop() {}

  // backoff returns the full-jitter wait before retry number attempt.
  function backoff(attempt) {
    var ceiling = Math.min(BACKOFF_CAP_MS, BACKOFF_BASE_MS * Math.pow(2, Math.min(attempt, 16)));
    return Math.floor(Math.random() * ceiling);
  }

  // upgradeWait is the wait before trying a better transport again: at
  // least half its ceiling, so a refused tab does not knock every second.
  function upgradeWait(attempt) {
    var ceiling = Math.min(UPGRADE_CAP_MS, UPGRADE_BASE_MS * Math.pow(2, Math.min(attempt, 16)));
    return Math.floor(ceiling / 2 + Math.random() * ceiling / 2);
  }

  // retryAfter is a response's Retry-After in ms (0 when absent).
  function retryAfter(res) {
    var ra = Number(res && res.headers.get("Retry-After"));
    return ra > 0 ? ra * 1000 : 0;
  }

  // Storage can be missing or throw (private modes, blocked cookies).
  function load(key) {
    try { return global.localStorage.getItem(key); } catch (e) { return null; }
  }
  function save(key, value) {
    try {
      if (value === null || value === undefined) global.localStorage.removeItem(key);
      else global.localStorage.setItem(key, String(value));
    } catch (e) { /* keep going without persistence */ }
  }

  function problem(code, message, status) {
    return { code: code, message: message, status: status || 0 };
  }

  var NETWORK = "the waiting room cannot be reached";

  // readError turns an error response into { code, message, status }.
  function readError(res) {
    return res.text().then(function (text) {
      try {
        var body = JSON.parse(text);
        if (body && body.error) {
          var e = problem(body.error.code, body.error.message, res.status);
          if (body.error.challenge) {
            e.challenge = String(body.error.challenge);
            e.powBits = Number(body.error.powBits) || 0;
          }
          return e;
        }
      } catch (e) { /* not JSON */ }
      return problem("http_" + res.status, "the server answered " + res.status, res.status);
    }, function () {
      return problem("http_" + res.status, "the server answered " + res.status, res.status);
    });
  }

  function retryable(e) {
    return e.status >= 500 || e.status === 429 || e.status === 408;
  }

  // ---- proof of work ----
  //
  // A room may ask a new visitor to solve a proof of work before joining
  // (428 pow_required with a challenge): a nonce such that SHA-256 of the
  // challenge followed by the nonce (decimal digits) starts with powBits
  // zero bits. It is solved off the page's thread, in Web Workers made from
  // this very code (a Blob URL, so it works on embedding sites too), with a
  // compact SHA-256 that hashes the challenge's full blocks once: the
  // browser's crypto.subtle.digest costs a promise per hash, which made it
  // about 30 times slower here. Without workers, the page's thread solves
  // it in slices that leave the page responsive.
  function powWorkerMain() {
    var K = new Int32Array([0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
      0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
      0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
      0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
      0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
      0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
      0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
      0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2]);
    var W = new Int32Array(64);
    // compress runs one SHA-256 block (W[0..15]) from state h (8 words) into out.
    function compress(h, out) {
      for (var t = 16; t < 64; t++) {
        var x = W[t - 15], y = W[t - 2];
        var s0 = ((x >>> 7) | (x << 25)) ^ ((x >>> 18) | (x << 14)) ^ (x >>> 3);
        var s1 = ((y >>> 17) | (y << 15)) ^ ((y >>> 19) | (y << 13)) ^ (y >>> 10);
        W[t] = (W[t - 16] + s0 + W[t - 7] + s1) | 0;
      }
      var a = h[0], b = h[1], c = h[2], d = h[3], e = h[4], f = h[5], g = h[6], hh = h[7];
      for (t = 0; t < 64; t++) {
        var S1 = ((e >>> 6) | (e << 26)) ^ ((e >>> 11) | (e << 21)) ^ ((e >>> 25) | (e << 7));
        var t1 = (hh + S1 + ((e & f) ^ (~e & g)) + K[t] + W[t]) | 0;
        var S0 = ((a >>> 2) | (a << 30)) ^ ((a >>> 13) | (a << 19)) ^ ((a >>> 22) | (a << 10));
        var t2 = (S0 + ((a & b) ^ (a & c) ^ (b & c))) | 0;
        hh = g; g = f; f = e; e = (d + t1) | 0; d = c; c = b; b = a; a = (t1 + t2) | 0;
      }
      out[0] = (h[0] + a) | 0; out[1] = (h[1] + b) | 0; out[2] = (h[2] + c) | 0; out[3] = (h[3] + d) | 0;
      out[4] = (h[4] + e) | 0; out[5] = (h[5] + f) | 0; out[6] = (h[6] + g) | 0; out[7] = (h[7] + hh) | 0;
    }
    function load(bytes, off) { // 64 bytes into W[0..15], big-endian
      for (var k = 0; k < 16; k++) {
        var p = off + 4 * k;
        W[k] = (bytes[p] << 24) | (bytes[p + 1] << 16) | (bytes[p + 2] << 8) | bytes[p + 3];
      }
    }
    // search tries nonces start, start+step, ... for one whose SHA-256 of
    // challenge+nonce starts with bits zero bits; the challenge's full blocks
    // are hashed once (the midstate). It returns { nonce, tried }, or
    // { next, tried } when maxTries (0 = no limit) ran out first.
    function search(ch, bits, start, step, maxTries) {
      var pre = [];
      for (var k = 0; k < ch.length; k++) pre.push(ch.charCodeAt(k) & 0xff);
      var mid = new Int32Array([0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19]);
      var full = pre.length - (pre.length % 64);
      var blk = new Uint8Array(128);
      for (var off = 0; off < full; off += 64) {
        for (k = 0; k < 64; k++) blk[k] = pre[off + k];
        load(blk, 0);
        compress(mid, mid);
      }
      var tail = pre.slice(full), st = new Int32Array(8), out = new Int32Array(8);
      var mask = bits >= 32 ? -1 : bits === 0 ? 0 : ~(-1 >>> bits), n = start, tried = 0;
      for (;;) {
        var s = String(n), len = tail.length + s.length, blocks = len + 9 <= 64 ? 1 : 2;
        blk.fill(0, 0, 64 * blocks);
        for (k = 0; k < tail.length; k++) blk[k] = tail[k];
        for (k = 0; k < s.length; k++) blk[tail.length + k] = s.charCodeAt(k);
        blk[len] = 0x80;
        var bitLen = (pre.length + s.length) * 8, end = 64 * blocks;
        blk[end - 4] = bitLen >>> 24; blk[end - 3] = (bitLen >>> 16) & 0xff; blk[end - 2] = (bitLen >>> 8) & 0xff; blk[end - 1] = bitLen & 0xff;
        load(blk, 0);
        compress(mid, out);
        if (blocks === 2) { st.set(out); load(blk, 64); compress(st, out); }
        tried++;
        if ((out[0] & mask) === 0 && (bits <= 32 || Math.clz32(out[1]) >= bits - 32)) return { nonce: s, tried: tried };
        n += step;
        if (maxTries && tried >= maxTries) return { next: n, tried: tried };
      }
    }
    if (typeof window === "undefined" && typeof self !== "undefined" && typeof self.postMessage === "function") {
      self.onmessage = function (e) {
        var d = e.data;
        self.postMessage(search(d.challenge, d.bits, d.start, d.step));
      };
    }
    return search;
  }

  var powSearch = null; // the solver on this thread (no workers)

  // solvePow resolves to a nonce for challenge at bits.
  function solvePow(challenge, bits) {
    var n = Math.max(1, Math.min((global.navigator && global.navigator.hardwareConcurrency) || 2, 4));
    var url = null;
    try {
      url = global.URL.createObjectURL(new global.Blob(["(" + powWorkerMain.toString() + ")()"], { type: "text/javascript" }));
    } catch (e) { url = null; }
    return new Promise(function (resolve, reject) {
      var workers = [], done = false;
      function finish(nonce) {
        if (done) return;
        done = true;
        workers.forEach(function (w) { w.terminate(); });
        if (url) global.URL.revokeObjectURL(url);
        resolve(nonce);
      }
      function onThread() {
        powSearch = powSearch || powWorkerMain();
        var next = 0;
        (function slice() {
          if (done) return;
          var r = powSearch(challenge, bits, next, 1, 20000);
          if (r.nonce !== undefined) return finish(r.nonce);
          next = r.next;
          setTimeout(slice, 0);
        })();
      }
      if (!url || typeof global.Worker !== "function") return onThread();
      try {
        for (var i = 0; i < n; i++) {
          var w = new global.Worker(url);
          w.onmessage = function (e) { finish(e.data.nonce); };
          w.onerror = function (e) {
            if (e && e.preventDefault) e.preventDefault();
            if (!done && workers.length) { // a policy may refuse Blob workers
              workers.forEach(function (x) { x.terminate(); });
              workers = [];
              onThread();
            }
          };
          w.postMessage({ challenge: challenge, bits: bits, start: i, step: n });
          workers.push(w);
        }
      } catch (e) {
        workers.forEach(function (x) { x.terminate(); });
        workers = [];
        onThread();
      }
    });
  }

  function connect(opts) {
    if (!opts || !opts.room) throw new Error("Waitroom.connect: room is required");
    var room = String(opts.room);
    var onState = typeof opts.onState === "function" ? opts.onState : noop;
    var onTransport = typeof opts.onTransport === "function" ? opts.onTransport : noop;
    // An invite or priority code goes with every join: a visitor who holds
    // a place uses nothing, so a reload costs no use.
    var invite = opts.invite ? String(opts.invite) : "";
    var transports = (opts.transports || TRANSPORTS).filter(function (t) {
      return TRANSPORTS.indexOf(t) >= 0;
    });
    if (transports.length === 0) transports = ["poll"];

    var base = String(opts.base || "").replace(/\/+$/, "");
    var api = base + "/api/v1/rooms/" + encodeURIComponent(room);
    var origin = global.location.origin;
    var apiOrigin = new URL(api, global.location.href).origin;
    var keyPrefix = "waitroom:" + (base || origin) + ":" + room + ":";
    var visitorKey = keyPrefix + "visitor";
    var startKey = keyPrefix + "start";
    var remember = opts.remember === "local" || opts.remember === "none" ? opts.remember : "auto";
    var keepLocal = remember === "local" || (remember === "auto" && apiOrigin === origin);
    if (!keepLocal) save(visitorKey, null); // what an older version left there

    var visitor = keepLocal ? load(visitorKey) : null;
    var startPosition = Number(load(startKey)) || 0;
    var last = null; // last state
    var lastPushed = false; // last came over WebSocket or SSE
    var lastAt = 0; // Date.now() when last came
    var transportIndex = 0;
    var transport = null; // the live transport's name
    var attempt = 0; // failed attempts since the last success
    var upAttempt = 0; // tries upward since a better transport last worked
    var gen = 0; // bumped whenever the current connection is abandoned
    var conn = null; // { close() } of the current connection
    var timer = null; // the one pending retry / poll
    var upTimer = null; // the next try of a better transport
    var watch = null; // fires when a push connection was silent too long
    var silenceMs = DEFAULT_SILENCE_MS;
    var heardAt = 0; // Date.now() of the last message on the push connection
    var validTimer = null;
    var retryAt = 0;
    var err = null;
    var otherTab = false;
    var probed = null; // { at, gen }: the last probe that found the server answering
    var fatal = false;
    var stopped = false;
    var suspended = false; // pagehide or freeze: nothing runs until shown again
    var clockOffset = 0; // server time minus local time, when clearly skewed
    var noTickets = false; // an older server without /ticket: credential in the URL
    var message = ""; // the operator's message to the room
    var solving = false; // working out the room's proof of work
    var powTries = 0; // challenges solved for the join under way

    function serverNow() { return Date.now() + clockOffset; }

    function validInMs() {
      if (!last || last.status !== "admitted") return 0;
      // A push transport delivers "admitted" no earlier than notBefore; a
      // join or poll answer may come before it.
      if (lastPushed) return 0;
      var nb = Date.parse(last.notBefore);
      return isNaN(nb) ? 0 : Math.max(0, Math.ceil(nb - serverNow()));
    }

    function info() {
      var v = validInMs();
      return {
        transport: transport,
        validInMs: v,
        usable: !!last && last.status === "admitted" && v === 0,
        startPosition: startPosition,
        degraded: !!last && (!!last.degraded || !!(err && err.code !== "network" && err.status >= 500)),
        otherTab: otherTab,
        error: err,
        retryInMs: err && retryAt ? Math.max(0, retryAt - Date.now()) : 0,
        fatal: fatal,
        message: message,
        solving: solving
      };
    }

    function emit() {
      if (stopped) return;
      try { onState(last, info()); } catch (e) {
        setTimeout(function () { throw e; }); // report, but keep the client alive
      }
    }

    function setTransport(name) {
      if (transport === name) return;
      transport = name;
      try { onTransport(name); } catch (e) { setTimeout(function () { throw e; }); }
    }

    function clearTimer() {
      if (timer) { clearTimeout(timer); timer = null; }
      retryAt = 0;
    }

    function later(ms, fn) {
      clearTimer();
      retryAt = Date.now() + ms;
      timer = setTimeout(function () { timer = null; retryAt = 0; fn(); }, ms);
    }

    function clearWatch() {
      if (watch) { clearTimeout(watch); watch = null; }
    }

    function clearUp() {
      if (upTimer) { clearTimeout(upTimer); upTimer = null; }
    }

    function dropConn() {
      gen++;
      clearWatch();
      if (conn) { var c = conn; conn = null; c.close(); }
    }

    function headers(extra) {
      var h = { "Accept": "application/json" };
      if (visitor) h["X-Visitor"] = visitor;
      for (var k in extra) h[k] = extra[k];
      return h;
    }

    function noteOffset(off) {
      clockOffset = Math.abs(off) > SKEW_IGNORE_MS ? off : 0;
    }

    // noteClock learns the server's clock from the Date header (exposed to
    // other origins by the server's CORS), used only when the local clock
    // is off by more than the header's resolution.
    function noteClock(res, sentAt) {
      var d = Date.parse(res.headers.get("Date") || "");
      if (isNaN(d)) return;
      noteOffset(d + 500 - (sentAt + Date.now()) / 2);
    }

    // request resolves to { res } or { error }; it never rejects. A request
    // that takes longer than REQUEST_TIMEOUT_MS counts as unreachable.
    function request(path, init) {
      var sentAt = Date.now();
      init.credentials = init.credentials || "include";
      init.cache = "no-store";
      var abort = typeof global.AbortController === "function" ? new global.AbortController() : null;
      var t = abort ? setTimeout(function () { abort.abort(); }, REQUEST_TIMEOUT_MS) : null;
      if (abort) init.signal = abort.signal;
      return global.fetch(api + path, init).then(function (res) {
        clearTimeout(t);
        noteClock(res, sentAt);
        return { res: res };
      }, function () {
        clearTimeout(t);
        return { error: problem("network", NETWORK, 0) };
      });
    }

    // fail records e and retries after a backoff, or after Retry-After when
    // the server gave one (whichever is longer).
    function fail(e, retry, res) {
      err = e;
      var wait = Math.max(backoff(attempt), retryAfter(res) + (retryAfter(res) ? Math.floor(Math.random() * 1000) : 0));
      attempt++;
      later(wait, retry);
      emit();
    }

    function stopWith(e) {
      err = e;
      fatal = true;
      clearTimer();
      clearUp();
      dropConn();
      emit();
    }

    function isVisitorProblem(e) {
      return e.status === 401 && (e.code === "invalid_visitor" || e.code === "missing_visitor");
    }

    // ---- state handling ----

    function handleState(s, pushed) {
      if (!s || s.type !== "state" || stopped) return;
      // A join or poll answer is whole: no "message" means none. A pushed
      // position update leaves it out; message frames carry its changes.
      if (!pushed || typeof s.message === "string") message = typeof s.message === "string" ? s.message : "";
      last = s;
      lastAt = Date.now();
      lastPushed = !!pushed;
      if (s.status === "waiting" && typeof s.position === "number") {
        if (!startPosition || s.position > startPosition) {
          startPosition = s.position;
          save(startKey, startPosition);
        }
      } else if (s.status === "expired" || s.status === "not_in_queue") {
        // Nothing more will happen to this ticket.
        startPosition = 0;
        save(startKey, null);
        clearTimer();
        clearUp();
        dropConn();
      }
      if (validTimer) { clearTimeout(validTimer); validTimer = null; }
      var v = validInMs();
      if (s.status === "admitted" && v > 0) {
        validTimer = setTimeout(function () { validTimer = null; emit(); }, v);
      }
      emit();
    }

    function opened(name) {
      attempt = 0;
      err = null;
      if (transports.indexOf(name) === 0) {
        // The best transport works: no more tries upward, no other tab.
        upAttempt = 0;
        otherTab = false;
        clearUp();
      } else {
        scheduleUp();
      }
      setTransport(name);
    }

    // ---- join ----

    // solve works out the room's proof of work for a join (e from a 428
    // pow_required), then joins with it. info.solving is true meanwhile.
    function solve(e, freshIdentity) {
      if (++powTries > 3) return stopWith(e); // the server keeps refusing solutions
      solving = true;
      err = null;
      emit();
      var my = gen;
      solvePow(e.challenge, e.powBits).then(function (nonce) {
        if (stopped || my !== gen) return;
        solving = false;
        join(freshIdentity, { challenge: e.challenge, nonce: nonce });
      });
    }

    function join(freshIdentity, pow) {
      clearTimer();
      dropConn();
      var payload = {};
      if (pow) payload.pow = pow;
      if (invite) payload.invite = invite;
      var init = { method: "POST", headers: headers({ "Content-Type": "application/json" }),
        body: JSON.stringify(payload) };
      if (freshIdentity) {
        // A stale cookie would win over no header: leave cookies out and
        // rely on the credential in the body from now on.
        delete init.headers["X-Visitor"];
        init.credentials = "omit";
      }
      var my = gen;
      request("/join", init).then(function (r) {
        if (stopped || my !== gen) return;
        if (r.error) return fail(r.error, function () { join(freshIdentity); });
        if (!r.res.ok) {
          return readError(r.res).then(function (e) {
            if (stopped || my !== gen) return;
            if (isVisitorProblem(e) && !freshIdentity) {
              visitor = null;
              save(visitorKey, null);
              return join(true);
            }
            if (e.code === "pow_required" && e.challenge) return solve(e, freshIdentity);
            // A solution that came too late or was spent: a new challenge.
            if (pow && /^pow_/.test(e.code) && powTries <= 3) return join(freshIdentity);
            if (retryable(e)) return fail(e, function () { join(freshIdentity); }, r.res);
            stopWith(e);
          });
        }
        return r.res.json().then(function (s) {
          if (stopped || my !== gen) return;
          if (s.visitor) {
            visitor = s.visitor;
            if (keepLocal) save(visitorKey, visitor);
          }
          delete s.visitor;
          attempt = 0;
          powTries = 0;
          err = null;
          handleState(s, false);
          if (s.status !== "expired" && s.status !== "not_in_queue") startTransport();
        }, function () {
          fail(problem("bad_response", "the server sent an unreadable answer", r.res.status), function () { join(freshIdentity); });
        });
      });
    }

    // ---- transports ----

    function startTransport() {
      if (stopped || suspended) return;
      clearTimer();
      dropConn();
      var name = transports[transportIndex];
      if (name === "ws" && typeof global.WebSocket !== "function") return fallBack();
      if (name === "sse" && typeof global.EventSource !== "function") return fallBack();
      if (name === "ws") withTicket(openWS);
      else if (name === "sse") withTicket(openSSE);
      else startPolling();
    }

    function fallBack() {
      if (transportIndex < transports.length - 1) {
        transportIndex++;
        attempt = 0;
        startTransport();
        return true;
      }
      return false;
    }

    // toPolling moves to polling at once: the server refused a push
    // connection for a reason that retrying will not change soon.
    function toPolling() {
      var i = transports.indexOf("poll");
      if (i < 0) return false;
      transportIndex = i;
      attempt = 0;
      startTransport();
      return true;
    }

    // scheduleUp plans the next try of the best transport while a lower one
    // is live.
    function scheduleUp() {
      if (upTimer || transportIndex === 0 || stopped) return;
      upTimer = setTimeout(function () {
        upTimer = null;
        if (stopped || suspended || !isLive() || transportIndex === 0) return;
        upAttempt++;
        transportIndex = 0;
        attempt = 0;
        startTransport();
      }, upgradeWait(upAttempt));
    }

    // failedBeforeOpen: a push transport never opened. A WebSocket or
    // EventSource does not show why, so ask /status (unless a probe just
    // did): if the server answers, it refused this transport (or something
    // between us does): fall back. If it answers 5xx, it is there but in
    // trouble: retry the same transport later. If it does not answer, it is
    // unreachable: retry the same transport.
    function failedBeforeOpen(my) {
      if (probed && Date.now() - probed.at < PROBE_FRESH_MS && fallBack()) return;
      probe(my, function (outcome, e, res) {
        if (outcome === "ok") {
          probed = { at: Date.now() };
          if (fallBack()) return;
          e = problem("transport_failed", "the live connection could not be opened", 0);
        }
        fail(e, startTransport, res);
      });
    }

    // failedAfterOpen: a live connection ended; reconnect on the same one.
    function failedAfterOpen() {
      var wait = backoff(attempt);
      attempt++;
      later(wait, startTransport);
    }

    function probe(my, done) {
      request("/status", { method: "GET", headers: headers({}) }).then(function (r) {
        if (stopped || my !== gen) return;
        if (r.error) return done("unreachable", r.error);
        if (r.res.ok) {
          return r.res.json().then(function (s) {
            if (stopped || my !== gen) return;
            handleState(s, false);
            if (isLive()) done("ok");
          }, function () { done("ok"); });
        }
        return readError(r.res).then(function (e) {
          if (stopped || my !== gen) return;
          if (isVisitorProblem(e)) return join(false);
          if (retryable(e)) return done("down", e, r.res);
          done("ok");
        });
      });
    }

    function isLive() {
      return !stopped && !(last && (last.status === "expired" || last.status === "not_in_queue"));
    }

    // heard notes a sign of life on the push connection and arms the
    // silence watch: twice the longest silence the server promised.
    function heard(my) {
      heardAt = Date.now();
      clearWatch();
      watch = setTimeout(function () {
        watch = null;
        if (my !== gen || stopped) return;
        lost(problem("network", "the live connection went silent", 0));
      }, 2 * silenceMs);
    }

    // lost drops the live connection and reconnects with backoff.
    function lost(e) {
      dropConn();
      err = e;
      failedAfterOpen();
      emit();
    }

    // onMessage handles one pushed message; the first on a connection
    // marks it live.
    function onMessage(name, data, my, c) {
      if (my !== gen) return;
      heard(my);
      var m;
      try { m = JSON.parse(data); } catch (e) { return; }
      if (!m) return;
      if (m.type === "hello") {
        if (Number(m.heartbeatMs) > 0) silenceMs = Number(m.heartbeatMs);
        var st = Date.parse(m.serverTime || "");
        if (!isNaN(st)) noteOffset(st - Date.now());
        heard(my);
        return;
      }
      if (m.type === "heartbeat") return;
      if (!c.live) { c.live = true; opened(name); }
      if (m.type === "reconnect") {
        dropConn();
        later(Math.max(0, Number(m.afterMs) || 0), startTransport);
        return;
      }
      if (m && m.type === "message") {
        var text = typeof m.text === "string" ? m.text : "";
        if (text !== message && !stopped) { message = text; emit(); }
        return;
      }
      handleState(m, true);
    }

    // withTicket mints a connect ticket and calls open with it, so the
    // credential never goes into a URL. An older server without tickets
    // gets the credential as before.
    function withTicket(open) {
      var my = gen;
      if (noTickets) return open(null);
      request("/ticket", { method: "POST", headers: headers({}) }).then(function (r) {
        if (stopped || my !== gen) return;
        if (r.error) return fail(r.error, startTransport);
        if (r.res.status === 404 || r.res.status === 405) { noTickets = true; return open(null); }
        if (!r.res.ok) {
          return readError(r.res).then(function (e) {
            if (stopped || my !== gen) return;
            if (isVisitorProblem(e)) return join(false);
            if (retryable(e)) return fail(e, startTransport, r.res);
            stopWith(e);
          });
        }
        return r.res.json().then(function (b) {
          if (stopped || my !== gen) return;
          open(b && b.ticket ? String(b.ticket) : null);
        }, function () {
          fail(problem("bad_response", "the server sent an unreadable answer", r.res.status), startTransport);
        });
      });
    }

    function streamURL(path, ticket) {
      var u = new URL(api + path, global.location.href);
      if (ticket) u.searchParams.set("ticket", ticket);
      else if (visitor) u.searchParams.set("visitor", visitor);
      // The message shown came from an answer: a room that has none by
      // now says so on connect, whichever instance holds the connection.
      if (message) u.searchParams.set("msg", "1");
      return u;
    }

    function openWS(ticket) {
      var my = gen;
      var isOpen = false;
      var ws;
      var u = streamURL("/ws", ticket);
      u.protocol = u.protocol === "https:" ? "wss:" : "ws:";
      try { ws = new global.WebSocket(u.toString()); } catch (e) { return failedBeforeOpen(my); }
      conn = { close: function () { ws.onclose = ws.onmessage = ws.onopen = ws.onerror = null; try { ws.close(1000); } catch (e) {} } };
      // Open is not success yet: the server may still refuse the visitor
      // with a close frame. The first state is (onMessage calls opened).
      ws.onopen = function () { if (my === gen) { isOpen = true; heard(my); } };
      var c = { live: false };
      ws.onmessage = function (ev) { onMessage("ws", ev.data, my, c); };
      ws.onerror = noop; // onclose follows and decides
      ws.onclose = function (ev) {
        if (my !== gen) return;
        conn = null;
        gen++;
        clearWatch();
        // A refusal by policy does not change by retrying: poll, which
        // costs the server no connection, and try upward later.
        if (ev && ev.code === 1008) {
          otherTab = ev.reason === "too_many_connections_for_visitor";
          if (toPolling()) return emit();
        }
        if (ev && ev.code === 1013 && ev.reason === "too_many_connections" && toPolling()) return emit();
        if (ev && ev.code === 1013) {
          // The server is there but cannot serve now (its store is
          // unreachable, or it is shutting down): say so, and retry.
          err = problem(ev.reason || "unavailable", "the waiting room cannot serve live updates right now", 503);
          failedAfterOpen();
          return emit();
        }
        if (isOpen) failedAfterOpen();
        else failedBeforeOpen(gen);
      };
    }

    function openSSE(ticket) {
      var my = gen;
      var isOpen = false;
      var es;
      try { es = new global.EventSource(streamURL("/sse", ticket).toString()); } catch (e) { return failedBeforeOpen(my); }
      conn = { close: function () { es.onopen = es.onerror = null; es.close(); } };
      es.onopen = function () { if (my === gen) { isOpen = true; heard(my); } };
      var c = { live: false };
      ["state", "reconnect", "hello", "heartbeat", "message"].forEach(function (name) {
        es.addEventListener(name, function (ev) { onMessage("sse", ev.data, my, c); });
      });
      // EventSource would reconnect by itself on some errors; the client
      // reconnects itself instead, with its own backoff.
      es.onerror = function () {
        if (my !== gen) return;
        es.onopen = es.onerror = null;
        es.close();
        conn = null;
        gen++;
        clearWatch();
        if (isOpen) failedAfterOpen();
        else failedBeforeOpen(gen);
      };
    }

    // startPolling polls now, or, when a state just came (the probe that
    // led here), when that state said to ask next.
    function startPolling() {
      conn = { close: noop };
      var wait = last && lastAt && isLive() ? nextPoll(last) - (Date.now() - lastAt) : 0;
      if (wait > 0 && !lastPushed && Date.now() - lastAt < PROBE_FRESH_MS) {
        opened("poll");
        emit();
        later(wait, poll);
        return;
      }
      poll();
    }

    function poll() {
      var my = gen;
      conn = { close: noop };
      request("/status", { method: "GET", headers: headers({}) }).then(function (r) {
        if (stopped || my !== gen) return;
        if (r.error) return fail(r.error, poll);
        if (!r.res.ok) {
          return readError(r.res).then(function (e) {
            if (stopped || my !== gen) return;
            if (isVisitorProblem(e)) return join(false);
            if (retryable(e)) return fail(e, poll, r.res);
            stopWith(e);
          });
        }
        return r.res.json().then(function (s) {
          if (stopped || my !== gen) return;
          opened("poll");
          handleState(s, false);
          if (!isLive() || my !== gen) return;
          later(nextPoll(s), poll);
        }, function () {
          fail(problem("bad_response", "the server sent an unreadable answer", r.res.status), poll);
        });
      });
    }

    function nextPoll(s) {
      var asked = Number(s.nextPollMs) || 0;
      if (s.status === "waiting") return asked || 1000;
      if (s.status === "admitted") {
        // Only "expired" can follow: ask again shortly after expiresAt.
        var left = Date.parse(s.expiresAt) - serverNow() + 500;
        return Math.max(1000, Math.min(isNaN(left) ? 30000 : left, 30000));
      }
      return Math.max(asked, 15000);
    }

    // catchUp goes on at once after the page was away: retry what was
    // waiting for a backoff, poll now, or reconnect a push connection that
    // has been silent for longer than it may be.
    function catchUp() {
      if (stopped || suspended || fatal || !isLive()) return;
      if (last === null) {
        if (timer) { clearTimer(); join(false); }
        return;
      }
      if (err && timer) { clearTimer(); attempt = 0; startTransport(); return; }
      if (transport === "poll" && timer) { clearTimer(); poll(); return; }
      if (conn && (transport === "ws" || transport === "sse") && heardAt && Date.now() - heardAt > 2 * silenceMs) {
        lost(problem("network", "the live connection went silent", 0));
      }
    }

    // Back online: retry now instead of at the end of a long backoff.
    function onOnline() {
      if (err && err.code === "network") catchUp();
    }

    // Offline: the connection is as good as gone, whatever the socket says.
    function onOffline() {
      if (stopped || suspended || fatal || !isLive() || !last) return;
      dropConn();
      err = problem("network", "this device is offline", 0);
      failedAfterOpen(); // tried again on "online", or after the backoff
      emit();
    }

    function onVisibility() {
      if (global.document && global.document.visibilityState === "visible") catchUp();
    }

    // pagehide and freeze: close the connection, so the server frees its
    // slot and the page can enter the back/forward cache; pageshow and
    // resume: connect again.
    function onSuspend() {
      if (stopped || suspended) return;
      suspended = true;
      clearTimer();
      clearUp();
      dropConn();
    }
    function onResume() {
      if (stopped || !suspended) return;
      suspended = false;
      if (fatal || !isLive()) return;
      if (last === null) join(false);
      else startTransport();
    }

    var winEvents = { online: onOnline, offline: onOffline, pagehide: onSuspend, pageshow: onResume };
    var docEvents = { visibilitychange: onVisibility, freeze: onSuspend, resume: onResume };
    function listen(on) {
      var k;
      if (global.addEventListener) {
        for (k in winEvents) global[on ? "addEventListener" : "removeEventListener"](k, winEvents[k]);
      }
      var d = global.document;
      if (d && d.addEventListener) {
        for (k in docEvents) d[on ? "addEventListener" : "removeEventListener"](k, docEvents[k]);
      }
    }
    listen(true);

    function close() {
      if (stopped) return;
      clearTimer();
      clearUp();
      dropConn();
      if (validTimer) { clearTimeout(validTimer); validTimer = null; }
      stopped = true;
      listen(false);
    }

    join(false);

    return {
      state: function () { return last; },
      info: info,
      visitor: function () { return visitor; },
      close: close,
      leave: function () {
        var init = { method: "DELETE", headers: headers({}) };
        close();
        startPosition = 0;
        save(startKey, null);
        return request("/queue", init).then(function (r) {
          if (r.error) throw r.error;
          if (!r.res.ok) return readError(r.res).then(function (e) { throw e; });
        });
      },
      rejoin: function () {
        listen(false);
        listen(true);
        stopped = false;
        suspended = false;
        fatal = false;
        err = null;
        otherTab = false;
        solving = false;
        powTries = 0;
        attempt = 0;
        upAttempt = 0;
        transportIndex = 0;
        startPosition = 0;
        save(startKey, null);
        join(false);
      }
    };
  }

  // shown moves a waiting state's position on at its rate (see the top).
  function shown(state, elapsedMs) {
    var pos = state && state.position;
    if (!(pos > 1)) return pos || 0;
    var rate = state.ratePerSecond > 0 ? state.ratePerSecond : state.etaSeconds > 0 ? pos / state.etaSeconds : 0;
    if (state.paused || state.degraded || !(rate > 0) || !(elapsedMs > 0)) return pos;
    return Math.max(1, Math.ceil(pos - rate * elapsedMs / 1000));
  }

  global.Waitroom = { connect: connect, solvePow: solvePow, shown: shown, version: "2" };
})(typeof window !== "undefined" ? window : this);
