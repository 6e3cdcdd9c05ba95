// The report page: reads GET /api/v1/admin/rooms/{room}/report (or an
// event's) with the admin key the dashboard keeps in this tab, and draws
// its per-minute series as SVG. No external scripts.
(function () {
  "use strict";
  var KEY_STORE = "waitroom:admin-key";
  var SVG = "http://www.w3.org/2000/svg";
  function $(id) { return document.getElementById(id); }

  function readKey() {
    try { return sessionStorage.getItem(KEY_STORE) || ""; } catch (e) { return ""; }
  }
  function key() { return $("key").value.trim() || readKey(); }

  function message(text) {
    $("msg").hidden = !text;
    $("msg").textContent = text || "";
  }

  // toRFC3339 turns a datetime-local value, read as UTC, into RFC 3339.
  function toRFC3339(v) { return v ? v + (v.length === 16 ? ":00Z" : "Z") : ""; }

  function reportURL(format) {
    var room = $("room").value.trim(), ev = $("event").value.trim();
    var path = "/api/v1/admin/rooms/" + encodeURIComponent(room) +
      (ev ? "/events/" + encodeURIComponent(ev) : "") + "/report";
    var q = new URLSearchParams();
    if (!ev) {
      if ($("from").value) q.set("from", toRFC3339($("from").value));
      if ($("to").value) q.set("to", toRFC3339($("to").value));
    }
    if (format) q.set("format", format);
    var s = q.toString();
    return path + (s ? "?" + s : "");
  }

  function get(format) {
    return fetch(reportURL(format), { headers: { "Authorization": "Bearer " + key() } }).then(function (r) {
      if (r.ok) return r;
      return r.json().then(function (b) {
        throw new Error((b.error && b.error.message) || ("HTTP " + r.status));
      }, function () { throw new Error("HTTP " + r.status); });
    });
  }

  function el(name, attrs, parent) {
    var e = document.createElementNS(SVG, name);
    for (var k in attrs) e.setAttribute(k, attrs[k]);
    if (parent) parent.appendChild(e);
    return e;
  }

  // chart draws series (each {name, color, values, bars}) over the
  // minutes of rep in box.
  function chart(box, minutes, series) {
    box.textContent = "";
    var W = 800, H = 200, L = 44, B = 22, n = Math.max(minutes.length, 1);
    var top = 4; // at least: the grid's labels stay whole numbers
    series.forEach(function (s) { s.values.forEach(function (v) { top = Math.max(top, v); }); });
    var svg = el("svg", { viewBox: "0 0 " + W + " " + H, role: "img", "aria-label": series.map(function (s) { return s.name; }).join(", ") }, box);
    var y = function (v) { return H - B - (v / top) * (H - B - 8); };
    var x = function (i) { return L + (i / n) * (W - L - 4); };
    [0, 0.5, 1].forEach(function (f) {
      el("line", { x1: L, x2: W, y1: y(top * f), y2: y(top * f), "class": "grid" }, svg);
      el("text", { x: L - 4, y: y(top * f) + 3, "text-anchor": "end", "class": "axis" }, svg).textContent = Math.round(top * f);
    });
    [0, n - 1].forEach(function (i) {
      if (!minutes[i]) return;
      el("text", { x: x(i), y: H - 6, "text-anchor": i ? "end" : "start", "class": "axis" }, svg).textContent = minutes[i].slice(11, 16) + " UTC";
    });
    var bw = Math.max((W - L - 4) / n / series.length, 0.5);
    series.forEach(function (s, k) {
      if (s.bars) {
        s.values.forEach(function (v, i) {
          if (v > 0) el("rect", { x: x(i) + k * bw, y: y(v), width: bw, height: y(0) - y(v), fill: s.color }, svg);
        });
        return;
      }
      var d = s.values.map(function (v, i) { return (i ? "L" : "M") + x(i).toFixed(1) + " " + y(v).toFixed(1); }).join(" ");
      el("path", { d: d, fill: "none", stroke: s.color, "stroke-width": 2 }, svg);
      if (s.values.length === 1) el("circle", { cx: x(0), cy: y(s.values[0]), r: 4, fill: s.color }, svg);
    });
    var legend = document.createElement("p");
    legend.className = "legend";
    series.forEach(function (s) {
      var k = el("svg", { width: 10, height: 10, "aria-hidden": "true" }, legend);
      el("rect", { width: 10, height: 10, fill: s.color }, k);
      legend.appendChild(document.createTextNode(" " + s.name + "   "));
    });
    box.appendChild(legend);
  }

  function figure(dl, name, value) {
    var d = document.createElement("div");
    var dt = document.createElement("dt"), dd = document.createElement("dd");
    dt.textContent = name;
    dd.textContent = value;
    d.appendChild(dt);
    d.appendChild(dd);
    dl.appendChild(d);
  }

  function secs(s) { return s >= 120 ? (s / 60).toFixed(1) + " min" : s.toFixed(1) + " s"; }

  function show(rep) {
    var t = rep.totals;
    $("report-title").textContent = "Room " + rep.room + (rep.event ? " · event " + rep.event : "");
    $("report-range").textContent = rep.from + " to " + rep.to;
    var dl = $("totals");
    dl.textContent = "";
    figure(dl, "Arrivals", t.arrivals);
    figure(dl, "Peak waiting", t.peakWaiting);
    figure(dl, "Admitted", t.admitted);
    figure(dl, "Refused (rate limit / proof of work / invite / closed)",
      [t.refused.rateLimit, t.refused.pow, t.refused.invite, t.refused.closed].join(" / "));
    figure(dl, "Lost while waiting (left / away / dropped)", [t.left.waiting, t.left.away, t.left.dropped].join(" / "));
    var pct = function (p) { return p.count ? [p.p50, p.p90, p.p99].map(secs).join(" / ") : "–"; };
    figure(dl, "Time in queue p50 / p90 / p99", pct(t.queueSeconds));
    figure(dl, "Time on the origin p50 / p90 / p99", pct(t.originSeconds));
    figure(dl, "Promised wait: median error", t.promised.count ? secs(t.promised.medianAbsErrorSeconds) : "–");
    figure(dl, "Promised wait: admitted within ±20 %", t.promised.count ? Math.round(t.promised.withinShare * 100) + " % of " + t.promised.count : "–");
    figure(dl, "Promised range: admitted inside it", t.promised.rangeCount ? Math.round(t.promised.inRangeShare * 100) + " % of " + t.promised.rangeCount : "–");
    figure(dl, "Sold out at", t.soldOutAt || "never");
    var s = rep.series, at = s.map(function (m) { return m.at; });
    var pick = function (f) { return s.map(f); };
    chart($("chart-flow"), at, [
      { name: "arrivals", color: "#3b6fd4", bars: true, values: pick(function (m) { return m.arrivals; }) },
      { name: "admitted", color: "#2e9e5b", bars: true, values: pick(function (m) { return m.admitted; }) }
    ]);
    chart($("chart-waiting"), at, [
      { name: "peak waiting", color: "#c2741c", values: pick(function (m) { return m.peakWaiting; }) }
    ]);
    chart($("chart-lost"), at, [
      { name: "refused", color: "#c0392b", bars: true, values: pick(function (m) { var r = m.refused; return r.rateLimit + r.pow + r.invite + r.closed; }) },
      { name: "left, away or dropped", color: "#7d5ba6", bars: true, values: pick(function (m) { var l = m.left; return l.waiting + l.away + l.dropped; }) }
    ]);
    $("report").hidden = false;
  }

  $("report-form").addEventListener("submit", function (e) {
    e.preventDefault();
    message("");
    get("").then(function (r) { return r.json(); }).then(show, function (err) { message(err.message); });
  });
  $("csv").addEventListener("click", function () {
    message("");
    get("csv").then(function (r) { return r.blob(); }).then(function (b) {
      var a = document.createElement("a");
      a.href = URL.createObjectURL(b);
      a.download = $("room").value.trim() + "-report.csv";
      document.body.appendChild(a);
      a.click();
      a.remove();
    }, function (err) { message(err.message); });
  });
  $("print").addEventListener("click", function () { window.print(); });

  var params = new URLSearchParams(location.search);
  $("room").value = params.get("room") || "";
  $("event").value = params.get("event") || "";
  if (readKey()) $("key-field").hidden = true;
  if ($("room").value && readKey()) $("report-form").requestSubmit();
})();
