// page.js: the waiting-room page at /?room=NAME, built on waitroom.js.
(function () {
  "use strict";

  var params = new URLSearchParams(location.search);
  var room = params.get("room") || "demo";
  var transportsParam = params.get("transports"); // e.g. "sse,poll", for trying fallbacks
  // Under a gateway the page lives below a prefix (/waitroom/?room=…) and
  // reaches the API there; at the root the prefix is "".
  var base = location.pathname.replace(/\/[^/]*$/, "");
  var api = base + "/api/v1/rooms/" + encodeURIComponent(room);
  // Sent here by a gateway: once admitted, go back where the visitor was
  // going (the server checks the URL and sets the session cookie).
  var returnTo = params.get("return");
  var returning = false;
  // An invite or priority code in the link the visitor was sent
  // (/?room=drop&invite=…) goes with the join.
  var invite = params.get("invite") || undefined;

  var $ = function (id) { return document.getElementById(id); };
  var el = {
    card: $("card"), eyebrow: $("eyebrow"), headline: $("headline"),
    figures: $("figures"), position: $("position"), eta: $("eta"),
    bar: $("bar"), fill: $("bar-fill"), detail: $("detail"), sub: $("sub"),
    announce: $("announce"), actions: $("actions"), orderMsg: $("order-msg"),
    connMsg: $("conn-msg"), transport: $("transport"), leave: $("leave"),
    roomName: $("room-name"), activation: $("activation")
  };

  var ANNOUNCE_EVERY_MS = 15000;

  // ---------- language ----------
  // The server puts the visitor's language (the switcher's remembered
  // choice, else Accept-Language) and its words in #waitroom-boot; the
  // words live in static/i18n-LANG.json, one file per language.
  var boot = (function () {
    var n = document.getElementById("waitroom-boot");
    try { return (n && JSON.parse(n.textContent)) || {}; } catch (e) { return {}; }
  })();
  // An operator's preview (GET /admin/preview) brings a made-up state in
  // the boot data: the page shows it for the room it names and never joins
  // or connects.
  var preview = boot.preview && boot.preview.type === "state" ? boot.preview : null;
  if (preview) room = preview.room;
  var lang = "en", words = {}, fmt = {};
  var LANG_COOKIE = "waitroom_lang";

  // t returns the words for key in the page's language, with {name}
  // replaced from vars; a key without words shows as itself.
  function t(key, vars) {
    var s = Object.prototype.hasOwnProperty.call(words, key) ? words[key] : key;
    return vars ? s.replace(/\{(\w+)\}/g, function (m, k) { return k in vars ? String(vars[k]) : m; }) : s;
  }

  function setLanguage(code, text) {
    lang = code;
    words = text || {};
    document.documentElement.lang = code;
    fmt = {
      number: new Intl.NumberFormat(code),
      percent: new Intl.NumberFormat(code, { style: "percent" }),
      chance: new Intl.NumberFormat(code, { style: "percent", maximumSignificantDigits: 2 }),
      clock: new Intl.DateTimeFormat(code, { hour: "2-digit", minute: "2-digit" }),
      relative: new Intl.RelativeTimeFormat(code, { numeric: "auto" }),
      ordinal: new Intl.PluralRules(code, { type: "ordinal" }),
      units: {}
    };
  }

  // unit formats n seconds, minutes or hours with Intl ("5 min", "5分").
  function unit(n, name, display, fraction) {
    var k = name + display + (fraction || 0);
    if (!fmt.units[k]) {
      var o = { minimumFractionDigits: fraction || 0, maximumFractionDigits: fraction || 0 };
      try {
        fmt.units[k] = new Intl.NumberFormat(lang, Object.assign({ style: "unit", unit: name, unitDisplay: display }, o));
      } catch (e) { // a browser without Intl units: the number and a short unit
        var plain = new Intl.NumberFormat(lang, o), short = { second: "s", minute: "min", hour: "h" }[name];
        fmt.units[k] = { format: function (v) { return plain.format(v) + " " + short; } };
      }
    }
    return fmt.units[k].format(n);
  }

  // applyStatic puts the words into the page's own markup.
  function applyStatic() {
    var i, nodes = document.querySelectorAll("[data-i18n]");
    for (i = 0; i < nodes.length; i++) nodes[i].textContent = t(nodes[i].getAttribute("data-i18n"));
    nodes = document.querySelectorAll("[data-i18n-aria-label]");
    for (i = 0; i < nodes.length; i++) nodes[i].setAttribute("aria-label", t(nodes[i].getAttribute("data-i18n-aria-label")));
    el.roomName.textContent = t("roomLabel", { room: room });
    document.title = t("docTitle", { room: look.title || room });
    if (look.title) $("brand-text").textContent = look.title;
  }

  // ---------- the room's look ----------
  // A room's branding (from the boot data; the server checked the URLs and
  // colours and cleaned the footer to a few plain tags).
  var look = boot.branding || {};

  // light reports whether a #rgb or #rrggbb colour is light, so text on it
  // is dark (relative luminance, as WCAG computes it).
  function light(hex) {
    var h = hex.slice(1);
    if (h.length === 3) h = h.replace(/./g, "$&$&");
    var c = [0, 2, 4].map(function (i) {
      var v = parseInt(h.substr(i, 2), 16) / 255;
      return v <= 0.03928 ? v / 12.92 : Math.pow((v + 0.055) / 1.055, 2.4);
    });
    return 0.2126 * c[0] + 0.7152 * c[1] + 0.0722 * c[2] > 0.179;
  }

  function applyBranding() {
    var root = document.documentElement.style, body = document.body.classList;
    if (look.accent) {
      root.setProperty("--accent", look.accent);
      root.setProperty("--focus", look.accent);
      root.setProperty("--accent-text", light(look.accent) ? "#111418" : "#ffffff");
      body.add("branded");
    }
    if (look.background && look.background.charAt(0) === "#") {
      root.setProperty("--bg", look.background);
      root.setProperty("--on-bg", light(look.background) ? "#1a1d21" : "#f1f3f5");
      body.add("branded-bg");
    } else if (look.background) {
      document.body.style.backgroundImage = "url(\"" + look.background + "\")";
      body.add("branded-image");
    }
    if (look.logo) {
      var img = document.createElement("img");
      img.src = look.logo;
      img.alt = "";
      img.id = "brand-logo";
      img.className = "brand-logo";
      $("brand-mark").replaceWith(img);
    }
    if (look.footer) {
      $("brand-foot").innerHTML = look.footer;
      $("brand-foot").hidden = false;
    }
  }

  setLanguage(boot.lang || "en", boot.text);
  var TRANSPORT_NAMES = { ws: "WebSocket", sse: "SSE", poll: null };
  var TEXT = {
    live: function (name) { return t("live", { transport: TRANSPORT_NAMES[name] || t("polling") }); },
    retryIn: function (secs) { return secs > 0 ? t("retryIn", { duration: unit(secs, "second", "short") }) : t("retryNow"); }
  };
  ["liveOtherTab", "connecting", "solving", "offlineRetrying", "finished", "notConnected", "unreachable",
    "keepPlace", "otherTab", "degraded", "degradedShort", "announceLost", "announceBack", "announceDegraded",
    "announceOtherTab"].forEach(function (k) {
    Object.defineProperty(TEXT, k, { get: function () { return t(k); } });
  });
  TEXT.trouble = function (message) { return t("trouble", { message: message }); };

  var wr = null;
  var view = "queue"; // queue | ordering | done | left
  var last = { state: null, info: null };
  var moving = null; // the waiting figures to interpolate, or null
  var validAt = 0; // performance.now() when the entry becomes usable
  var retryAt = 0; // performance.now() of the next connection retry
  var ticker = null;
  // The live region's last words: status (paused, admitted, sold out,
  // opening, connection) is said at once; a position only every
  // ANNOUNCE_EVERY_MS, the latest one held back until then.
  var announced = { at: 0, status: "", detail: "" };
  var pending = null;
  var connSaid = ""; // the connection news last announced
  var tooEarlyTries = 0;
  var focusedAction = false;

  applyBranding();
  applyStatic();

  // The switcher: the choice is remembered in a cookie the server reads,
  // so the next page load starts in it; the page switches at once.
  (function () {
    var langs = boot.langs || [];
    var select = document.getElementById("lang"), box = document.getElementById("lang-box");
    if (!select || !box || langs.length < 2) return;
    langs.forEach(function (l) {
      var o = document.createElement("option");
      o.value = l.code;
      o.textContent = l.name;
      o.lang = l.code;
      select.appendChild(o);
    });
    select.value = lang;
    box.hidden = false;
    select.addEventListener("change", function () {
      var code = select.value;
      document.cookie = LANG_COOKIE + "=" + encodeURIComponent(code) + "; path=/; max-age=31536000; SameSite=Lax";
      fetch(base + "/assets/i18n-" + encodeURIComponent(code) + ".json", { credentials: "same-origin" })
        .then(function (res) { if (!res.ok) throw new Error(res.status); return res.json(); })
        .then(function (text) {
          setLanguage(code, text);
          applyStatic();
          renderTransport(last.info);
          if (view === "queue" && last.info) {
            el.actions.dataset.key = ""; // the buttons are rebuilt in the new words
            render(last.state, last.info);
          }
          updateConnectionText();
        })
        .catch(function () { select.value = lang; });
    });
  })();

  // ---------- formatting ----------

  function ordinal(n) {
    var key = { one: "ordinalOne", two: "ordinalTwo", few: "ordinalFew" }[fmt.ordinal.select(n)] || "ordinalOther";
    return t(key, { n: fmt.number.format(n) });
  }

  // span formats a duration with Intl's units, in the given display.
  function span(sec, display) {
    if (sec < 60) return unit(sec, "second", display);
    var min = Math.round(sec / 60);
    if (min < 60) return unit(min, "minute", display);
    var h = Math.floor(min / 60), m = min % 60;
    return unit(h, "hour", display) + (m ? " " + unit(m, "minute", display) : "");
  }

  function duration(sec) {
    sec = Math.max(0, Math.round(sec));
    if (sec < 1) return t("underSecond", { duration: unit(1, "second", "short") });
    return span(sec, "short");
  }

  function durationWords(sec) {
    sec = Math.max(0, Math.round(sec));
    if (sec < 1) return t("lessThanSecond");
    return t("about", { duration: span(sec, "long") });
  }

  // spanRange formats a range of seconds in one unit, the unit once
  // ("4–6 minutes", "4～6分"), or "" when low and high come out the same
  // in it: the page then shows the single ETA as without a range.
  function spanRange(low, high, display) {
    var name = "hour", div = 3600, step = 0.1;
    if (high < 60) { name = "second"; div = 1; step = 1; }
    else if (high < 3600) { name = "minute"; div = 60; step = 1; }
    var lo = Math.max(step, Math.round(low / div / step) * step);
    var hi = Math.round(high / div / step) * step;
    if (!(hi > lo)) return "";
    var fraction = step < 1 ? 1 : 0;
    unit(hi, name, display, fraction); // readies the formatter
    var f = fmt.units[name + display + fraction];
    if (f.formatRange) {
      try { return f.formatRange(lo, hi); } catch (e) { /* an old Intl: below */ }
    }
    return unit(lo, name, display, fraction) + " – " + unit(hi, name, display, fraction);
  }

  // waitText is the wait a state shows, eta seconds from now and the range
  // moved on as much: "about 4–6 minutes" when the range says more than
  // the ETA, else the ETA alone (long: in words, for announcements).
  function waitText(eta, range, long) {
    var r = range ? spanRange(range.low, range.high, "long") : "";
    if (r) return t("aboutRange", { range: r });
    return long ? durationWords(eta) : duration(eta);
  }

  // relative says when a time is, from now ("in 5 minutes", "5 分後").
  function relative(sec) {
    sec = Math.max(0, Math.round(sec));
    if (sec < 60) return fmt.relative.format(sec, "second");
    if (sec < 3600) return fmt.relative.format(Math.round(sec / 60), "minute");
    return fmt.relative.format(Math.round(sec / 360) / 10, "hour");
  }

  function clock(iso) {
    var d = new Date(iso);
    return isNaN(d) ? "" : fmt.clock.format(d);
  }

  // ---------- small DOM helpers ----------

  function setText(node, text) {
    if (node.textContent !== text) node.textContent = text;
  }

  function setProgress(fraction) {
    var pct = Math.round(Math.max(0, Math.min(1, fraction)) * 100);
    el.fill.style.width = pct + "%";
    el.bar.setAttribute("aria-valuenow", String(pct));
    el.bar.setAttribute("aria-valuetext", t("progressText", { percent: fmt.percent.format(pct / 100) }));
  }

  function button(label, kind, onClick, id) {
    var b = document.createElement("button");
    b.type = "button";
    b.className = kind;
    b.textContent = label;
    if (id) b.id = id;
    b.addEventListener("click", onClick);
    return b;
  }

  function setActions(key, build) {
    if (el.actions.dataset.key === key) return;
    el.actions.dataset.key = key;
    el.actions.textContent = "";
    if (build) build(el.actions);
  }

  function notice(node, kind, text) {
    if (!text) { node.hidden = true; node.textContent = ""; return; }
    node.className = "notice" + (kind ? " " + kind : "");
    setText(node, text);
    node.hidden = false;
  }

  // announce updates the polite live region. status names the situation
  // (waiting, paused, admitted, sold out…): a new one is said at once.
  // detail (a position) changes within one status are said at most every
  // ANNOUNCE_EVERY_MS; the latest is held and said when that time is up,
  // so a screen reader is neither flooded nor left with old news.
  function announce(text, status, detail, force) {
    detail = detail || "";
    var now = Date.now();
    if (!force && announced.status === status && announced.detail === detail) { pending = null; return; }
    if (!force && announced.status === status && now - announced.at < ANNOUNCE_EVERY_MS) {
      pending = { text: text, status: status, detail: detail };
      return;
    }
    pending = null;
    announced = { at: now, status: status, detail: detail };
    setText(el.announce, text);
  }

  function flushAnnouncement() {
    if (pending && Date.now() - announced.at >= ANNOUNCE_EVERY_MS) {
      var p = pending;
      announce(p.text, p.status, p.detail);
    }
  }

  // announceConnection says a change of the connection's situation once:
  // not the countdown, which only the visible notice shows.
  function announceConnection(info) {
    var what = "";
    if (info && !info.fatal && view === "queue") {
      if (info.error && info.error.code === "network") what = "lost";
      else if (info.degraded) what = "degraded";
      else if (info.otherTab) what = "otherTab";
    }
    if (what === connSaid) return;
    var was = connSaid;
    connSaid = what;
    var say = what === "lost" ? TEXT.announceLost : what === "degraded" ? TEXT.announceDegraded
      : what === "otherTab" ? TEXT.announceOtherTab : (was === "lost" || was === "degraded") ? TEXT.announceBack : "";
    if (!say) return;
    // Said beside the queue's status, not instead of it: the next position
    // waits its turn as after any announcement, a new status does not.
    announced.at = Date.now();
    setText(el.announce, say);
  }

  function show(parts) {
    el.card.dataset.status = parts.status;
    setText(el.eyebrow, parts.eyebrow || t("brand"));
    setText(el.headline, parts.headline);
    setText(el.detail, parts.detail || "");
    setText(el.sub, parts.sub || "");
    el.sub.hidden = !parts.sub;
    el.figures.hidden = !parts.figures;
    el.bar.hidden = parts.progress === undefined;
    if (parts.progress !== undefined) setProgress(parts.progress);
  }

  // ---------- rendering ----------

  function renderTransport(info) {
    var name = info && info.transport, text, key;
    if (view === "done" || view === "left") {
      key = "none"; text = TEXT.finished;
    } else if (info && info.fatal) {
      key = "none"; text = TEXT.notConnected;
    } else if (info && info.solving) {
      key = "none"; text = TEXT.solving;
    } else if (info && info.error && info.error.code === "network") {
      key = "offline"; text = TEXT.offlineRetrying;
    } else if (name === "poll" && info.otherTab) {
      key = name; text = TEXT.liveOtherTab;
    } else if (name) {
      key = name; text = TEXT.live(name);
    } else {
      key = "none"; text = TEXT.connecting;
    }
    el.transport.dataset.transport = key;
    setText(el.transport, text);
  }

  // renderConnection shows what is wrong with the connection in a notice
  // that is no live region: its countdown changes every second. The change
  // of situation itself is announced once (announceConnection).
  function renderConnection(info) {
    announceConnection(info);
    if (!info || info.fatal || view === "done" || view === "left" ||
        (!info.error && !info.degraded && !info.otherTab)) {
      notice(el.connMsg, "", "");
      retryAt = 0;
      return;
    }
    retryAt = info.error ? performance.now() + (info.retryInMs || 0) : 0;
    updateConnectionText();
  }

  function updateConnectionText() {
    var info = last.info;
    if (!info || info.fatal || view === "done" || view === "left") return;
    if (info.error && info.error.code === "network") {
      if (!retryAt) return;
      var secs = Math.max(0, Math.ceil((retryAt - performance.now()) / 1000));
      notice(el.connMsg, "bad", TEXT.unreachable + " " + TEXT.retryIn(secs) + (last.state ? " " + TEXT.keepPlace : ""));
    } else if (info.degraded) {
      notice(el.connMsg, "warn", TEXT.degraded);
    } else if (info.error) {
      if (!retryAt) return;
      var s = Math.max(0, Math.ceil((retryAt - performance.now()) / 1000));
      notice(el.connMsg, "bad", TEXT.trouble(info.error.message) + " " + TEXT.retryIn(s) + (last.state ? " " + TEXT.keepPlace : ""));
    } else if (info.otherTab) {
      notice(el.connMsg, "", TEXT.otherTab);
    }
  }

  // renderMessage shows the operator's message to the room, as text, in a
  // polite live region that stays in the page (empty when there is none),
  // so screen readers hear a new message without losing their place.
  function renderMessage(info) {
    var box = document.getElementById("room-message");
    var text = (info && info.message) || "";
    if (box && box.textContent !== text) box.textContent = text;
  }

  function render(state, info) {
    renderMessage(info);
    last.state = state;
    last.info = info;
    renderTransport(info);
    renderConnection(info);
    if (view !== "queue") return;

    if (info.fatal) {
      var code = info.error && info.error.code;
      var headline = code === "room_not_found" ? t("notFoundHeadline") : t("cantOpenHeadline");
      var msg = code === "invalid_room"
        ? t("invalidRoom", { room: room })
        : code === "room_not_found"
          ? t("roomNotFound", { room: room })
          : (info.error ? info.error.message : t("somethingWrong"));
      show({ status: "error", headline: headline, detail: msg });
      setActions("none");
      el.leave.hidden = true;
      announce(headline + ".", "fatal", "", true);
      return;
    }
    if (!state) {
      show({ status: "joining", headline: t("joining"), detail: info.solving ? TEXT.solving : t("gettingPlace"), progress: 0 });
      return;
    }

    el.leave.hidden = state.status !== "waiting";
    renderActivation(state);
    switch (state.status) {
      case "waiting": return renderWaiting(state, info);
      case "admitted": return renderAdmitted(state, info);
      case "expired":
        show({
          status: "expired", headline: t("expiredHeadline"),
          detail: state.reason === "away" ? t("expiredAway") : t("expiredUnused"),
          sub: t("expiredSub")
        });
        setActions("rejoin", function (box) { box.appendChild(button(t("joinAgain"), "primary", rejoin, "rejoin")); });
        announce(t("expiredAnnounce"), "expired", "", true);
        return;
      case "not_in_queue":
        show({
          status: "not_in_queue", headline: t("notInQueueHeadline"),
          detail: t("notInQueueDetail"),
          sub: t("notInQueueSub")
        });
        setActions("rejoin", function (box) { box.appendChild(button(t("joinAgain"), "primary", rejoin, "rejoin")); });
        announce(t("notInQueueAnnounce"), "not_in_queue", "", true);
        return;
      case "closed":
        show({
          status: "closed", headline: t("closedHeadline"),
          detail: state.message || t("closedDetail"),
          sub: t("closedSub")
        });
        setActions("rejoin", function (box) { box.appendChild(button(t("tryAgain"), "primary", rejoin, "rejoin")); });
        announce(t("closedHeadline") + ". " + (state.message || ""), "closed", true);
        return;
      case "sold_out":
        show({
          status: "sold_out", headline: t("soldOutHeadline"),
          detail: t("soldOutDetail"),
          sub: t("soldOutSub")
        });
        setActions("none");
        announce(t("soldOutAnnounce"), "sold_out");
        return;
    }
  }

  // renderActivation says, in a room that queues only when busy, since
  // when it has been queueing (or letting visitors straight through), to
  // a visitor waiting or admitted there.
  function renderActivation(state) {
    var a = state.activation;
    var shown = !!(a && a.since && (state.status === "waiting" || state.status === "admitted"));
    el.activation.hidden = !shown;
    if (!shown) return;
    el.activation.dataset.state = a.state;
    setText(el.activation, t(a.state === "queueing" ? "activationQueueing" : "activationPassing", { time: clock(a.since) }));
  }

  function renderWaiting(state, info) {
    if (state.opensAt) return renderPreQueue(state);
    if (state.inDraw > 0) return renderDraw(state);
    var pos = state.position || 0;
    var start = Math.max(info.startPosition || pos, pos);
    var next = pos <= 1;
    var still = state.paused || info.degraded; // positions do not move
    show({
      status: "waiting",
      eyebrow: state.paused ? t("queuePaused") : t("brand"),
      headline: next ? t("youreNext") : t("youreInLine"),
      figures: true,
      detail: next ? t("firstInLine") : t("nthInLine", { ordinal: ordinal(pos) }),
      sub: state.paused ? t("pausedSub") : t("keepOpen"),
      progress: start > 0 ? (start - pos) / start : 0
    });
    setText(el.position, fmt.number.format(pos));
    setText(el.eta, state.paused ? t("paused") : info.degraded ? TEXT.degradedShort : waitText(state.etaSeconds, state.etaRange));
    // Between updates the figures move on at the queue's rate: a live
    // connection is sent a new position only when that drifts from the
    // true one; a poller asks again after nextPollMs, so its figures move
    // on no longer than until the next answer should have come.
    var live = info.transport === "ws" || info.transport === "sse";
    moving = still || !(state.etaSeconds > 0) ? null : {
      state: state, eta: state.etaSeconds, range: state.etaRange, start: start, at: performance.now(),
      horizon: live ? Infinity : Math.max(state.nextPollMs || 0, 1000) + 2000
    };
    setActions("none");
    var eta = state.paused ? t("announcePaused") : t("announceEta", { duration: waitText(state.etaSeconds, state.etaRange, true) });
    announce(t("nthInLine", { ordinal: ordinal(pos) }) + " " + eta, state.paused ? "paused" : "waiting", String(pos));
  }

  // A room that admits by lottery gives no place: each moment the next to
  // go in are drawn at random among everyone waiting, so the page shows the
  // draw's size and the chance of being drawn within a minute.
  function renderDraw(state) {
    var text = t("inDraw", { count: fmt.number.format(state.inDraw), percent: fmt.chance.format(state.chancePerMinute || 0) });
    // The range is the lottery's 25th to 75th percentile of the wait.
    var r = state.etaRange, wait = r ? spanRange(r.low, r.high, "long") : "";
    if (r && !state.paused) text += " " + t("drawWait", { range: wait ? t("aboutRange", { range: wait }) : durationWords(r.low) });
    moving = null;
    show({
      status: "waiting",
      eyebrow: state.paused ? t("drawPaused") : t("brand"),
      headline: t("drawHeadline"),
      detail: text,
      sub: state.paused ? t("drawPausedSub") : t("drawSub")
    });
    setActions("none");
    // Said when the draw's size changes, at the calm pace of positions; a
    // pause at once. There is no place to keep: the visitor stays in the
    // draw.
    if (state.paused) announce(t("announceDrawPaused"), "paused");
    else announce(t("drawHeadline") + ". " + text, "draw", String(state.inDraw));
  }

  // Before a scheduled opening there is no place yet: everyone who joins
  // before the opening is placed by a random draw when it opens.
  function renderPreQueue(state) {
    var opens = Date.parse(state.opensAt);
    var left = Math.max(0, (opens - Date.now()) / 1000);
    show({
      status: "waiting", eyebrow: t("opensSoon"),
      headline: t("prequeueHeadline"),
      detail: t("opensAt", { time: clock(state.opensAt), relative: relative(left) }),
      sub: t("prequeueSub")
    });
    setActions("none");
    announce(t("prequeueAnnounce"), "prequeue:" + !!state.paused);
  }

  // The order is the demo protected endpoint's (-demo): without it the
  // page shows the admission and its hold time, and offers nothing that
  // would answer 404.
  var offerOrder = !!boot.orders;

  function renderAdmitted(state, info) {
    var usable = info.usable;
    if (returnTo && usable && !returning) {
      returning = true;
      location.replace(api + "/enter?return=" + encodeURIComponent(returnTo));
    }
    validAt = performance.now() + (info.validInMs || 0);
    var held = clock(state.expiresAt);
    var left = (Date.parse(state.expiresAt) - Date.now()) / 1000;
    show({
      status: "admitted",
      eyebrow: t("yourTurn"),
      headline: usable ? t("itsYourTurn") : t("almostYourTurn"),
      detail: usable ? (offerOrder ? t("orderNow") : t("entryReady")) : countdownText(),
      sub: held ? (left > 0 ? t("heldUntil", { time: held, duration: durationWords(left) }) : t("heldUntilTime", { time: held })) : "",
      progress: 1
    });
    if (offerOrder) {
      setActions("order", function (box) {
        box.appendChild(button(t("placeOrder"), "primary", placeOrder, "place-order"));
      });
    } else {
      setActions("none");
    }
    var b = $("place-order");
    if (b && view === "queue") b.disabled = !usable;
    if (usable) {
      announce(offerOrder ? t("admittedAnnounce") : t("entryReadyAnnounce"), "admitted");
      // Move focus to the one thing to do, unless the visitor is busy elsewhere.
      var a = document.activeElement;
      if (b && !focusedAction && (!a || a === document.body || a === $("main"))) { b.focus(); focusedAction = true; }
    } else {
      announce(t("almostYourTurn") + ".", "admitted-soon");
    }
  }

  function countdownText() {
    var ms = Math.max(0, validAt - performance.now());
    return t("turnIn", { duration: unit(ms / 1000, "second", "short", 1) });
  }

  // interpolate moves the waiting figures on between two updates, at the
  // queue's rate (Waitroom.shown), never past the front.
  function interpolate() {
    if (!moving) return;
    var ms = Math.min(performance.now() - moving.at, moving.horizon);
    var pos = Waitroom.shown(moving.state, ms);
    setText(el.position, fmt.number.format(pos));
    var gone = ms / 1000, r = moving.range;
    setText(el.eta, waitText(Math.max(0, Math.ceil(moving.eta - gone)),
      r && { low: Math.max(0, r.low - gone), high: Math.max(0, r.high - gone) }));
    // The sentence says the place the big number shows, never another.
    setText(el.detail, pos > 1 ? t("nthInLine", { ordinal: ordinal(pos) }) : t("firstInLine"));
    if (moving.start > 0) setProgress((moving.start - pos) / moving.start);
  }

  // One ticker redraws the countdowns and says held-back announcements;
  // state changes come from the client. It runs while the page is in the
  // queue, and stops once the visitor is done or left.
  function tick() {
    var s = last.state, i = last.info;
    if (view === "queue" && s && s.status === "admitted" && i && !i.usable) setText(el.detail, countdownText());
    if (view === "queue" && s && s.status === "waiting" && !s.opensAt) interpolate();
    updateConnectionText();
    flushAnnouncement();
  }

  function startTicker() {
    if (!ticker) ticker = setInterval(tick, 100);
  }

  function stopTicker() {
    if (ticker) { clearInterval(ticker); ticker = null; }
    moving = null;
    pending = null;
  }

  // ---------- actions ----------

  function placeOrder() {
    var s = wr && wr.state();
    if (!s || !s.token) return;
    view = "ordering";
    var b = $("place-order");
    if (b) b.disabled = true;
    notice(el.orderMsg, "", t("placing"));
    var headers = { "Authorization": "Bearer " + s.token, "Content-Type": "application/json", "Accept": "application/json" };
    if (wr.visitor()) headers["X-Visitor"] = wr.visitor();
    fetch(api + "/orders", { method: "POST", headers: headers, body: "{}", credentials: "same-origin", cache: "no-store" })
      .then(function (res) {
        if (res.status === 201) return orderPlaced(res);
        return res.json().catch(function () { return {}; }).then(function (body) {
          orderFailed(res, (body && body.error) || { code: "http_" + res.status, message: t("shopAnswered", { status: res.status }) });
        });
      }, function () {
        orderRetryable(t("shopUnreachable"));
      });
  }

  function orderPlaced(res) {
    return res.json().catch(function () { return {}; }).then(function () {
      view = "done";
      wr.close(); // the page is done: no more updates needed
      stopTicker();
      show({
        status: "done", eyebrow: t("allDone"), headline: t("orderPlaced"),
        detail: t("thanks"),
        sub: t("demoOrder"), progress: 1
      });
      setActions("done");
      notice(el.orderMsg, "good", t("orderConfirmed"));
      el.leave.hidden = true;
      renderTransport(last.info);
      renderConnection(last.info);
    });
  }

  function orderFailed(res, e) {
    if (res.status === 425 && tooEarlyTries < 20) {
      tooEarlyTries++;
      // waitMs is exact; Retry-After is whole seconds, rounded up.
      var wait = Number(e.waitMs) > 0 ? Number(e.waitMs) : (Number(res.headers.get("Retry-After")) || 1) * 1000;
      notice(el.orderMsg, "", t("entryOpensIn", { duration: unit(wait / 1000, "second", "short", 1) }));
      setTimeout(placeOrder, wait + 20); // the server's own wait, not a guess
      return;
    }
    tooEarlyTries = 0;
    view = "queue";
    var b = $("place-order");
    switch (res.status) {
      case 401:
        if (b) b.disabled = true;
        var why = {
          token_used: t("tokenUsed"),
          token_expired: t("tokenExpired"),
          missing_token: t("missingToken"),
          invalid_token: t("invalidToken")
        }[e.code] || e.message;
        notice(el.orderMsg, "bad", why + " " + t("canJoinAgain"));
        setActions("rejoin-after-order", function (box) { box.appendChild(button(t("joinAgain"), "primary", rejoin, "rejoin")); });
        return;
      case 403:
        if (b) b.disabled = true;
        notice(el.orderMsg, "bad", e.code === "wrong_visitor" ? t("wrongVisitor") : t("wrongRoom"));
        return;
      case 503:
        orderRetryable(t("shopBusy"));
        return;
    }
    orderRetryable(t("orderFailed", { message: e.message }));
  }

  function orderRetryable(text) {
    view = "queue";
    var b = $("place-order");
    if (b) b.disabled = false;
    notice(el.orderMsg, "bad", text);
  }

  function rejoin() {
    if (!wr) return; // a preview
    view = "queue";
    tooEarlyTries = 0;
    focusedAction = false;
    connSaid = "";
    startTicker();
    notice(el.orderMsg, "", "");
    setActions("none");
    show({ status: "joining", headline: t("joining"), detail: t("gettingPlace"), progress: 0 });
    wr.rejoin();
    $("main").focus();
  }

  var leaveArmed = null;
  el.leave.addEventListener("click", function () {
    if (!wr) return; // a preview
    if (!leaveArmed) {
      el.leave.textContent = t("leaveConfirm");
      leaveArmed = setTimeout(function () { leaveArmed = null; el.leave.textContent = t("leave"); }, 5000);
      return;
    }
    clearTimeout(leaveArmed);
    leaveArmed = null;
    el.leave.textContent = t("leave");
    view = "left";
    stopTicker();
    el.leave.hidden = true;
    show({ status: "left", headline: t("leftHeadline"), detail: t("leftDetail") });
    setActions("rejoin", function (box) { box.appendChild(button(t("joinAgain"), "primary", rejoin, "rejoin")); });
    renderTransport(last.info);
    wr.leave().catch(function () {
      notice(el.orderMsg, "bad", t("leaveUnconfirmed"));
    });
    renderConnection(last.info);
    announce(t("leftAnnounce"), "left", "", true);
  });

  // ---------- start ----------

  if (preview) {
    // What a visitor on a live connection sees, standing still: no
    // client, no ticker, nothing sent.
    render(preview, {
      transport: "ws", usable: true, validInMs: 0, startPosition: 3 * (preview.position || 0),
      message: preview.message || ""
    });
    window.waitroomPage = { preview: preview };
    return;
  }

  wr = Waitroom.connect({
    room: room,
    base: base,
    transports: transportsParam ? transportsParam.split(",") : undefined,
    invite: invite,
    onState: render,
    onTransport: function () { renderTransport(wr.info()); }
  });
  startTicker();
  // Exposed for debugging and the end-to-end tests.
  window.waitroomPage = { client: wr };
})();
