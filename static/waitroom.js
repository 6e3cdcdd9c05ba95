// waitroom.js: joins a room and reports its state. Minimal polling client.
(function (global) {
  "use strict";
  function connect(opts) {
    var room = opts.room, onState = opts.onState || function () {};
    var base = opts.base || "";
    var stopped = false, timer = null;
    function poll() {
      fetch(base + "/api/v1/rooms/" + encodeURIComponent(room) + "/status", { credentials: "include" })
        .then(function (r) { return r.json(); })
        .then(function (s) {
          if (stopped) return;
          onState(s);
          if (s.status === "waiting") timer = setTimeout(poll, s.nextPollMs || 1000);
        })
        .catch(function () { if (!stopped) timer = setTimeout(poll, 2000); });
    }
    fetch(base + "/api/v1/rooms/" + encodeURIComponent(room) + "/join", { method: "POST", credentials: "include" })
      .then(function (r) { return r.json(); })
      .then(function (s) { onState(s); if (s.status === "waiting") timer = setTimeout(poll, s.nextPollMs || 1000); });
    return { close: function () { stopped = true; clearTimeout(timer); } };
  }
  global.Waitroom = { connect: connect };
})(window);
