// admin-events.js: the dashboard's scheduled events. Beside admin.js, on
// the same page: it follows the chosen room (the #room select), draws the
// room's events on a timeline, and creates and changes them through the
// same review as a change of settings: the server previews what the
// event's settings would change (POST …/preview) in the #confirm dialog,
// and only once confirmed is the event saved (POST or PUT …/events).
(function () {
  "use strict";

  var KEY_STORE = "waitroom:admin-key";
  var SVG_NS = "http://www.w3.org/2000/svg";
  var $ = function (id) { return document.getElementById(id); };
  var room = "", events = [], editing = "", gen = 0;

  function key() {
    try { return sessionStorage.getItem(KEY_STORE) || ""; } catch (e) { return ""; }
  }

  // api is admin.js's call: it resolves to { status, body }, never rejects.
  function api(method, path, body) {
    var headers = { "Authorization": "Bearer " + key(), "Accept": "application/json" };
    if (body !== undefined) headers["Content-Type"] = "application/json";
    return fetch("/api/v1/admin" + path, {
      method: method, headers: headers, cache: "no-store", credentials: "same-origin",
      body: body === undefined ? undefined : JSON.stringify(body)
    }).then(function (res) {
      return res.text().then(function (text) {
        var b = null;
        try { b = text ? JSON.parse(text) : null; } catch (e) { /* not JSON */ }
        return { status: res.status, body: b };
      });
    }, function () { return { status: 0, body: null }; });
  }

  function errorText(r) {
    if (r.status === 0) return "The server can't be reached; nothing was changed.";
    var e = (r.body && r.body.error) || { message: "the server answered " + r.status };
    return "Not saved: " + e.message + (e.code ? " (" + e.code + ")" : "");
  }

  function roomPath() { return "/rooms/" + encodeURIComponent(room) + "/events"; }

  function load() {
    var sel = $("room");
    room = sel ? sel.value : "";
    if (!room || !key()) return;
    var my = ++gen;
    api("GET", roomPath()).then(function (r) {
      if (my !== gen || r.status !== 200 || !r.body) return;
      events = r.body.events || [];
      drawTable();
      drawTimeline();
    });
  }

  function when(s) { return s ? new Date(s).toLocaleString() : "–"; }

  function cell(tr, text) {
    var td = document.createElement("td");
    td.textContent = text;
    tr.appendChild(td);
    return td;
  }

  function drawTable() {
    var body = $("events-table").tBodies[0];
    body.textContent = "";
    if (!events.length) {
      var tr = document.createElement("tr");
      cell(tr, "No events scheduled.").colSpan = 6;
      body.appendChild(tr);
    }
    events.forEach(function (e) {
      var tr = document.createElement("tr");
      cell(tr, e.name);
      cell(tr, e.state + (e.failure ? " at its " + e.failure.transition + ": " + e.failure.reason : ""));
      cell(tr, (e.prequeueAt ? "pre-queue " + when(e.prequeueAt) + ", " : "") + when(e.startsAt) + " → " + when(e.endsAt));
      cell(tr, JSON.stringify(e.settings || {}));
      cell(tr, e.atEnd + (e.shuffleAtStart ? ", shuffled at start" : ""));
      var td = cell(tr, "");
      // An admin's event (or one of the rooms file) is the admin's to change.
      var need = e.by === "operator" ? "operator" : "admin";
      if (e.state !== "ended" && e.state !== "failed") td.appendChild(button("Edit", function () { edit(e); }, need));
      if (e.state === "scheduled" || e.state === "ended" || e.state === "failed") td.appendChild(button("Delete", function () { remove(e); }, need));
      body.appendChild(tr);
    });
  }

  function button(label, f, need) {
    var b = document.createElement("button");
    b.type = "button";
    b.className = "link";
    b.textContent = label;
    b.setAttribute("data-needs", need);
    b.addEventListener("click", f);
    return b;
  }

  // drawTimeline draws each event as a bar from its pre-queue (lighter) or
  // start to its end, on one axis from the first to the last, with now.
  function drawTimeline() {
    var svg = $("events-timeline");
    while (svg.lastChild) svg.removeChild(svg.lastChild);
    var w = svg.clientWidth || 600, rowH = 22, pad = 4;
    svg.setAttribute("viewBox", "0 0 " + w + " " + Math.max(rowH * events.length + 18, 40));
    var desc = document.createElementNS(SVG_NS, "desc");
    desc.textContent = events.length ? events.length + " events" : "No events.";
    svg.appendChild(desc);
    if (!events.length) return;
    var now = Date.now();
    var lo = Math.min(now, Math.min.apply(null, events.map(function (e) { return Date.parse(e.prequeueAt || e.startsAt); })));
    var hi = Math.max(now, Math.max.apply(null, events.map(function (e) { return Date.parse(e.endsAt); })));
    var x = function (t) { return pad + (w - 2 * pad) * (t - lo) / Math.max(hi - lo, 1); };
    events.forEach(function (e, i) {
      var y = i * rowH + 2;
      if (e.prequeueAt) rect(x(Date.parse(e.prequeueAt)), y, x(Date.parse(e.startsAt)), "pre");
      rect(x(Date.parse(e.startsAt)), y, x(Date.parse(e.endsAt)), e.state);
      var t = document.createElementNS(SVG_NS, "text");
      t.setAttribute("x", x(Date.parse(e.startsAt)) + 3);
      t.setAttribute("y", y + 14);
      t.setAttribute("class", "ev-label");
      t.textContent = e.name;
      svg.appendChild(t);
    });
    var line = document.createElementNS(SVG_NS, "line");
    line.setAttribute("x1", x(now)); line.setAttribute("x2", x(now));
    line.setAttribute("y1", 0); line.setAttribute("y2", rowH * events.length + 4);
    line.setAttribute("class", "ev-now");
    svg.appendChild(line);
    function rect(x1, y, x2, cls) {
      var r = document.createElementNS(SVG_NS, "rect");
      r.setAttribute("x", x1); r.setAttribute("y", y);
      r.setAttribute("width", Math.max(x2 - x1, 2)); r.setAttribute("height", rowH - 4);
      r.setAttribute("class", "ev-bar ev-" + cls);
      svg.appendChild(r);
    }
  }

  // local converts an RFC 3339 time to a datetime-local value, and back.
  function local(s) {
    if (!s) return "";
    var d = new Date(s);
    return new Date(d.getTime() - d.getTimezoneOffset() * 60000).toISOString().slice(0, 19);
  }
  function rfc(v) { return v ? new Date(v).toISOString() : undefined; }

  function edit(e) {
    editing = e ? e.name : "";
    $("ev-name").value = e ? e.name : "";
    $("ev-name").disabled = !!e;
    $("ev-prequeue").value = e ? local(e.prequeueAt) : "";
    $("ev-start").value = e ? local(e.startsAt) : "";
    $("ev-end").value = e ? local(e.endsAt) : "";
    $("ev-shuffle").checked = !!(e && e.shuffleAtStart);
    $("ev-atend").value = e ? e.atEnd : "keep";
    $("ev-settings").value = e ? JSON.stringify(e.settings || {}, null, 1) : "{}";
    $("events-msg").textContent = e ? "Editing " + e.name + "." : "";
    $("ev-name").focus();
  }

  function formEvent(out) {
    var settings;
    try { settings = JSON.parse($("ev-settings").value || "{}"); } catch (err) {
      out.textContent = "Settings must be a JSON object, e.g. {\"batch\": 50}.";
      return null;
    }
    var ev = { name: $("ev-name").value.trim(), startsAt: rfc($("ev-start").value), endsAt: rfc($("ev-end").value),
      shuffleAtStart: $("ev-shuffle").checked, atEnd: $("ev-atend").value, settings: settings };
    var pq = rfc($("ev-prequeue").value);
    if (pq) ev.prequeueAt = pq;
    return ev;
  }

  // review shows what the event's settings change, by the server's
  // preview, in the dashboard's confirmation dialog; Apply saves it.
  function review(ev, out) {
    api("POST", "/rooms/" + encodeURIComponent(room) + "/preview", ev.settings).then(function (r) {
      if (r.status !== 200 || !r.body) { out.textContent = errorText(r); return; }
      var dlg = $("confirm");
      $("confirm-room").textContent = room + " (event " + ev.name + ", " + when(ev.prequeueAt || ev.startsAt) + " → " + when(ev.endsAt) + ")";
      fill($("confirm-changes"), (r.body.changes || []).map(function (c) {
        return c.field + ": " + text(c.from) + " → " + text(c.to) + " while the event runs";
      }), "No setting changes value.");
      fill($("confirm-effects"), (r.body.effects || []).concat([ev.atEnd === "close"
        ? "At its end, everyone still waiting is told the room is closed."
        : "At its end, the room returns to its settings of before and the waiting keep their places."]), "");
      dlg.returnValue = "";
      dlg.onclose = function () {
        if (dlg.returnValue !== "apply") { out.textContent = "Nothing was changed."; return; }
        out.textContent = "Saving…";
        var put = editing !== "";
        api(put ? "PUT" : "POST", roomPath() + (put ? "/" + encodeURIComponent(editing) : ""), ev).then(function (s) {
          if (s.status !== 200 && s.status !== 201) { out.textContent = errorText(s); return; }
          edit(null);
          out.textContent = "Saved " + ev.name + ".";
          load();
        });
      };
      dlg.showModal();
      $("confirm-apply").focus();
    });
  }

  function fill(ul, items, none) {
    ul.textContent = "";
    if (!items.length && none) items = [none];
    items.forEach(function (t) {
      var li = document.createElement("li");
      li.textContent = t;
      ul.appendChild(li);
    });
  }

  function text(v) {
    if (v === null || v === undefined || v === "") return "(none)";
    return typeof v === "string" ? "“" + v + "”" : String(v);
  }

  function remove(e) {
    if (!window.confirm("Delete event " + e.name + "?")) return;
    api("DELETE", roomPath() + "/" + encodeURIComponent(e.name)).then(function (r) {
      $("events-msg").textContent = r.status === 204 ? "Deleted " + e.name + "." : errorText(r);
      load();
    });
  }

  function init() {
    if (!$("events-panel")) return;
    $("events-form").addEventListener("submit", function (ev) {
      ev.preventDefault();
      var out = $("events-msg"), e = formEvent(out);
      if (e) review(e, out);
    });
    $("ev-new").addEventListener("click", function () { edit(null); });
    var sel = $("room");
    if (sel) sel.addEventListener("change", function () { edit(null); load(); });
    load();
    setInterval(load, 5000);
  }

  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", init); else init();
})();
