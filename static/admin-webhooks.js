// admin-webhooks.js: the dashboard's Webhooks panel. Lists and edits the
// chosen room's own webhook endpoints (secrets masked; a new one is shown
// once), and lists the deliveries that failed every attempt, each with a
// button to send it again. It follows the room admin.js shows (the ?room=
// of the address) and uses the same key; the panel is for the admin role.
(function () {
  "use strict";

  var KEY_STORE = "waitroom:admin-key";
  var WATCH_MS = 1000;
  var DEAD_EVERY_MS = 15000;

  var $ = function (id) { return document.getElementById(id); };
  var panel = $("webhooks-panel");
  if (!panel) return;

  var room = "";
  var hooks = []; // the room's endpoints, as the API shows them
  var events = []; // every event type
  var lastDead = 0;

  function key() {
    try { return sessionStorage.getItem(KEY_STORE) || ""; } catch (e) { return ""; }
  }

  // api calls the admin API and resolves to { status, body }; it never
  // rejects (status 0: no answer).
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

  function problem(r) {
    var e = (r.body && r.body.error) || { code: "http_" + r.status, message: "the server answered " + r.status };
    return e.message + " (" + e.code + ")";
  }

  function say(id, text) { $(id).textContent = text || ""; }

  function el(tag, text, cls) {
    var n = document.createElement(tag);
    if (text !== undefined && text !== null) n.textContent = String(text);
    if (cls) n.className = cls;
    return n;
  }

  function visible() { return key() && !panel.hidden && !$("board").hidden; }

  // ---------- the room's endpoints ----------

  function loadHooks() {
    var want = room;
    return api("GET", "/rooms/" + encodeURIComponent(want) + "/webhooks").then(function (r) {
      if (want !== room) return;
      if (r.status !== 200 || !r.body) { say("webhooks-msg", problem(r)); return; }
      hooks = r.body.webhooks || [];
      if (!events.length) { events = r.body.events || []; fillEventChoices(); }
      fillHooks();
    });
  }

  function fillEventChoices() {
    var box = $("webhook-events");
    box.textContent = "";
    events.forEach(function (t) {
      var label = el("label", null, "check");
      var input = el("input");
      input.type = "checkbox";
      input.value = t;
      input.name = "event";
      label.appendChild(input);
      label.appendChild(document.createTextNode(" " + t));
      box.appendChild(label);
    });
  }

  function fillHooks() {
    var body = $("webhooks-table").tBodies[0];
    body.textContent = "";
    if (!hooks.length) {
      var tr = el("tr");
      var td = el("td", "No webhooks for this room. The deployment's own (-webhooks) get its events too.", "meta");
      td.colSpan = 4;
      tr.appendChild(td);
      body.appendChild(tr);
      return;
    }
    hooks.forEach(function (h, i) {
      var tr = el("tr");
      tr.appendChild(el("td", h.url));
      tr.appendChild(el("td", h.events && h.events.length ? h.events.join(", ") : "all events"));
      tr.appendChild(el("td", h.secret));
      var td = el("td");
      var edit = el("button", "Edit", "link");
      edit.type = "button";
      edit.addEventListener("click", function () { editHook(h); });
      var del = el("button", "Remove", "link");
      del.type = "button";
      del.addEventListener("click", function () { removeHook(i); });
      td.appendChild(edit);
      td.appendChild(document.createTextNode(" · "));
      td.appendChild(del);
      tr.appendChild(td);
      body.appendChild(tr);
    });
  }

  function editHook(h) {
    $("webhook-url").value = h.url;
    $("webhook-secret").value = "";
    var boxes = $("webhook-events").querySelectorAll("input[name=event]");
    for (var i = 0; i < boxes.length; i++) boxes[i].checked = (h.events || []).indexOf(boxes[i].value) >= 0;
    $("webhook-url").focus();
  }

  // save PUTs the list; an endpoint without a secret keeps its own.
  function save(list, done) {
    var want = room;
    var body = { webhooks: list.map(function (h) {
      var o = { url: h.url, events: h.events || [] };
      if (h.secret && h.secret.indexOf("…") < 0) o.secret = h.secret;
      return o;
    }) };
    return api("PUT", "/rooms/" + encodeURIComponent(want) + "/webhooks", body).then(function (r) {
      if (want !== room) return;
      if (r.status !== 200 || !r.body) { say("webhooks-msg", problem(r)); return; }
      hooks = r.body.webhooks || [];
      fillHooks();
      var fresh = r.body.newSecrets || {};
      var urls = Object.keys(fresh);
      say("webhooks-msg", urls.length
        ? "Saved. The new secret of " + urls[0] + " is " + fresh[urls[0]] + " — copy it now, it is not shown again."
        : done);
    });
  }

  function removeHook(i) {
    var list = hooks.slice();
    var gone = list.splice(i, 1)[0];
    save(list, "Removed " + gone.url + ".");
  }

  $("webhook-form").addEventListener("submit", function (ev) {
    ev.preventDefault();
    var url = $("webhook-url").value.trim();
    if (!url) return;
    var chosen = [];
    var boxes = $("webhook-events").querySelectorAll("input[name=event]:checked");
    for (var i = 0; i < boxes.length; i++) chosen.push(boxes[i].value);
    var entry = { url: url, events: chosen, secret: $("webhook-secret").value.trim() };
    var list = hooks.filter(function (h) { return h.url !== url; });
    var old = hooks.filter(function (h) { return h.url === url; })[0];
    if (old && !entry.secret) entry.secret = old.secret; // masked: the server keeps it
    list.push(entry);
    save(list, "Saved " + url + ".").then(function () {
      $("webhook-url").value = "";
      $("webhook-secret").value = "";
    });
  });

  // ---------- dead letters ----------

  function loadDead() {
    lastDead = Date.now();
    return api("GET", "/webhooks/dead").then(function (r) {
      if (r.status !== 200 || !r.body) { say("dead-msg", problem(r)); return; }
      fillDead(r.body.dead || []);
    });
  }

  function fillDead(dead) {
    var body = $("dead-table").tBodies[0];
    body.textContent = "";
    say("dead-msg", dead.length ? "" : "No failed deliveries.");
    dead.forEach(function (d) {
      var tr = el("tr");
      tr.appendChild(el("td", new Date(d.diedAt).toLocaleString()));
      tr.appendChild(el("td", d.room));
      tr.appendChild(el("td", d.type));
      tr.appendChild(el("td", d.url));
      tr.appendChild(el("td", d.attempts + " · " + (d.lastError || "")));
      var td = el("td");
      var b = el("button", "Redeliver", "secondary");
      b.type = "button";
      b.addEventListener("click", function () {
        b.disabled = true;
        api("POST", "/webhooks/dead/" + encodeURIComponent(d.id) + "/redeliver").then(function (r) {
          say("dead-msg", r.status === 202 ? "Sent again: " + d.type + " to " + d.url + "." : problem(r));
          loadDead();
        });
      });
      td.appendChild(b);
      tr.appendChild(td);
      body.appendChild(tr);
    });
  }

  $("dead-refresh").addEventListener("click", loadDead);

  // ---------- following the dashboard ----------

  // watch notices the room admin.js chose (it keeps it in the address) and
  // that the panel is shown, and loads what is new.
  function watch() {
    if (visible()) {
      var now = new URLSearchParams(location.search).get("room") || "";
      if (now && now !== room) {
        room = now;
        say("webhooks-msg", "");
        $("webhooks-room").textContent = room;
        loadHooks();
      }
      if (Date.now() - lastDead > DEAD_EVERY_MS) loadDead();
    }
    setTimeout(watch, WATCH_MS);
  }
  watch();
})();
