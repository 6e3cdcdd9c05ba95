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

  var $ = function (id) { return document.getElementById(id); };
  var el = {
    card: $("card"), eyebrow: $("eyebrow"), headline: $("headline"),
    figures: $("figures"), position: $("position"), eta: $("eta"),
    bar: $("bar"), fill: $("bar-fill"), detail: $("detail"), sub: $("sub"),
    announce: $("announce"), actions: $("actions"), orderMsg: $("order-msg"),
    connMsg: $("conn-msg"), transport: $("transport"), leave: $("leave"),
    roomName: $("room-name")
  };

  var numbers = new Intl.NumberFormat("en");
  var TRANSPORT_NAMES = { ws: "WebSocket", sse: "SSE", poll: "polling" };
  var ANNOUNCE_EVERY_MS = 15000;

  // The page's words about connections, pauses and announcements, in one
  // place (to be moved to translation files with the rest).
  var TEXT = {
    live: function (name) { return "Live via " + TRANSPORT_NAMES[name]; },
    liveOtherTab: "Checking every few seconds (open in another tab)",
    connecting: "Connecting…",
    solving: "Checking your browser before you join (a few seconds)…",
    offlineRetrying: "Offline, retrying",
    finished: "Finished; connection closed",
    notConnected: "Not connected",
    unreachable: "We can't reach the waiting room right now.",
    trouble: function (message) { return "The waiting room is having trouble (" + message + ")."; },
    retryIn: function (secs) { return secs > 0 ? "Trying again in " + secs + " s." : "Trying again now…"; },
    keepPlace: "You keep your place.",
    otherTab: "This waiting room is open in another tab too, so this tab checks for news every few seconds instead of live. You keep your place in line.",
    degraded: "Positions are paused for a moment while the waiting room reconnects to its queue. Your place is kept.",
    degradedShort: "positions paused",
    announceLost: "Connection lost. Trying again automatically; you keep your place.",
    announceBack: "Connected again.",
    announceDegraded: "Positions paused, your place is kept.",
    announceOtherTab: "This waiting room is open in another tab. You keep your place."
  };

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

  el.roomName.textContent = "Room: " + room;
  document.title = "Waiting room · " + room;

  // ---------- formatting ----------

  function ordinal(n) {
    var s = numbers.format(n), t = n % 100;
    if (t >= 11 && t <= 13) return s + "th";
    switch (n % 10) {
      case 1: return s + "st";
      case 2: return s + "nd";
      case 3: return s + "rd";
    }
    return s + "th";
  }

  function duration(sec) {
    sec = Math.max(0, Math.round(sec));
    if (sec < 1) return "under 1 s";
    if (sec < 60) return sec + " s";
    var min = Math.round(sec / 60);
    if (min < 60) return min + " min";
    var h = Math.floor(min / 60), m = min % 60;
    return h + " h" + (m ? " " + m + " min" : "");
  }

  function durationWords(sec) {
    sec = Math.max(0, Math.round(sec));
    if (sec < 1) return "less than a second";
    if (sec < 60) return sec === 1 ? "about a second" : "about " + sec + " seconds";
    var min = Math.round(sec / 60);
    if (min < 60) return min === 1 ? "about a minute" : "about " + min + " minutes";
    var h = Math.floor(min / 60), m = min % 60;
    return "about " + h + (h === 1 ? " hour" : " hours") + (m ? " " + m + " minutes" : "");
  }

  function clock(iso) {
    var d = new Date(iso);
    return isNaN(d) ? "" : d.toLocaleTimeString([], { hour: "2-digit", minute: "2-digit" });
  }

  // ---------- small DOM helpers ----------

  function setText(node, text) {
    if (node.textContent !== text) node.textContent = text;
  }

  function setProgress(fraction) {
    var pct = Math.round(Math.max(0, Math.min(1, fraction)) * 100);
    el.fill.style.width = pct + "%";
    el.bar.setAttribute("aria-valuenow", String(pct));
    el.bar.setAttribute("aria-valuetext", pct + "% of the way to the front");
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
    setText(el.eyebrow, parts.eyebrow || "Waiting room");
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
      var headline = code === "room_not_found" ? "This waiting room does not exist" : "This waiting room can't be opened";
      var msg = code === "invalid_room"
        ? "“" + room + "” is not a waiting-room name. Check the link you followed."
        : code === "room_not_found"
          ? "There is no waiting room called “" + room + "”. Check the link you followed."
          : (info.error ? info.error.message : "Something went wrong.");
      show({ status: "error", eyebrow: "Waiting room", headline: headline, detail: msg });
      setActions("none");
      el.leave.hidden = true;
      announce(headline + ".", "fatal", "", true);
      return;
    }
    if (!state) {
      show({ status: "joining", headline: "Joining the queue…", detail: info.solving ? TEXT.solving : "Getting your place…", progress: 0 });
      return;
    }

    el.leave.hidden = state.status !== "waiting";
    switch (state.status) {
      case "waiting": return renderWaiting(state, info);
      case "admitted": return renderAdmitted(state, info);
      case "expired":
        show({
          status: "expired", headline: "Your turn has passed",
          detail: state.reason === "away" ?
            "You were away from this page for too long, so your place was given to the next in line." :
            "Your entry was held for you but not used in time, so it expired.",
          sub: "Join again to take a new place at the back of the line."
        });
        setActions("rejoin", function (box) { box.appendChild(button("Join again", "primary", rejoin, "rejoin")); });
        announce("Your turn has passed. You can join again.", "expired", "", true);
        return;
      case "not_in_queue":
        show({
          status: "not_in_queue", headline: "You're not in the queue",
          detail: "There is no place in line for you in this room right now.",
          sub: "You may have left, or your entry was already used. You can join again."
        });
        setActions("rejoin", function (box) { box.appendChild(button("Join again", "primary", rejoin, "rejoin")); });
        announce("You're not in the queue. You can join again.", "not_in_queue", "", true);
        return;
      case "closed":
        show({
          status: "closed", eyebrow: "Waiting room", headline: "Closed for now",
          detail: state.message || "This waiting room takes no one right now.",
          sub: "Come back later and join again."
        });
        setActions("rejoin", function (box) { box.appendChild(button("Try again", "primary", rejoin, "rejoin")); });
        announce("Closed for now. " + (state.message || ""), "closed", true);
        return;
      case "sold_out":
        show({
          status: "sold_out", eyebrow: "Waiting room", headline: "Sold out",
          detail: "Every place has been taken. Thank you for waiting.",
          sub: "You keep your place: if a place is given back unused, the line moves on and this page tells you."
        });
        setActions("none");
        announce("Sold out. Every place has been taken.", "sold_out");
        return;
    }
  }

  function renderWaiting(state, info) {
    if (state.opensAt) return renderPreQueue(state);
    var pos = state.position || 0;
    var start = Math.max(info.startPosition || pos, pos);
    var next = pos <= 1;
    var still = state.paused || info.degraded; // positions do not move
    show({
      status: "waiting",
      eyebrow: state.paused ? "Queue paused" : "Waiting room",
      headline: next ? "You're next" : "You're in line",
      figures: true,
      detail: next ? "You are first in line." : "You are " + ordinal(pos) + " in line.",
      sub: state.paused
        ? "The queue is paused for a moment. You keep your place, and it starts again on its own."
        : "Keep this page open. Reloading it keeps your place.",
      progress: start > 0 ? (start - pos) / start : 0
    });
    setText(el.position, numbers.format(pos));
    setText(el.eta, state.paused ? "paused" : info.degraded ? TEXT.degradedShort : duration(state.etaSeconds));
    // Updates come about as often as a poll would (up to 5 s apart further
    // back); between them the figures move on at the rate they imply.
    moving = still || !(state.etaSeconds > 0) ? null :
      { pos: pos, eta: state.etaSeconds, at: performance.now(), horizon: Math.max(state.nextPollMs || 0, 1000) + 2000 };
    setActions("none");
    var eta = state.paused ? "The queue is paused." : "Estimated wait " + durationWords(state.etaSeconds) + ".";
    announce("You are " + ordinal(pos) + " in line. " + eta, state.paused ? "paused" : "waiting", String(pos));
  }

  // Before a scheduled opening there is no place yet: everyone who joins
  // before the opening is placed by a random draw when it opens.
  function renderPreQueue(state) {
    var opens = Date.parse(state.opensAt);
    var left = Math.max(0, (opens - Date.now()) / 1000);
    show({
      status: "waiting", eyebrow: "Opens soon",
      headline: "You're in before the opening",
      detail: "Opens at " + clock(state.opensAt) + " (in " + durationWords(left) + ").",
      sub: "Everyone who joins before the opening gets a place by a fair random draw, so there is no need to rush or reload."
    });
    setActions("none");
    announce("You're in before the opening. Places are drawn at random when it opens.", "prequeue:" + !!state.paused);
  }

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
      eyebrow: "Your turn",
      headline: usable ? "It's your turn" : "Almost your turn",
      detail: usable ? "You can place your order now." : countdownText(),
      sub: held ? "Your entry is held until " + held + (left > 0 ? " (" + durationWords(left) + ")." : ".") : "",
      progress: 1
    });
    setActions("order", function (box) {
      box.appendChild(button("Place order", "primary", placeOrder, "place-order"));
    });
    var b = $("place-order");
    if (b && view === "queue") b.disabled = !usable;
    if (usable) {
      announce("It's your turn. You can place your order now.", "admitted");
      // Move focus to the one thing to do, unless the visitor is busy elsewhere.
      var a = document.activeElement;
      if (b && !focusedAction && (!a || a === document.body || a === $("main"))) { b.focus(); focusedAction = true; }
    } else {
      announce("Almost your turn.", "admitted-soon");
    }
  }

  function countdownText() {
    var ms = Math.max(0, validAt - performance.now());
    return "Your turn in " + (ms / 1000).toFixed(1) + " s";
  }

  // interpolate moves the waiting figures on between two updates, at the
  // admission rate the last one implied (position / ETA), for no longer than
  // the next update should take, and never past the front.
  function interpolate() {
    if (!moving) return;
    var dt = Math.min(performance.now() - moving.at, moving.horizon) / 1000;
    var rate = moving.pos / moving.eta;
    var pos = Math.max(1, Math.ceil(moving.pos - rate * dt));
    setText(el.position, numbers.format(pos));
    setText(el.eta, duration(Math.max(0, Math.ceil(moving.eta - dt))));
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
    notice(el.orderMsg, "", "Placing your order…");
    var headers = { "Authorization": "Bearer " + s.token, "Content-Type": "application/json", "Accept": "application/json" };
    if (wr.visitor()) headers["X-Visitor"] = wr.visitor();
    fetch(api + "/orders", { method: "POST", headers: headers, body: "{}", credentials: "same-origin", cache: "no-store" })
      .then(function (res) {
        if (res.status === 201) return orderPlaced(res);
        return res.json().catch(function () { return {}; }).then(function (body) {
          orderFailed(res, (body && body.error) || { code: "http_" + res.status, message: "The shop answered " + res.status + "." });
        });
      }, function () {
        orderRetryable("We couldn't reach the shop. Check your connection and try again.");
      });
  }

  function orderPlaced(res) {
    return res.json().catch(function () { return {}; }).then(function () {
      view = "done";
      wr.close(); // the page is done: no more updates needed
      stopTicker();
      show({
        status: "done", eyebrow: "All done", headline: "Order placed",
        detail: "Thank you for waiting.",
        sub: "This was a demo order; nothing will be charged.", progress: 1
      });
      setActions("done");
      notice(el.orderMsg, "good", "Your order is confirmed.");
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
      notice(el.orderMsg, "", "Your entry opens in " + (wait / 1000).toFixed(1) + " s. Retrying automatically…");
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
          token_used: "This entry was already used.",
          token_expired: "Your entry expired before the order was placed.",
          missing_token: "Your entry is missing.",
          invalid_token: "Your entry isn't valid here."
        }[e.code] || e.message;
        notice(el.orderMsg, "bad", why + " You can join the queue again.");
        setActions("rejoin-after-order", function (box) { box.appendChild(button("Join again", "primary", rejoin, "rejoin")); });
        return;
      case 403:
        if (b) b.disabled = true;
        notice(el.orderMsg, "bad", e.code === "wrong_visitor"
          ? "This entry belongs to another browser or tab, so it can't be used here."
          : "This entry is for another room, so it can't be used here.");
        return;
      case 503:
        orderRetryable("The shop is busy right now and couldn't take the order. Please try again in a moment.");
        return;
    }
    orderRetryable("The order didn't go through: " + e.message);
  }

  function orderRetryable(text) {
    view = "queue";
    var b = $("place-order");
    if (b) b.disabled = false;
    notice(el.orderMsg, "bad", text);
  }

  function rejoin() {
    view = "queue";
    tooEarlyTries = 0;
    focusedAction = false;
    connSaid = "";
    startTicker();
    notice(el.orderMsg, "", "");
    setActions("none");
    show({ status: "joining", headline: "Joining the queue…", detail: "Getting your place…", progress: 0 });
    wr.rejoin();
    $("main").focus();
  }

  var leaveArmed = null;
  el.leave.addEventListener("click", function () {
    if (!leaveArmed) {
      el.leave.textContent = "Press again to give up your place";
      leaveArmed = setTimeout(function () { leaveArmed = null; el.leave.textContent = "Leave the queue"; }, 5000);
      return;
    }
    clearTimeout(leaveArmed);
    leaveArmed = null;
    el.leave.textContent = "Leave the queue";
    view = "left";
    stopTicker();
    el.leave.hidden = true;
    show({ status: "left", eyebrow: "Waiting room", headline: "You left the queue", detail: "Your place was given back." });
    setActions("rejoin", function (box) { box.appendChild(button("Join again", "primary", rejoin, "rejoin")); });
    renderTransport(last.info);
    wr.leave().catch(function () {
      notice(el.orderMsg, "bad", "We couldn't confirm that you left; your place will lapse on its own.");
    });
    renderConnection(last.info);
    announce("You left the queue.", "left", "", true);
  });

  // ---------- start ----------

  wr = Waitroom.connect({
    room: room,
    base: base,
    transports: transportsParam ? transportsParam.split(",") : undefined,
    onState: render,
    onTransport: function () { renderTransport(wr.info()); }
  });
  startTicker();
  // Exposed for debugging and the end-to-end tests.
  window.waitroomPage = { client: wr };
})();
