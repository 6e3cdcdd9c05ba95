package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/gofiber/fiber/v2"

	"github.com/waitroom/waitroom/internal/httperr"
	"github.com/waitroom/waitroom/static"
)

// langCookie remembers the language a visitor picked with the page's
// switcher; it wins over Accept-Language.
const langCookie = "waitroom_lang"

// language is one translation of the page: static/i18n-CODE.json.
type language struct {
	Code string `json:"code"`
	Name string `json:"name"`
	text json.RawMessage
}

// languages are the page's translations, English first (the fallback).
type languages struct {
	list   []language
	byCode map[string]int
}

// loadLanguages reads the embedded translations.
func loadLanguages() (*languages, error) {
	names, err := static.Languages()
	if err != nil {
		return nil, err
	}
	ls := &languages{byCode: map[string]int{}}
	for _, code := range names {
		raw, err := static.Files.ReadFile("i18n-" + code + ".json")
		if err != nil {
			return nil, err
		}
		var m map[string]string
		if err := json.Unmarshal(raw, &m); err != nil {
			return nil, fmt.Errorf("static/i18n-%s.json: %w", code, err)
		}
		// Marshalled again: json escapes <, > and &, so the text can sit
		// in a <script> element of the page as it is.
		b, _ := json.Marshal(m)
		ls.list = append(ls.list, language{Code: code, Name: m["langName"], text: b})
	}
	slices.SortStableFunc(ls.list, func(a, b language) int {
		switch {
		case a.Code == b.Code:
			return 0
		case a.Code == "en":
			return -1
		case b.Code == "en":
			return 1
		}
		return strings.Compare(a.Code, b.Code)
	})
	for i, l := range ls.list {
		ls.byCode[l.Code] = i
	}
	if _, ok := ls.byCode["en"]; !ok {
		return nil, fmt.Errorf("static: no i18n-en.json")
	}
	return ls, nil
}

// mustLanguages loads the embedded translations, which the static
// package's tests check; a build without them cannot serve the page.
func mustLanguages() *languages {
	ls, err := loadLanguages()
	if err != nil {
		panic(err)
	}
	return ls
}

// match returns the supported language for a tag (de-CH → de, zh-Hans-CN →
// zh), or "".
func (ls *languages) match(tag string) string {
	tag = strings.ToLower(strings.TrimSpace(tag))
	if _, ok := ls.byCode[tag]; ok {
		return tag
	}
	if base, _, ok := strings.Cut(tag, "-"); ok {
		if _, ok := ls.byCode[base]; ok {
			return base
		}
	}
	return ""
}

// pick chooses the page's language: the visitor's remembered choice, else
// the best Accept-Language match by quality (ties in header order), else
// English.
func (ls *languages) pick(cookie, acceptLanguage string) string {
	if l := ls.match(cookie); l != "" {
		return l
	}
	best, bestQ := "", 0.0
	for _, part := range strings.Split(acceptLanguage, ",") {
		tag, params, _ := strings.Cut(part, ";")
		q := 1.0
		if v, ok := strings.CutPrefix(strings.TrimSpace(params), "q="); ok {
			f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
			if err != nil || f < 0 || f > 1 {
				continue
			}
			q = f
		}
		if l := ls.match(tag); l != "" && q > bestQ {
			best, bestQ = l, q
		}
	}
	if best == "" {
		return "en"
	}
	return best
}

// pageBoot is what the page reads before its first render, from
// <script type="application/json" id="waitroom-boot">.
type pageBoot struct {
	Lang  string          `json:"lang"`
	Langs []language      `json:"langs"`
	Text  json.RawMessage `json:"text"`
	// Branding is the ?room's look, when it has one.
	Branding *roomLook `json:"branding,omitempty"`
}

var (
	htmlTagRe = regexp.MustCompile(`(?i)<html\b[^>]*>`)
	langAttRe = regexp.MustCompile(`(?i)\slang\s*=\s*("[^"]*"|'[^']*'|[^\s>]+)`)
	headEndRe = regexp.MustCompile(`(?i)</head\s*>`)
)

// bootPage returns page with its <html lang> set and the boot data inserted
// before </head> (or after <html>, or first, in a page without them).
func bootPage(page []byte, boot pageBoot) []byte {
	data, _ := json.Marshal(boot) // escapes <, > and &: safe inside <script>
	script := []byte(`<script type="application/json" id="waitroom-boot">` + string(data) + "</script>\n")
	out := page
	if loc := htmlTagRe.FindIndex(out); loc != nil {
		tag := out[loc[0]:loc[1]]
		var nt []byte
		if langAttRe.Match(tag) {
			nt = langAttRe.ReplaceAll(tag, []byte(` lang="`+boot.Lang+`"`))
		} else {
			nt = append([]byte(`<html lang="`+boot.Lang+`"`), tag[len("<html"):]...)
		}
		out = slices.Concat(out[:loc[0]], nt, out[loc[1]:])
	}
	if loc := headEndRe.FindIndex(out); loc != nil {
		return slices.Concat(out[:loc[0]], script, out[loc[0]:])
	}
	if loc := htmlTagRe.FindIndex(out); loc != nil {
		return slices.Concat(out[:loc[1]], []byte("\n"), script, out[loc[1]:])
	}
	return append(script, out...)
}

// page serves the waiting page (index.html, embedded or from -page-dir) in
// the visitor's language, with the room's branding.
func (s *server) page(ls *languages) fiber.Handler {
	return func(c *fiber.Ctx) error {
		html, err := s.pageFile("index.html")
		if err != nil {
			return httperr.New(404, "not_found", "no such page")
		}
		lang := ls.pick(c.Cookies(langCookie), c.Get(fiber.HeaderAcceptLanguage))
		boot := pageBoot{Lang: lang, Langs: ls.list, Text: ls.list[ls.byCode[lang]].text}
		boot.Branding = s.pageBranding(c)
		c.Set(fiber.HeaderContentType, fiber.MIMETextHTMLCharsetUTF8)
		c.Set(fiber.HeaderCacheControl, "no-cache")
		c.Set(fiber.HeaderVary, "Accept-Language, Cookie")
		return c.Send(bootPage(html, boot))
	}
}

// dashboardFiles are always the built-in ones: -page-dir is the waiting
// page's, not the dashboard's.
var dashboardFiles = map[string]bool{"admin.html": true, "admin.js": true, "admin.css": true}

// pageFile reads one file of the waiting page: from -page-dir when set and
// the file is there, else the embedded one. name is one path element
// (the routes refuse slashes); it is read anew each time, so an operator's
// edit shows on the next load.
func (s *server) pageFile(name string) ([]byte, error) {
	if s.cfg.PageDir != "" && fs.ValidPath(name) && !dashboardFiles[name] {
		b, err := fs.ReadFile(os.DirFS(s.cfg.PageDir), name)
		if err == nil {
			return b, nil
		}
		if !errors.Is(err, fs.ErrNotExist) {
			return nil, err
		}
	}
	return static.Files.ReadFile(name)
}
