// admin-preview.js: the dashboard's page preview. It adds a panel below
// the room's settings with a state and a language picker, and shows the
// chosen room's waiting page as a visitor would see it in that state
// (GET /admin/preview, with the dashboard's key) in a sandboxed frame: the
// page shows a made-up state and never joins, so no queue entry is made.
(function () {
  "use strict";

  var KEY_STORE = "waitroom:admin-key"; // admin.js keeps the key there
  var STATES = [
    ["waiting", "Waiting in line"], ["paused", "Paused"], ["prequeue", "Before opening"],
    ["soldout", "Sold out"], ["admitted", "Admitted"], ["closed", "Closed"]
  ];

  var $ = function (id) { return document.getElementById(id); };
  var board = $("board"), roomSel = $("room");
  if (!board || !roomSel) return;

  function el(tag, attrs, text) {
    var n = document.createElement(tag);
    Object.keys(attrs || {}).forEach(function (k) { n.setAttribute(k, attrs[k]); });
    if (text) n.textContent = text;
    return n;
  }

  function field(id, label) {
    var box = el("div", { "class": "field" });
    box.appendChild(el("label", { "for": id }, label));
    var sel = el("select", { id: id });
    box.appendChild(sel);
    return { box: box, sel: sel };
  }

  var panel = el("section", { "class": "panel", id: "preview-panel", "aria-labelledby": "preview-title" });
  panel.appendChild(el("h2", { id: "preview-title", "class": "panel-title" }, "Page preview"));
  var controls = el("div", { "class": "controls" });
  var state = field("preview-state", "State"), lang = field("preview-lang", "Language");
  STATES.forEach(function (s) { state.sel.appendChild(el("option", { value: s[0] }, s[1])); });
  lang.sel.appendChild(el("option", { value: "en" }, "English"));
  var show = el("button", { type: "button", "class": "secondary", id: "preview-show" }, "Show");
  controls.appendChild(state.box);
  controls.appendChild(lang.box);
  controls.appendChild(show);
  panel.appendChild(controls);
  var note = el("p", { "class": "meta", id: "preview-msg", role: "status", "aria-live": "polite" });
  panel.appendChild(note);
  // No allow-same-origin: the page runs in an origin of its own, so it
  // cannot read the dashboard's key.
  var frame = el("iframe", { id: "preview-frame", title: "Waiting page preview", sandbox: "allow-scripts", hidden: "" });
  frame.style.width = "100%";
  frame.style.height = "640px";
  frame.style.border = "1px solid var(--line, #ccc)";
  frame.style.borderRadius = "8px";
  panel.appendChild(frame);
  var after = $("settings-panel");
  if (after && after.parentNode === board) board.insertBefore(panel, after.nextSibling);
  else board.appendChild(panel);

  var langsRead = false, asked = 0;

  function key() {
    try { return sessionStorage.getItem(KEY_STORE) || ""; } catch (e) { return ""; }
  }

  // readLangs fills the language picker from the page's own boot data,
  // the languages a visitor may pick.
  function readLangs(html) {
    if (langsRead) return;
    var doc = new DOMParser().parseFromString(html, "text/html");
    var boot = doc.getElementById("waitroom-boot");
    var langs = [];
    try { langs = JSON.parse(boot.textContent).langs || []; } catch (e) { return; }
    if (!langs.length) return;
    var want = lang.sel.value;
    lang.sel.textContent = "";
    langs.forEach(function (l) { lang.sel.appendChild(el("option", { value: l.code }, l.name || l.code)); });
    lang.sel.value = want;
    langsRead = true;
  }

  function render() {
    var room = roomSel.value;
    if (!room) return;
    var n = ++asked;
    var q = new URLSearchParams({ room: room, state: state.sel.value, lang: lang.sel.value || "en" });
    note.textContent = "Loading…";
    fetch("/admin/preview?" + q, { headers: { "Authorization": "Bearer " + key() }, cache: "no-store", credentials: "same-origin" })
      .then(function (res) {
        return res.text().then(function (text) { return { ok: res.ok, status: res.status, text: text }; });
      })
      .then(function (r) {
        if (n !== asked) return; // a later choice is on its way
        if (!r.ok) {
          var e = null;
          try { e = JSON.parse(r.text).error; } catch (err) { /* not JSON */ }
          note.textContent = "No preview: " + (e ? e.message + " (" + e.code + ")" : "HTTP " + r.status);
          frame.hidden = true;
          return;
        }
        readLangs(r.text);
        frame.srcdoc = r.text;
        frame.hidden = false;
        frame.dataset.room = room;
        frame.dataset.state = state.sel.value;
        frame.dataset.lang = lang.sel.value;
        note.textContent = "The page of " + room + " as a visitor sees it, " +
          state.sel.options[state.sel.selectedIndex].text.toLowerCase() + ". Nothing joins the queue.";
      }, function () {
        if (n === asked) note.textContent = "The server can't be reached.";
      });
  }

  state.sel.addEventListener("change", render);
  lang.sel.addEventListener("change", render);
  roomSel.addEventListener("change", render);
  show.addEventListener("click", render);
  // The board shows once a room is chosen, and the dashboard's title names
  // the room chosen (from the list too, which fires no change): preview
  // the room then.
  var follow = new MutationObserver(function () { if (!board.hidden && roomSel.value && roomSel.value !== frame.dataset.room) render(); });
  follow.observe(board, { attributes: true, attributeFilter: ["hidden"] });
  var title = document.querySelector("title");
  if (title) follow.observe(title, { childList: true, characterData: true, subtree: true });
  if (!board.hidden) render();
})();
