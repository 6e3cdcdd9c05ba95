// admin.js: the dashboard at /admin. Lists the rooms, polls the chosen
// room's stats every second and draws the last few minutes by hand in SVG,
// and steers: creates rooms, edits every setting (each change is previewed
// by the server and confirmed with its effect first) and shows the room's
// audit trail.
(function () {
  "use strict";

  var KEY_STORE = "waitroom:admin-key";
  var POLL_MS = 1000;
  var ROOMS_EVERY_MS = 5000;
  var WINDOW_MS = 5 * 60 * 1000;
  var RATE_WINDOW_MS = 5000;
  var SVG_NS = "http://www.w3.org/2000/svg";

  var $ = function (id) { return document.getElementById(id); };
  var numbers = new Intl.NumberFormat("en");
  var oneDecimal = new Intl.NumberFormat("en", { minimumFractionDigits: 1, maximumFractionDigits: 1 });

  var key = readKey();
  var room = new URLSearchParams(location.search).get("room") || "";
  var rooms = [];
  var points = []; // { t, waiting, rate }
  var statsTimer = null, roomsTimer = null;
  var generation = 0; // stats: bumped on room or key change, late answers are dropped
  var session = 0; // bumped on key change
  var lastOK = 0;
  var totals = []; // { t, total } over the last RATE_WINDOW_MS
  // The rooms table's admitted/s is measured from each room's admittedTotal
  // between two lists (its admittedPerSecond is the rate the ETAs use,
  // which stands still while admission does: paused, or nobody waiting).
  var listTotals = {}; // room -> { t, total } of the previous list
  // The key's role (GET /whoami): what the dashboard offers. Until it is
  // known, nothing that changes anything is shown; the server enforces it
  // either way.
  var RANK = { "read-only": 1, "operator": 2, "admin": 3 };
  var role = "read-only", keyLabel = "";
  // The settings an operator may change; the rest need admin (GET
  // /settings says which: loadSchema).
  var STEER_FIELDS = { paused: true, message: true };

  function readKey() {
    try { return sessionStorage.getItem(KEY_STORE) || ""; } catch (e) { return ""; }
  }
  function writeKey(v) {
    try { if (v) sessionStorage.setItem(KEY_STORE, v); else sessionStorage.removeItem(KEY_STORE); } catch (e) { /* tab-only anyway */ }
  }

  function message(text) {
    var m = $("msg");
    m.hidden = !text;
    m.textContent = text || "";
  }

  // api calls the admin API; it resolves to { status, body } and never
  // rejects (status 0: the server could not be reached).
  function api(method, path, body) {
    var headers = { "Authorization": "Bearer " + key, "Accept": "application/json" };
    if (body !== undefined) headers["Content-Type"] = "application/json";
    return fetch("/api/v1/admin" + path, {
      method: method,
      headers: headers,
      body: body === undefined ? undefined : JSON.stringify(body),
      cache: "no-store",
      credentials: "same-origin"
    }).then(function (res) {
      return res.text().then(function (text) {
        var body = null;
        try { body = text ? JSON.parse(text) : null; } catch (e) { /* not JSON */ }
        return { status: res.status, body: body };
      });
    }, function () { return { status: 0, body: null }; });
  }

  function errorOf(r) {
    return (r.body && r.body.error) || { code: "http_" + r.status, message: "the server answered " + r.status };
  }

  // ---------- key ----------

  function showSignIn(text) {
    stop();
    $("signin").hidden = false;
    $("room-panel").hidden = true;
    $("rooms-panel").hidden = true;
    $("board").hidden = true;
    $("forget").hidden = true;
    $("role-note").hidden = true;
    message(text || "");
    $("key").focus();
  }

  function unauthorized(r) {
    writeKey("");
    key = "";
    var e = errorOf(r);
    showSignIn(e.code === "invalid_admin_key" || r.status === 401
      ? "That admin key was refused (" + e.code + "). Check it and enter it again."
      : e.message);
  }

  $("key-form").addEventListener("submit", function (ev) {
    ev.preventDefault();
    var v = $("key").value.trim();
    if (!v) return;
    key = v;
    writeKey(v);
    $("key").value = "";
    start();
  });

  $("forget").addEventListener("click", function () {
    writeKey("");
    key = "";
    showSignIn("");
  });

  // ---------- role ----------

  function may(need) { return (RANK[role] || 0) >= RANK[need]; }

  // roleLock is why the key's role may not change field ("" when it may).
  function roleLock(field) {
    if (may("admin") || (may("operator") && STEER_FIELDS[field])) return "";
    return "your key (" + keyLabel + ") has the " + role + " role; this needs " + (STEER_FIELDS[field] ? "operator" : "admin") + ".";
  }

  function applyRole() {
    var els = document.querySelectorAll("[data-needs]");
    for (var i = 0; i < els.length; i++) els[i].hidden = !may(els[i].getAttribute("data-needs"));
    var note = $("role-note");
    note.hidden = may("admin");
    note.textContent = may("admin") ? "" : may("operator")
      ? "Signed in as " + keyLabel + " (operator): you may pause, resume and set the message; other settings are read-only."
      : "Signed in as " + keyLabel + " (read-only): you may look, not change.";
    if (settings) fillSettings(settings);
  }

  function loadRole() {
    var my = session;
    return api("GET", "/whoami").then(function (r) {
      if (my !== session) return;
      if (r.status === 401) return unauthorized(r);
      if (r.status === 200 && r.body) {
        role = r.body.role;
        keyLabel = r.body.label;
      }
      applyRole();
    });
  }

  // ---------- rooms ----------

  function loadRooms() {
    var my = session;
    return api("GET", "/rooms").then(function (r) {
      if (my !== session) return;
      if (r.status === 401) return unauthorized(r);
      if (r.status === 200 && r.body && Array.isArray(r.body.rooms)) {
        rooms = r.body.rooms;
        measureRates(rooms, Date.now());
        if (!room && rooms.length) selectRoom(rooms[0].room);
        fillRooms();
        fillRoomsTable();
        loadAudit();
      } else if (r.status !== 0 && !room) {
        message("The room list is not available: " + errorOf(r).message);
      }
      roomsTimer = setTimeout(loadRooms, ROOMS_EVERY_MS);
    });
  }

  // measureRates sets each room's rate (admitted per second since the
  // previous list, null until there is one) from its admittedTotal.
  function measureRates(list, now) {
    var next = {};
    list.forEach(function (r) {
      var prev = listTotals[r.room];
      r.rate = null;
      if (typeof r.admittedTotal !== "number") return;
      next[r.room] = { t: now, total: r.admittedTotal };
      if (prev && now > prev.t) r.rate = Math.max(0, (r.admittedTotal - prev.total) * 1000 / (now - prev.t));
    });
    listTotals = next;
  }

  function fillRooms() {
    var sel = $("room");
    var names = rooms.map(function (r) { return r.room; });
    if (room && names.indexOf(room) < 0) names.unshift(room);
    var want = names.join("\n");
    if (sel.dataset.names === want) {
      names.forEach(function (n, i) { sel.options[i].textContent = label(n); });
      return;
    }
    sel.dataset.names = want;
    sel.textContent = "";
    if (!names.length) {
      var o = document.createElement("option");
      o.value = "";
      o.textContent = "No room has visitors yet";
      sel.appendChild(o);
      sel.disabled = true;
      return;
    }
    sel.disabled = false;
    names.forEach(function (n) {
      var o = document.createElement("option");
      o.value = n;
      o.textContent = label(n);
      sel.appendChild(o);
    });
    sel.value = room;
  }

  function label(name) {
    for (var i = 0; i < rooms.length; i++) {
      if (rooms[i].room === name) return name + " (" + numbers.format(rooms[i].waiting) + " waiting)";
    }
    return name;
  }

  function selectRoom(name) {
    if (name === room && points.length) return;
    room = name;
    points = [];
    totals = [];
    var u = new URL(location.href);
    u.searchParams.set("room", name);
    history.replaceState(null, "", u);
    document.title = name + " · waitroom dashboard";
    $("action-msg").textContent = "";
    $("settings-msg").textContent = "";
    settings = null;
    pollNow();
    loadSettings();
    loadAudit();
    fillRoomsTable();
  }

  $("room").addEventListener("change", function () { selectRoom($("room").value); });

  // ---------- stats ----------

  function pollNow() {
    generation++;
    clearTimeout(statsTimer);
    poll();
  }

  function poll() {
    if (!room || !key) return;
    var my = generation;
    api("GET", "/rooms/" + encodeURIComponent(room) + "/stats").then(function (r) {
      if (my !== generation) return;
      if (r.status === 401) return unauthorized(r);
      if (r.status === 200 && r.body) {
        message("");
        lastOK = Date.now();
        show(r.body);
      } else if (r.status === 0) {
        message("The server can't be reached. Still trying every second; the figures below are from " + sinceText() + ".");
      } else {
        message("Stats are not available: " + errorOf(r).message);
      }
      markStale();
      statsTimer = setTimeout(poll, POLL_MS);
    });
  }

  function sinceText() {
    if (!lastOK) return "no successful update yet";
    return new Date(lastOK).toLocaleTimeString();
  }

  function markStale() {
    var u = $("updated");
    var stale = lastOK && Date.now() - lastOK > 3 * POLL_MS;
    u.className = "meta" + (stale ? " stale" : "");
  }

  // rateOf measures admissions per second from admittedTotal over the last
  // few seconds, so it falls to 0 when admission stops (paused, empty
  // queue). Until two samples exist it shows the server's own figure.
  function rateOf(s, now) {
    if (typeof s.admittedTotal !== "number") return typeof s.admittedPerSecond === "number" ? s.admittedPerSecond : 0;
    totals.push({ t: now, total: s.admittedTotal });
    while (totals.length > 2 && now - totals[1].t >= RATE_WINDOW_MS) totals.shift();
    var first = totals[0];
    if (totals.length < 2 || now - first.t < 1500) return typeof s.admittedPerSecond === "number" ? s.admittedPerSecond : 0;
    return Math.max(0, (s.admittedTotal - first.total) * 1000 / (now - first.t));
  }

  function set(id, text) {
    var n = $(id);
    if (n.textContent !== text) n.textContent = text;
  }

  function ms(v) {
    if (typeof v !== "number") return "–";
    return v < 10 ? oneDecimal.format(v) : numbers.format(Math.round(v));
  }

  // presenceNote: who of those waiting is there (presence on), else "".
  function presenceNote(p) {
    if (!p || !p.on) return "";
    return numbers.format(p.waitingPresent || 0) + " present · " + numbers.format(p.away || 0) + " away";
  }

  // activationNote says what a room with activation busy does now: let
  // visitors straight through, or queue them, and since when.
  function activationNote(a) {
    if (!a || !a.state) return "";
    var since = new Date(a.since).toLocaleTimeString();
    return a.state === "queueing" ? "queueing since " + since + " (activation busy)"
      : "letting visitors straight through since " + since;
  }

  function show(s) {
    var now = Date.now();
    roomStrategy = s.strategy || "";
    var rate = rateOf(s, now);
    $("board").hidden = false;

    set("v-waiting", numbers.format(s.waiting || 0));
    var nw = $("n-waiting");
    if (s.paused && !nw.querySelector(".badge")) {
      nw.textContent = "";
      var badge = document.createElement("span");
      badge.className = "badge";
      badge.textContent = "admission paused";
      nw.appendChild(badge);
    } else if (!s.paused) {
      set("n-waiting", "in line now");
    }

    set("n-activation", activationNote(s.activation));

    set("v-rate", oneDecimal.format(rate));
    set("n-rate", typeof s.admittedTotal === "number" ? numbers.format(s.admittedTotal) + " admitted in total" : "");

    set("n-presence", presenceNote(s.presence));
    set("v-tokens", numbers.format(s.activeTokens || 0));
    var pr = s.presence;
    set("n-tokens", "entries issued, not used yet" + (pr && pr.on ?
      " · " + numbers.format(pr.reclaimedPerMinute || 0) + " taken back / min" +
      (pr.madeUpPerMinute ? ", " + numbers.format(pr.madeUpPerMinute) + " made up" : "") : ""));

    var c = s.connections || {};
    var ws = c.ws || 0, sse = c.sse || 0;
    set("v-conns", numbers.format(ws + sse));
    var inst = s.instances || 0;
    set("n-conns", "WebSocket " + numbers.format(ws) + " · SSE " + numbers.format(sse) +
      (inst ? " · " + inst + (inst === 1 ? " instance" : " instances") : ""));

    var lag = s.deliveryLagMs || {};
    var lagBox = $("v-lag");
    lagBox.textContent = "";
    if (lag.count) {
      lagBox.appendChild(document.createTextNode(ms(lag.p50)));
      var small = document.createElement("small");
      small.textContent = " / " + ms(lag.p99) + " ms";
      lagBox.appendChild(small);
      set("n-lag", "p50 / p99 over " + numbers.format(lag.count) + (lag.count === 1 ? " delivery" : " deliveries"));
    } else {
      lagBox.textContent = "–";
      set("n-lag", "no pushed admissions yet");
    }

    // Keep the picker's count in step with the figures.
    rooms.forEach(function (r) { if (r.room === room) r.waiting = s.waiting || 0; });
    fillRooms();

    var cfg = [];
    if (s.batch && s.tickMs) cfg.push("batch " + numbers.format(s.batch) + " per " + numbers.format(s.tickMs) + " ms tick");
    if (s.tps) cfg.push(numbers.format(s.tps) + " admissions/s at most");
    cfg.push("updated " + new Date(s.at || now).toLocaleTimeString());
    set("updated", cfg.join(" · "));

    var pinned = settings && settings.fromFile && settings.fromFile.paused;
    $("pause").disabled = !!s.paused || !!pinned;
    $("resume").disabled = !s.paused || !!pinned;
    $("pause").title = $("resume").title = pinned || "";

    showAutopilot(s.autopilot);
    var ap = s.autopilot;
    points.push({ t: now, waiting: s.waiting || 0, rate: rate,
      apRate: ap ? ap.rate : null, p95: ap && ap.samples ? ap.p95Ms : null, err: ap && ap.samples ? ap.errorRate * 100 : null });
    while (points.length && points[0].t < now - WINDOW_MS - 1000) points.shift();
    draw();
  }

  // showAutopilot fills the autopilot's tile (hidden for a room with it
  // off): the rate it set, the origin's latency and errors over its last
  // window, and why it last changed the rate.
  function showAutopilot(ap) {
    $("t-autopilot").hidden = !ap;
    $("origin-panel").hidden = !ap;
    $("legend-autopilot").hidden = !ap;
    if (!ap) return;
    var perTick = roomStrategy === "max-active" ? " slots" : " / s";
    set("v-autopilot", oneDecimal.format(ap.rate) + perTick);
    set("n-autopilot", ap.samples ?
      "origin p50 " + ms(ap.p50Ms) + " / p95 " + ms(ap.p95Ms) + " ms · errors " + oneDecimal.format(ap.errorRate * 100) + " % · " +
        numbers.format(ap.samples) + " samples" + (ap.overloaded ? " · overloaded" : "")
      : "no samples from the origin: holding");
    set("n-autopilot-why", ap.reason ? ap.reason + (ap.changedAt ? " (" + new Date(ap.changedAt).toLocaleTimeString() + ")" : "") : "no change yet");
  }
  var roomStrategy = "";

  // Take manual control: the autopilot stops, the room keeps its last rate.
  $("manual").addEventListener("click", function () {
    if (!room) return;
    var out = $("action-msg");
    review({ autopilot: false }, function (done) {
      api("PUT", "/rooms/" + encodeURIComponent(room), { autopilot: false }).then(function (r) {
        done();
        if (r.status === 401) return unauthorized(r);
        if (r.status >= 200 && r.status < 300) {
          out.textContent = "Autopilot off: the room keeps the rate it last set.";
          applied(r.body);
        } else if (r.status === 0) {
          out.textContent = "The server can't be reached; nothing was changed.";
        } else {
          out.textContent = "That did not work: " + errorOf(r).message;
        }
      });
    }, out);
  });

  // ---------- chart ----------

  // niceStep rounds a grid step up to 1, 2, 2.5 or 5 times a power of ten;
  // whole numbers only for counts.
  function niceStep(v, whole) {
    if (!(v > 0)) return whole ? 1 : 0.25;
    var p = Math.pow(10, Math.floor(Math.log10(v)));
    var steps = [1, 2, 2.5, 5, 10];
    for (var i = 0; i < steps.length; i++) {
      var s = steps[i] * p;
      if (s >= v && (!whole || s % 1 === 0)) return s;
    }
    return 10 * p;
  }

  function node(name, attrs, text) {
    var n = document.createElementNS(SVG_NS, name);
    for (var k in attrs) n.setAttribute(k, attrs[k]);
    if (text !== undefined) n.textContent = text;
    return n;
  }

  function draw() {
    var svg = $("chart");
    var w = Math.max(280, svg.clientWidth || 800), h = svg.clientHeight || 260;
    var pad = { l: 48, r: 44, t: 12, b: 26 };
    var iw = w - pad.l - pad.r, ih = h - pad.t - pad.b;
    var now = Date.now();
    // The window grows a minute at a time up to five, so a fresh dashboard
    // does not squeeze its first seconds into a corner.
    var elapsed = points.length ? now - points[0].t : 0;
    var minutes = Math.min(WINDOW_MS / 60000, Math.max(1, Math.ceil(elapsed / 60000)));
    var span = minutes * 60000, t0 = now - span;
    set("chart-title", minutes === 1 ? "Last minute" : "Last " + minutes + " minutes");
    var stepW = niceStep(Math.max.apply(null, points.map(function (p) { return p.waiting; }).concat([4])) / 4, true);
    var stepR = niceStep(Math.max.apply(null, points.map(function (p) { return Math.max(p.rate, p.apRate || 0); }).concat([1])) / 4, false);
    var maxW = stepW * 4, maxR = stepR * 4;

    svg.setAttribute("viewBox", "0 0 " + w + " " + h);
    var desc = $("chart-desc");
    while (svg.lastChild && svg.lastChild !== desc) svg.removeChild(svg.lastChild);

    var x = function (t) { return pad.l + (t - t0) / span * iw; };
    var yW = function (v) { return pad.t + ih - v / maxW * ih; };
    var yR = function (v) { return pad.t + ih - v / maxR * ih; };

    for (var i = 0; i <= 4; i++) {
      var y = pad.t + ih * i / 4;
      svg.appendChild(node("line", { "class": "grid", x1: pad.l, x2: pad.l + iw, y1: y, y2: y }));
      svg.appendChild(node("text", { "class": "axis", x: pad.l - 8, y: y + 4, "text-anchor": "end" }, short(stepW * (4 - i))));
      svg.appendChild(node("text", { "class": "axis", x: pad.l + iw + 8, y: y + 4, "text-anchor": "start" }, short(stepR * (4 - i))));
    }
    var stepSec = minutes === 1 ? 15 : minutes === 2 ? 30 : 60;
    var lastLabel = Infinity;
    for (var sec = 0; sec <= span / 1000; sec += stepSec) {
      var tx = x(now - sec * 1000);
      if (lastLabel - tx < 64) continue; // too tight on a narrow screen
      lastLabel = tx;
      var anchor = sec === 0 ? "end" : sec === span / 1000 ? "start" : "middle";
      var lbl = sec === 0 ? "now" : "\u2212" + (sec % 60 === 0 ? sec / 60 + " min" : sec + " s");
      svg.appendChild(node("text", { "class": "axis", x: tx, y: h - 6, "text-anchor": anchor }, lbl));
    }

    var shown = points.filter(function (p) { return p.t >= t0; });
    if (shown.length) {
      var line = function (key, y) {
        return shown.map(function (p, j) { return (j ? "L" : "M") + x(p.t).toFixed(1) + " " + y(p[key]).toFixed(1); }).join("");
      };
      var dW = line("waiting", yW);
      var first = shown[0], lastP = shown[shown.length - 1];
      svg.appendChild(node("path", { "class": "area-a", d: dW + "L" + x(lastP.t).toFixed(1) + " " + (pad.t + ih) + "L" + x(first.t).toFixed(1) + " " + (pad.t + ih) + "Z" }));
      svg.appendChild(node("path", { "class": "series-a", d: dW }));
      svg.appendChild(node("path", { "class": "series-b", d: line("rate", yR) }));
      var withAP = shown.filter(function (p) { return p.apRate !== null; });
      if (withAP.length) {
        svg.appendChild(node("path", { "class": "series-c", d: withAP.map(function (p, j) {
          return (j ? "L" : "M") + x(p.t).toFixed(1) + " " + yR(p.apRate).toFixed(1);
        }).join("") }));
      }
      desc.textContent = "Now " + numbers.format(lastP.waiting) + " waiting and " + oneDecimal.format(lastP.rate) +
        " admitted per second; the most waiting in this window was " +
        numbers.format(Math.max.apply(null, shown.map(function (p) { return p.waiting; }))) + ".";
    }
    drawOrigin(t0, span);
  }

  // drawOrigin draws the origin's p95 latency (left axis, with the
  // latency target dashed) and error percentage (right axis) as the
  // autopilot saw them, over the main chart's window.
  function drawOrigin(t0, span) {
    var svg = $("origin-chart");
    if ($("origin-panel").hidden) return;
    var w = Math.max(280, svg.clientWidth || 800), h = svg.clientHeight || 260;
    var pad = { l: 48, r: 44, t: 12, b: 26 };
    var iw = w - pad.l - pad.r, ih = h - pad.t - pad.b;
    var target = (settings && settings.latencyTarget) || 500;
    var shown = points.filter(function (p) { return p.t >= t0 && p.p95 !== null; });
    var stepL = niceStep(Math.max.apply(null, shown.map(function (p) { return p.p95; }).concat([target * 1.25])) / 4, true);
    var stepE = niceStep(Math.max.apply(null, shown.map(function (p) { return p.err; }).concat([1])) / 4, false);
    var maxL = stepL * 4, maxE = stepE * 4;
    svg.setAttribute("viewBox", "0 0 " + w + " " + h);
    var desc = $("origin-desc");
    while (svg.lastChild && svg.lastChild !== desc) svg.removeChild(svg.lastChild);
    var x = function (t) { return pad.l + (t - t0) / span * iw; };
    var yL = function (v) { return pad.t + ih - v / maxL * ih; };
    var yE = function (v) { return pad.t + ih - v / maxE * ih; };
    for (var i = 0; i <= 4; i++) {
      var y = pad.t + ih * i / 4;
      svg.appendChild(node("line", { "class": "grid", x1: pad.l, x2: pad.l + iw, y1: y, y2: y }));
      svg.appendChild(node("text", { "class": "axis", x: pad.l - 8, y: y + 4, "text-anchor": "end" }, short(stepL * (4 - i))));
      svg.appendChild(node("text", { "class": "axis", x: pad.l + iw + 8, y: y + 4, "text-anchor": "start" }, short(stepE * (4 - i))));
    }
    svg.appendChild(node("line", { "class": "target", x1: pad.l, x2: pad.l + iw, y1: yL(target), y2: yL(target) }));
    if (!shown.length) {
      desc.textContent = "No samples from the origin yet.";
      return;
    }
    var line = function (key, yf) {
      return shown.map(function (p, j) { return (j ? "L" : "M") + x(p.t).toFixed(1) + " " + yf(p[key]).toFixed(1); }).join("");
    };
    svg.appendChild(node("path", { "class": "series-a", d: line("p95", yL) }));
    svg.appendChild(node("path", { "class": "series-b", d: line("err", yE) }));
    var last = shown[shown.length - 1];
    desc.textContent = "Now the origin's p95 is " + numbers.format(Math.round(last.p95)) + " ms against a target of " +
      numbers.format(target) + " ms, and " + oneDecimal.format(last.err) + " % of its requests fail.";
  }

  function short(v) {
    if (v >= 1e6) return +(v / 1e6).toFixed(2) + "M";
    if (v >= 1e4) return +(v / 1e3).toFixed(1) + "k";
    return String(+v.toFixed(2));
  }

  window.addEventListener("resize", function () { if (points.length) draw(); });

  // ---------- pause / resume ----------

  function control(action) {
    if (!room) return;
    review({ paused: action === "pause" }, function (done) {
      var out = $("action-msg");
      api("POST", "/rooms/" + encodeURIComponent(room) + "/" + action).then(function (r) {
        done();
        if (r.status === 401) return unauthorized(r);
        if (r.status >= 200 && r.status < 300) {
          out.textContent = action === "pause" ? "Admission is paused. Visitors keep their places." : "Admission resumed.";
          applied(r.body);
        } else if (r.status === 0) {
          out.textContent = "The server can't be reached; nothing was changed.";
        } else {
          out.textContent = "That did not work: " + errorOf(r).message;
        }
      });
    }, $("action-msg"));
  }
  $("pause").addEventListener("click", function () { control("pause"); });
  $("resume").addEventListener("click", function () { control("resume"); });

  // ---------- rooms table and creation ----------

  function cell(tr, text, cls) {
    var td = document.createElement("td");
    if (cls) td.className = cls;
    td.textContent = text;
    tr.appendChild(td);
    return td;
  }

  function fillRoomsTable() {
    var body = $("rooms-table").tBodies[0];
    body.textContent = "";
    if (!rooms.length) {
      var tr = document.createElement("tr");
      var td = cell(tr, "No rooms yet. Create one below.");
      td.colSpan = 5;
      body.appendChild(tr);
      return;
    }
    rooms.forEach(function (r) {
      var tr = document.createElement("tr");
      tr.dataset.room = r.room;
      if (r.room === room) tr.setAttribute("aria-current", "true");
      var th = document.createElement("th");
      th.scope = "row";
      var b = document.createElement("button");
      b.type = "button";
      b.className = "pick";
      b.textContent = r.room;
      b.setAttribute("aria-label", "Show room " + r.room);
      b.addEventListener("click", function () { selectRoom(r.room); $("room").value = r.room; });
      th.appendChild(b);
      tr.appendChild(th);
      cell(tr, numbers.format(r.waiting || 0), "num");
      // The chosen room's figure is the board's, measured every second.
      var rate = r.rate;
      if (r.room === room && points.length) rate = points[points.length - 1].rate;
      cell(tr, rate === null || rate === undefined ? "–" : oneDecimal.format(rate), "num");
      cell(tr, numbers.format(r.sessions || 0), "num");
      var state = [];
      if (r.paused) state.push("paused");
      if (r.fromFile) state.push("rooms file");
      if (!r.configured) state.push("not created (open room)");
      cell(tr, state.join(" · ") || "admitting");
      body.appendChild(tr);
    });
  }

  $("create-form").addEventListener("submit", function (ev) {
    ev.preventDefault();
    var input = $("new-room"), out = $("create-msg");
    var name = input.value.trim();
    if (!/^[a-z0-9][a-z0-9-]{0,63}$/.test(name)) {
      input.setAttribute("aria-invalid", "true");
      out.textContent = "A room name is lower-case letters, digits and dashes, starting with a letter or digit.";
      input.focus();
      return;
    }
    input.removeAttribute("aria-invalid");
    out.textContent = "Creating " + name + "…";
    api("POST", "/rooms", { room: name }).then(function (r) {
      if (r.status === 401) return unauthorized(r);
      if (r.status === 201) {
        out.textContent = "Room " + name + " created.";
        input.value = "";
        rooms.push({ room: name, waiting: 0, admittedPerSecond: 0, sessions: 0, configured: true });
        rooms.sort(function (a, b) { return a.room < b.room ? -1 : 1; });
        selectRoom(name);
        fillRooms();
        $("room").value = name;
      } else if (r.status === 0) {
        out.textContent = "The server can't be reached; nothing was created.";
      } else {
        out.textContent = "Not created: " + errorOf(r).message;
      }
    });
  });

  // ---------- settings ----------

  // FIELDS are the settings the form edits (pause and resume have their
  // buttons above), with the admin API's names, labels, kinds and hints as
  // GET /settings describes them (the server's one list of the settings).
  var FIELDS = [];
  var schema = null; // the promise of GET /settings, once it is asked

  // loadSchema reads the settings' description once per key and builds
  // the form from it; it resolves when the form is there (or could not be
  // built: then it asks again next time).
  function loadSchema() {
    if (schema) return schema;
    var my = session;
    schema = api("GET", "/settings").then(function (r) {
      if (r.status === 401) {
        schema = null;
        if (my === session) unauthorized(r);
        return;
      }
      if (r.status !== 200 || !r.body || !Array.isArray(r.body.settings)) {
        schema = null;
        $("settings-msg").textContent = "The settings form is not available: " + errorOf(r).message;
        return;
      }
      var steer = {};
      r.body.settings.forEach(function (f) { if (f.steer) steer[f.name] = true; });
      STEER_FIELDS = steer;
      FIELDS = r.body.settings.filter(function (f) { return f.form; });
      buildForm();
    });
    return schema;
  }

  var settings = null; // the room's settings as last read (effective values)
  var settingsGen = 0;

  function buildForm() {
    var grid = $("settings-fields");
    grid.textContent = "";
    FIELDS.forEach(function (f) {
      var wrap = document.createElement("div");
      wrap.className = "field" + (f.kind === "text" ? " wide" : "");
      wrap.id = "f-" + f.name;
      var id = "s-" + f.name;
      var label = document.createElement("label");
      label.htmlFor = id;
      label.textContent = f.label;
      var input;
      if (f.kind === "select" || f.kind === "bool") {
        input = document.createElement("select");
        f.options.forEach(function (o) {
          var opt = document.createElement("option");
          opt.value = o;
          opt.textContent = o;
          input.appendChild(opt);
        });
      } else if (f.kind === "text") {
        input = document.createElement("textarea");
        input.maxLength = 500;
        input.rows = 2;
      } else {
        input = document.createElement("input");
        input.type = f.kind === "time" ? "text" : "number";
        if (f.kind === "int") input.step = "1";
        if (f.kind === "number") input.step = "any";
        if (f.kind !== "time") input.min = "0";
        input.spellcheck = false;
      }
      input.id = id;
      input.name = f.name;
      var hint = document.createElement("p");
      hint.className = "hint";
      hint.id = id + "-hint";
      hint.textContent = f.hint;
      var lock = document.createElement("p");
      lock.className = "lock";
      lock.id = id + "-lock";
      lock.hidden = true;
      input.setAttribute("aria-describedby", hint.id + " " + lock.id);
      input.addEventListener("input", function () { markEdited(f); });
      wrap.appendChild(label);
      wrap.appendChild(input);
      wrap.appendChild(hint);
      wrap.appendChild(lock);
      grid.appendChild(wrap);
    });
  }

  function inputOf(f) { return $("s-" + f.name); }

  function shown(f, v) {
    if (v === null || v === undefined) return "";
    return String(v);
  }

  function fillSettings(cfg) {
    settings = cfg;
    var locks = cfg.fromFile || {};
    FIELDS.forEach(function (f) {
      var input = inputOf(f), lock = $("s-" + f.name + "-lock");
      input.value = shown(f, cfg[f.name]);
      input.removeAttribute("aria-invalid");
      var reason = locks[f.name] || roleLock(f.name);
      lock.hidden = !reason;
      lock.textContent = reason ? "Read-only: " + reason : "";
      if (input.tagName === "SELECT") input.disabled = !!reason;
      else input.readOnly = !!reason;
      markEdited(f);
    });
  }

  function markEdited(f) {
    var wrap = $("f-" + f.name);
    var edited = settings && inputOf(f).value !== shown(f, settings[f.name]);
    wrap.classList.toggle("edited", !!edited);
  }

  function loadSettings() {
    if (!room || !key) return;
    var my = ++settingsGen;
    loadSchema().then(function () {
      if (my !== settingsGen || !FIELDS.length) return null;
      return api("GET", "/rooms/" + encodeURIComponent(room));
    }).then(function (r) {
      if (!r) return;
      if (my !== settingsGen) return;
      if (r.status === 401) return unauthorized(r);
      if (r.status === 200 && r.body) fillSettings(r.body);
      else $("settings-msg").textContent = "The settings are not available: " + errorOf(r).message;
    });
  }

  // patch collects the edited fields, as the API takes them; null when a
  // value cannot be read (the field is marked).
  function patch() {
    var out = {}, bad = null;
    FIELDS.forEach(function (f) {
      var input = inputOf(f);
      input.removeAttribute("aria-invalid");
      var raw = input.value;
      if (!settings || raw === shown(f, settings[f.name])) return;
      var v = raw;
      if (f.kind === "int" || f.kind === "number") {
        v = Number(raw);
        if (raw.trim() === "" || !isFinite(v) || (f.kind === "int" && Math.floor(v) !== v)) {
          input.setAttribute("aria-invalid", "true");
          bad = bad || { field: f, text: f.label + " must be " + (f.kind === "int" ? "a whole number" : "a number") + "." };
          return;
        }
      } else if (f.kind === "time") {
        v = raw.trim();
      } else if (f.kind === "bool") {
        v = raw === "true";
      }
      out[f.name] = v;
    });
    if (bad) {
      $("settings-msg").textContent = bad.text;
      inputOf(bad.field).focus();
      return null;
    }
    return out;
  }

  $("settings-form").addEventListener("submit", function (ev) {
    ev.preventDefault();
    var p = patch();
    if (!p) return;
    var out = $("settings-msg");
    if (!Object.keys(p).length) {
      out.textContent = "Nothing is edited.";
      return;
    }
    review(p, function (done) {
      api("PUT", "/rooms/" + encodeURIComponent(room), p).then(function (r) {
        done();
        if (r.status === 401) return unauthorized(r);
        if (r.status === 200) {
          out.textContent = "Saved.";
          applied(r.body);
        } else {
          showFieldError(r, out);
        }
      });
    }, out);
  });

  $("revert").addEventListener("click", function () {
    if (settings) fillSettings(settings);
    $("settings-msg").textContent = "";
  });

  function showFieldError(r, out) {
    if (r.status === 0) {
      out.textContent = "The server can't be reached; nothing was changed.";
      return;
    }
    var e = errorOf(r);
    out.textContent = "Not changed: " + e.message;
    FIELDS.forEach(function (f) {
      if (f.name === e.field) {
        inputOf(f).setAttribute("aria-invalid", "true");
        inputOf(f).focus();
      }
    });
  }

  // applied takes the settings a change returned and refreshes the rest.
  function applied(cfg) {
    if (cfg && cfg.room === room) fillSettings(cfg);
    pollNow();
    loadAudit();
  }

  // review asks the server what p would do and, once the operator confirms
  // in the dialog, calls commit(done); done closes the dialog.
  function review(p, commit, out) {
    api("POST", "/rooms/" + encodeURIComponent(room) + "/preview", p).then(function (r) {
      if (r.status === 401) return unauthorized(r);
      if (r.status !== 200 || !r.body) return showFieldError(r, out);
      var dlg = $("confirm");
      $("confirm-room").textContent = room;
      var changes = $("confirm-changes"), effects = $("confirm-effects");
      changes.textContent = "";
      effects.textContent = "";
      (r.body.changes || []).forEach(function (c) {
        var li = document.createElement("li");
        li.textContent = c.field + ": " + valueText(c.from) + " \u2192 " + valueText(c.to);
        changes.appendChild(li);
      });
      if (!changes.childNodes.length) {
        var same = document.createElement("li");
        same.textContent = "No setting changes value.";
        changes.appendChild(same);
      }
      (r.body.effects || []).forEach(function (t) {
        var li = document.createElement("li");
        li.textContent = t;
        effects.appendChild(li);
      });
      dlg.returnValue = "";
      dlg.onclose = function () {
        if (dlg.returnValue === "apply") {
          out.textContent = "Applying…";
          commit(function () {});
        } else {
          out.textContent = "Nothing was changed.";
        }
      };
      dlg.showModal();
      $("confirm-apply").focus();
    });
  }

  function valueText(v) {
    if (v === null || v === undefined || v === "") return "(none)";
    if (typeof v === "string") return "\u201c" + v + "\u201d";
    return String(v);
  }

  // ---------- audit trail ----------

  var auditGen = 0;

  function loadAudit() {
    if (!room || !key) return;
    var my = ++auditGen;
    var forRoom = room;
    api("GET", "/rooms/" + encodeURIComponent(room) + "/audit").then(function (r) {
      if (my !== auditGen || forRoom !== room) return;
      if (r.status === 401) return unauthorized(r);
      if (r.status !== 200 || !r.body) return;
      var body = $("audit-table").tBodies[0];
      body.textContent = "";
      var entries = r.body.entries || [];
      if (!entries.length) {
        var tr = document.createElement("tr");
        cell(tr, "No changes recorded yet.").colSpan = 3;
        body.appendChild(tr);
      }
      entries.forEach(function (e) {
        var tr = document.createElement("tr");
        var when = cell(tr, new Date(e.at).toLocaleString());
        when.title = e.at;
        cell(tr, e.who);
        var what = (e.changes || []).map(function (c) {
          return c.field + " " + valueText(c.from) + " \u2192 " + valueText(c.to);
        }).join("; ");
        if (e.invites) {
          what = e.invites.count + " code" + (e.invites.count === 1 ? "" : "s") + ", " + e.invites.uses + " use" +
            (e.invites.uses === 1 ? "" : "s") + " each" + (e.invites.priority ? ", priority" : "") + ", until " + e.invites.expiresAt;
        }
        if (e.visitor) what += (what ? "; " : "") + "visitor " + e.visitor;
        cell(tr, e.action + (what ? ": " + what : ""));
        body.appendChild(tr);
      });
    });
  }

  // ---------- start ----------

  function stop() {
    generation++;
    session++;
    clearTimeout(statsTimer);
    clearTimeout(roomsTimer);
  }

  function start() {
    stop();
    message("");
    $("signin").hidden = true;
    $("room-panel").hidden = false;
    $("rooms-panel").hidden = false;
    $("forget").hidden = false;
    role = "read-only";
    applyRole();
    loadRole();
    fillRooms();
    loadRooms();
    if (room) { pollNow(); loadSettings(); }
  }

  if (key) start(); else showSignIn("");
})();
