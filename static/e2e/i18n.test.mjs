// End-to-end checks of the page in every language and of a branded room, in
// headless Chromium against the real server: the words are the language's,
// the switcher changes them at once and is remembered, and the layout holds
// on a phone and in dark mode. Run from the module root: node --test static/e2e/
import assert from "node:assert/strict";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { test } from "node:test";
import { ADMIN_KEY, build, openBrowser, shot, startServer, waitFor } from "./harness.mjs";

const T = { timeout: 120000 };
const here = path.dirname(fileURLToPath(import.meta.url));
const words = (lang) => JSON.parse(fs.readFileSync(path.join(here, "..", `i18n-${lang}.json`), "utf8"));
const LANGS = { en: "en-US", de: "de-DE", fr: "fr-FR", es: "es-ES", pt: "pt-BR", ja: "ja-JP", zh: "zh-CN" };

test.before(async () => { await build(); }, { timeout: 180000 });

// setRoom changes a room's settings through the admin API.
async function setRoom(srv, room, settings) {
  const res = await fetch(`${srv.base}/api/v1/admin/rooms/${room}`, {
    method: "PUT", headers: { "Authorization": "Bearer " + ADMIN_KEY, "Content-Type": "application/json" },
    body: JSON.stringify(settings),
  });
  const body = await res.text();
  assert.equal(res.status, 200, body);
  return JSON.parse(body);
}

const text = (page, id) => page.locator("#" + id).textContent().then((s) => (s || "").trim());

// fill puts vars into a translation's {placeholders}.
const fill = (s, vars) => s.replace(/\{(\w+)\}/g, (m, k) => (k in vars ? String(vars[k]) : m));

test("the page comes in the visitor's language, by Accept-Language", T, async (t) => {
  const srv = await startServer(["-tick", "100ms"]);
  t.after(() => srv.stop());
  const b = await openBrowser();
  t.after(() => b.close());
  for (const [lang, header] of Object.entries(LANGS)) {
    await t.test(lang, async () => {
      // A paused room of its own: the visitor is first and stays in line.
      await setRoom(srv, "lang-" + lang, { paused: true });
      const page = await b.context.newPage();
      try {
        await page.setExtraHTTPHeaders({ "Accept-Language": header + ",en;q=0.5" });
        await page.goto(`${srv.base}/?room=lang-${lang}`);
        const w = words(lang);
        await page.waitForFunction((want) => document.getElementById("eyebrow").textContent === want, w.queuePaused, { timeout: 15000 });
        assert.equal(await page.evaluate(() => document.documentElement.lang), lang);
        assert.equal(await text(page, "headline"), w.youreNext);
        assert.equal(await page.locator(".figure-label").first().textContent(), w.positionLabel);
        assert.equal(await text(page, "eta"), w.paused);
        assert.equal(await text(page, "room-name"), fill(w.roomLabel, { room: "lang-" + lang }));
        assert.equal(await page.title(), fill(w.docTitle, { room: "lang-" + lang }));
        assert.equal(await page.locator("#lang").inputValue(), lang);
        await shot(page, `lang-${lang}.png`);
        // Longer words still fit a phone; dark mode keeps them readable.
        await page.setViewportSize({ width: 360, height: 740 });
        const width = await page.evaluate(() => document.documentElement.scrollWidth);
        assert.ok(width <= 360, `${lang}: page is ${width}px wide on a 360px screen`);
        await page.emulateMedia({ colorScheme: "dark" });
        await shot(page, `lang-${lang}-phone-dark.png`);
        assert.deepEqual(b.errors, [], "console errors");
      } finally {
        await page.close(); // its connection ends: the visitor's per-visitor limit is not reached
      }
    });
  }
});

test("the switcher changes the words at once and is remembered", T, async (t) => {
  const srv = await startServer(["-tick", "100ms"]);
  t.after(() => srv.stop());
  await setRoom(srv, "switch", { paused: true });
  const b = await openBrowser();
  t.after(() => b.close());
  const { page } = b;
  await page.setExtraHTTPHeaders({ "Accept-Language": "en-US" });
  await page.goto(`${srv.base}/?room=switch`);
  await page.locator("#lang").waitFor({ state: "visible", timeout: 10000 });
  await page.waitForFunction(() => /^Live via/.test(document.getElementById("transport").textContent), null, { timeout: 15000 });

  const de = words("de");
  await page.locator("#lang").selectOption("de");
  await page.waitForFunction((want) => document.getElementById("leave").textContent === want, de.leave, { timeout: 10000 });
  assert.equal(await page.evaluate(() => document.documentElement.lang), "de");
  await waitFor("German transport words", async () => /^Live über/.test(await text(page, "transport")));
  assert.equal(await text(page, "headline"), de.youreNext);
  assert.equal(await text(page, "eta"), de.paused);

  await page.reload();
  await page.waitForFunction((want) => document.getElementById("leave").textContent === want, de.leave, { timeout: 10000 });
  assert.equal(await page.locator("#lang").inputValue(), "de");
  assert.deepEqual(b.errors, [], "console errors");
});

test("a branded room shows the shop's title, logo, colours and a cleaned footer", T, async (t) => {
  const srv = await startServer(["-tick", "100ms"]);
  t.after(() => srv.stop());
  const cfg = await setRoom(srv, "brand", {
    paused: true,
    brandTitle: "Acme Sneaker Drop",
    brandLogo: "/assets/favicon.svg",
    brandAccent: "#c2185b",
    brandBackground: "#fff3e0",
    brandFooter: '<p>© Acme Ltd · <a href="https://acme.example/terms" onclick="window.pwned=1">Terms</a>' +
      ' · <a href="javascript:window.pwned=1">x</a></p><script>window.pwned=1</script><img src=x onerror="window.pwned=1">',
  });
  // Stored cleaned: the script, the image, the handler and the javascript: link are gone.
  assert.equal(cfg.brandFooter, '<p>© Acme Ltd · <a href="https://acme.example/terms">Terms</a> · <a>x</a></p>');

  const b = await openBrowser();
  t.after(() => b.close());
  const { page } = b;
  await page.setExtraHTTPHeaders({ "Accept-Language": "fr-FR" });
  await page.goto(`${srv.base}/?room=brand`);
  const fr = words("fr");
  await page.waitForFunction((want) => document.getElementById("eyebrow").textContent === want, fr.queuePaused, { timeout: 15000 });

  assert.equal(await text(page, "brand-text"), "Acme Sneaker Drop");
  assert.equal(await page.title(), fill(fr.docTitle, { room: "Acme Sneaker Drop" }));
  assert.match(await page.locator("#brand-logo").getAttribute("src"), /\/assets\/favicon\.svg$/);
  await page.waitForFunction(() => document.getElementById("brand-logo").naturalWidth > 0, null, { timeout: 10000 });
  const look = await page.evaluate(() => {
    const cs = getComputedStyle(document.documentElement), body = getComputedStyle(document.body);
    return {
      accent: cs.getPropertyValue("--accent").trim(), bg: body.backgroundColor,
      links: [...document.querySelectorAll("#brand-foot a")].map((a) => [a.getAttribute("href"), a.textContent, getComputedStyle(a).color]),
      scripts: document.querySelectorAll("#brand-foot script, #brand-foot img").length,
      pwned: window.pwned === 1,
    };
  });
  assert.equal(look.accent, "#c2185b");
  assert.equal(look.bg, "rgb(255, 243, 224)");
  assert.deepEqual(look.links, [["https://acme.example/terms", "Terms", "rgb(194, 24, 91)"], [null, "x", "rgb(194, 24, 91)"]]);
  assert.equal(look.scripts, 0);
  assert.equal(look.pwned, false);
  assert.equal(await text(page, "brand-foot"), "© Acme Ltd · Terms · x");
  await shot(page, "branded.png", "page-branded.png");

  // The public branding endpoint says the same, for pages of the shop's own.
  const api = await (await fetch(`${srv.base}/api/v1/rooms/brand/branding`)).json();
  assert.deepEqual(api, {
    title: "Acme Sneaker Drop", logo: "/assets/favicon.svg", accent: "#c2185b", background: "#fff3e0",
    footer: '<p>© Acme Ltd · <a href="https://acme.example/terms">Terms</a> · <a>x</a></p>',
  });

  // On a phone and in dark mode the brand stays and the page fits.
  await page.setViewportSize({ width: 360, height: 740 });
  const width = await page.evaluate(() => document.documentElement.scrollWidth);
  assert.ok(width <= 360, `page is ${width}px wide on a 360px screen`);
  await shot(page, "branded-phone.png");
  await page.emulateMedia({ colorScheme: "dark" });
  await page.setViewportSize({ width: 900, height: 760 });
  assert.equal(await page.evaluate(() => getComputedStyle(document.documentElement).getPropertyValue("--accent").trim()), "#c2185b");
  await shot(page, "branded-dark.png");
  assert.deepEqual(b.errors, [], "console errors");
});

test("-page-dir serves the operator's own page, which uses waitroom.js and the boot data", T, async (t) => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "waitroom-page-"));
  t.after(() => fs.rmSync(dir, { recursive: true, force: true }));
  fs.writeFileSync(path.join(dir, "index.html"), `<!doctype html>
<html><head><meta charset="utf-8"><title>Shop</title><link rel="stylesheet" href="assets/shop.css">
<link rel="icon" href="assets/favicon.svg" type="image/svg+xml"></head>
<body><h1 id="h">…</h1><p id="pos"></p><p id="brand"></p>
<script src="waitroom.js"></script>
<script>
  var boot = JSON.parse(document.getElementById("waitroom-boot").textContent);
  document.getElementById("h").textContent = boot.text.youreInLine;
  document.getElementById("brand").textContent = (boot.branding && boot.branding.title) || "";
  Waitroom.connect({ room: new URLSearchParams(location.search).get("room"), onState: function (s) {
    if (s && s.status === "waiting") document.getElementById("pos").textContent = "#" + s.position;
  } });
</script></body></html>`);
  fs.writeFileSync(path.join(dir, "shop.css"), "h1 { color: rgb(1, 2, 3); }");
  const srv = await startServer(["-tick", "100ms", "-page-dir", dir]);
  t.after(() => srv.stop());
  await setRoom(srv, "own", { paused: true, brandTitle: "Own Shop" });
  const b = await openBrowser();
  t.after(() => b.close());
  const { page } = b;
  await page.setExtraHTTPHeaders({ "Accept-Language": "pt-PT" });
  await page.goto(`${srv.base}/?room=own`);
  await page.waitForFunction(() => document.getElementById("pos").textContent === "#1", null, { timeout: 15000 });
  assert.equal(await text(page, "h"), words("pt").youreInLine);
  assert.equal(await text(page, "brand"), "Own Shop");
  assert.equal(await page.evaluate(() => document.documentElement.lang), "pt");
  assert.equal(await page.evaluate(() => getComputedStyle(document.getElementById("h")).color), "rgb(1, 2, 3)");
  await shot(page, "page-dir.png");
  assert.deepEqual(b.errors, [], "console errors");
});
