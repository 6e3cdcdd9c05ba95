/*
 * waitroom.js: the browser client of a waitroom server. No dependencies.
 *
 *   <script src="https://queue.example.com/waitroom.js"></script>
 *   <script>
 *     var wr = Waitroom.connect({
 *       room: "drop-2026",                   // required
 *       base: "https://queue.example.com",   // optional; default: this page's origin
 *       transports: ["ws", "sse", "poll"],   // optional; tried in this order
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
 * onState(state, info) is called for every state message and whenever info
 * changes. state is the server's message:
 *   { type: "state", room, status: "waiting" | "admitted" | "expired" |
 *     "not_in_queue" | "sold_out", position, etaSeconds, nextPollMs, paused,
 *     token, notBefore, expiresAt }
 * info is what the client knows beside it:
 *   transport      "ws" | "sse" | "poll" | null (not connected yet)
 *   validInMs      admitted only: milliseconds until the entry token may be
 *                  used. A poll can report "admitted" before the token's
 *                  notBefore; onState is called again when it reaches 0.
 *   usable         status is "admitted" and validInMs is 0
 *   startPosition  the position when this ticket was first seen (kept across
 *                  reloads), for a progress bar
 *   error          null, or { code, message, status } for the problem being
 *                  retried or that stopped the client. code "network" means
 *                  the server could not be reached.
 *   retryInMs      when error is set and a retry is scheduled: the wait
 *   fatal          true when the client gave up (e.g. invalid room name)
 *   message        the operator's message to everyone waiting in the room,
 *                  plain text ("" = none); show it as text, never as HTML.
 *                  It changes at once when the operator sets or clears it
 *                  ({"type":"message","text":…} over WebSocket and SSE, the
 *                  "message" field of a join or poll answer).
 *
 * How it works: POST /join (the answer carries "visitor", the credential; it
 * is kept in localStorage per room as well as the server's cookie, so a
 * refresh keeps the place), then a WebSocket. If the WebSocket fails before
 * it opens while the server answers HTTP, the client falls back to SSE, and
 * from SSE to polling /status at the nextPollMs the server asks for.
 * Reconnects use full-jitter exponential backoff (base 500 ms, cap 30 s).
 * A {"type":"reconnect","afterMs":n} message closes the connection and
 * reconnects after n ms on the same transport.
 */
(function (global) {
  "use strict";

  var TRANSPORTS = ["ws", "sse", "poll"];
  var BACKOFF_BASE_MS = 500;
  var BACKOFF_CAP_MS = 30000;
  var SKEW_IGNORE_MS = 2000; // the Date header has 1 s resolution

  function noop() {}

  // backoff returns the full-jitter wait before retry number attempt.
  function backoff(attempt) {
    var ceiling = Math.min(BACKOFF_CAP_MS, BACKOFF_BASE_MS * Math.pow(2, Math.min(attempt, 16)));
    return Math.floor(Math.random() * ceiling);
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

  // readError turns an error response into { code, message, status }.
  function readError(res) {
    return res.text().then(function (text) {
      try {
        var body = JSON.parse(text);
        if (body && body.error) return problem(body.error.code, body.error.message, res.status);
      } catch (e) { /* not JSON */ }
      return problem("http_" + res.status, "the server answered " + res.status, res.status);
    }, function () {
      return problem("http_" + res.status, "the server answered " + res.status, res.status);
    });
  }

  function connect(opts) {
    if (!opts || !opts.room) throw new Error("Waitroom.connect: room is required");
    var room = String(opts.room);
    var onState = typeof opts.onState === "function" ? opts.onState : noop;
    var onTransport = typeof opts.onTransport === "function" ? opts.onTransport : noop;
    var transports = (opts.transports || TRANSPORTS).filter(function (t) {
      return TRANSPORTS.indexOf(t) >= 0;
    });
    if (transports.length === 0) transports = ["poll"];

    var base = String(opts.base || "").replace(/\/+$/, "");
    var api = base + "/api/v1/rooms/" + encodeURIComponent(room);
    var keyPrefix = "waitroom:" + (base || global.location.origin) + ":" + room + ":";
    var visitorKey = keyPrefix + "visitor";
    var startKey = keyPrefix + "start";

    var visitor = load(visitorKey);
    var startPosition = Number(load(startKey)) || 0;
    var last = null; // last state
    var lastPushed = false; // last came over WebSocket or SSE
    var transportIndex = 0;
    var transport = null; // the live transport's name
    var attempt = 0; // failed attempts since the last success
    var gen = 0; // bumped whenever the current connection is abandoned
    var conn = null; // { close() } of the current connection
    var timer = null; // the one pending retry / poll
    var validTimer = null;
    var retryAt = 0;
    var err = null;
    var fatal = false;
    var stopped = false;
    var clockOffset = 0; // server time minus local time, when clearly skewed
    var message = ""; // the operator's message to the room

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
        error: err,
        retryInMs: err && retryAt ? Math.max(0, retryAt - Date.now()) : 0,
        fatal: fatal,
        message: message
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

    function dropConn() {
      gen++;
      if (conn) { var c = conn; conn = null; c.close(); }
    }

    function headers(extra) {
      var h = { "Accept": "application/json" };
      if (visitor) h["X-Visitor"] = visitor;
      for (var k in extra) h[k] = extra[k];
      return h;
    }

    // noteClock learns the server's clock from the Date header, used only
    // when the local clock is off by more than the header's resolution.
    function noteClock(res, sentAt) {
      var d = Date.parse(res.headers.get("Date") || "");
      if (isNaN(d)) return;
      var mid = (sentAt + Date.now()) / 2;
      var off = d + 500 - mid;
      clockOffset = Math.abs(off) > SKEW_IGNORE_MS ? off : 0;
    }

    // request resolves to { res } or { error }; it never rejects.
    function request(path, init) {
      var sentAt = Date.now();
      init.credentials = init.credentials || "include";
      init.cache = "no-store";
      return global.fetch(api + path, init).then(function (res) {
        noteClock(res, sentAt);
        return { res: res };
      }, function () {
        return { error: problem("network", "the waiting room cannot be reached", 0) };
      });
    }

    function fail(e, retry) {
      err = e;
      var wait = backoff(attempt);
      attempt++;
      later(wait, retry);
      emit();
    }

    function stopWith(e) {
      err = e;
      fatal = true;
      clearTimer();
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
      setTransport(name);
    }

    // ---- join ----

    function join(freshIdentity) {
      clearTimer();
      dropConn();
      var init = { method: "POST", headers: headers({ "Content-Type": "application/json" }), body: "{}" };
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
            if (e.status >= 500 || e.status === 429 || e.status === 408) {
              return fail(e, function () { join(freshIdentity); });
            }
            stopWith(e);
          });
        }
        return r.res.json().then(function (s) {
          if (stopped || my !== gen) return;
          if (s.visitor) {
            visitor = s.visitor;
            save(visitorKey, visitor);
          }
          delete s.visitor;
          attempt = 0;
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
      if (stopped) return;
      clearTimer();
      dropConn();
      var name = transports[transportIndex];
      if (name === "ws" && typeof global.WebSocket !== "function") return fallBack();
      if (name === "sse" && typeof global.EventSource !== "function") return fallBack();
      if (name === "ws") openWS();
      else if (name === "sse") openSSE();
      else poll();
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

    // failedBeforeOpen: a push transport never opened. A WebSocket or
    // EventSource does not show why, so ask /status: if the server answers,
    // it refused this transport (or something between us does): fall back.
    // If it does not, the server is unreachable: retry the same transport.
    function failedBeforeOpen(my) {
      probe(my, function (reachable) {
        if (reachable && fallBack()) return;
        fail(reachable ? problem("transport_failed", "the live connection could not be opened", 0)
          : problem("network", "the waiting room cannot be reached", 0), startTransport);
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
        if (r.error) return done(false);
        if (r.res.ok) {
          return r.res.json().then(function (s) { handleState(s, false); if (isLive()) done(true); }, function () { done(true); });
        }
        return readError(r.res).then(function (e) {
          if (stopped || my !== gen) return;
          if (isVisitorProblem(e)) return join(false);
          if (e.status >= 500) return done(false);
          done(true);
        });
      });
    }

    function isLive() {
      return !stopped && !(last && (last.status === "expired" || last.status === "not_in_queue"));
    }

    // onMessage handles one pushed message; the first on a connection
    // marks it live.
    function onMessage(name, data, my, c) {
      if (my !== gen) return;
      if (!c.live) { c.live = true; opened(name); }
      var m;
      try { m = JSON.parse(data); } catch (e) { return; }
      if (m && m.type === "reconnect") {
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

    function wsURL() {
      var u = new URL(api + "/ws", global.location.href);
      u.protocol = u.protocol === "https:" ? "wss:" : "ws:";
      if (visitor) u.searchParams.set("visitor", visitor);
      return u.toString();
    }

    function openWS() {
      var my = gen;
      var isOpen = false;
      var ws;
      try { ws = new global.WebSocket(wsURL()); } catch (e) { return failedBeforeOpen(my); }
      conn = { close: function () { ws.onclose = ws.onmessage = ws.onopen = ws.onerror = null; try { ws.close(1000); } catch (e) {} } };
      // Open is not success yet: the server may still refuse the visitor
      // with a close frame. The first message is (onMessage calls opened).
      ws.onopen = function () { if (my === gen) isOpen = true; };
      var c = { live: false };
      ws.onmessage = function (ev) { onMessage("ws", ev.data, my, c); };
      ws.onerror = noop; // onclose follows and decides
      ws.onclose = function () {
        if (my !== gen) return;
        conn = null;
        gen++;
        if (isOpen) failedAfterOpen();
        else failedBeforeOpen(gen);
      };
    }

    function sseURL() {
      var u = new URL(api + "/sse", global.location.href);
      if (visitor) u.searchParams.set("visitor", visitor);
      return u.toString();
    }

    function openSSE() {
      var my = gen;
      var isOpen = false;
      var es;
      try { es = new global.EventSource(sseURL()); } catch (e) { return failedBeforeOpen(my); }
      conn = { close: function () { es.onopen = es.onerror = null; es.close(); } };
      es.onopen = function () { if (my === gen) isOpen = true; };
      var c = { live: false };
      es.addEventListener("state", function (ev) { onMessage("sse", ev.data, my, c); });
      es.addEventListener("reconnect", function (ev) { onMessage("sse", ev.data, my, c); });
      es.addEventListener("message", function (ev) { onMessage("sse", ev.data, my, c); });
      // EventSource would reconnect by itself on some errors; the client
      // reconnects itself instead, with its own backoff.
      es.onerror = function () {
        if (my !== gen) return;
        es.onopen = es.onerror = null;
        es.close();
        conn = null;
        gen++;
        if (isOpen) failedAfterOpen();
        else failedBeforeOpen(gen);
      };
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
            if (e.status >= 500 || e.status === 429 || e.status === 408) {
              var ra = Number(r.res.headers.get("Retry-After"));
              if (ra > 0) {
                err = e;
                attempt++;
                later(ra * 1000 + backoff(0), poll);
                return emit();
              }
              return fail(e, poll);
            }
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

    // Back online: retry now instead of at the end of a long backoff.
    function onOnline() {
      if (timer && err && err.code === "network") {
        clearTimer();
        if (last === null) join(false);
        else startTransport();
      }
    }
    if (global.addEventListener) global.addEventListener("online", onOnline);

    function close() {
      if (stopped) return;
      clearTimer();
      dropConn();
      if (validTimer) { clearTimeout(validTimer); validTimer = null; }
      stopped = true;
      if (global.removeEventListener) global.removeEventListener("online", onOnline);
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
        stopped = false;
        fatal = false;
        err = null;
        attempt = 0;
        if (global.addEventListener) {
          global.removeEventListener("online", onOnline);
          global.addEventListener("online", onOnline);
        }
        startPosition = 0;
        save(startKey, null);
        join(false);
      }
    };
  }

  global.Waitroom = { connect: connect, version: "1" };
})(typeof window !== "undefined" ? window : this);
