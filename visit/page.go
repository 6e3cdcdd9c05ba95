package visit

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"regexp"
	"slices"
	"strings"

	"github.com/gofiber/fiber/v2"
	"golang.org/x/text/language"

	"github.com/waitroom/waitroom/internal/httperr"
	"github.com/waitroom/waitroom/static"
)

// LangCookie remembers the language a visitor picked with the page's
// switcher; it wins over Accept-Language.
const LangCookie = "waitroom_lang"

// translation is one language of the page: static/i18n-CODE.json.
type translation struct {
	Code string `json:"code"`
	Name string `json:"name"`
	text json.RawMessage
}

// languages are the page's translations, English first (the fallback).
type languages struct {
	list    []translation
	byCode  map[string]int
	matcher language.Matcher // over tags, index for index with list
	tags    []language.Tag
}

// fallback is the code of the page a visitor gets when no translation is
// in a language and script they asked for.
const fallback = "en"

// maxAcceptEntries bounds the Accept-Language entries looked at, so a
// header of thousands of tags costs no more than a browser's few.
const maxAcceptEntries = 64

// loadLanguages reads the embedded translations.
func loadLanguages() (*languages, error) {
	names, err := static.Languages()
	if err != nil {
		return nil, err
	}
	var list []translation
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
		list = append(list, translation{Code: code, Name: m["langName"], text: b})
	}
	return newLanguages(list)
}

// newLanguages orders the translations, the fallback first, and readies
// their matching; each code must be a language tag ("de", "zh-Hant").
func newLanguages(list []translation) (*languages, error) {
	ls := &languages{list: list, byCode: map[string]int{}}
	slices.SortStableFunc(ls.list, func(a, b translation) int {
		switch {
		case a.Code == b.Code:
			return 0
		case a.Code == fallback:
			return -1
		case b.Code == fallback:
			return 1
		}
		return strings.Compare(a.Code, b.Code)
	})
	for i, l := range ls.list {
		ls.byCode[l.Code] = i
		tag, err := language.Parse(l.Code)
		if err != nil {
			return nil, fmt.Errorf("static/i18n-%s.json: the name is not a language tag: %w", l.Code, err)
		}
		ls.tags = append(ls.tags, tag)
	}
	if _, ok := ls.byCode[fallback]; !ok {
		return nil, fmt.Errorf("static: no i18n-%s.json", fallback)
	}
	ls.matcher = language.NewMatcher(ls.tags)
	return ls, nil
}

// match returns the translation for a language tag, or "". A translation
// serves a tag of its own language in the same script, whatever the
// region (de-CH → de, zh-Hans-CN and zh-SG → zh, which is Simplified);
// never another script (zh-TW and zh-Hant are Traditional, so not zh) nor
// a related language (gsw is not de).
func (ls *languages) match(tag string) string {
	tag = strings.TrimSpace(tag)
	if _, ok := ls.byCode[tag]; ok {
		return tag
	}
	want, err := language.Parse(tag)
	if err != nil {
		return ""
	}
	return ls.matchTag(want)
}

// matchTag is match for a parsed tag.
func (ls *languages) matchTag(want language.Tag) string {
	_, i, conf := ls.matcher.Match(want)
	if conf < language.High {
		return ""
	}
	have := ls.tags[i]
	// Canonical, so cmn (Mandarin) is zh and iw is he.
	if c, err := language.All.Canonicalize(want); err == nil {
		want = c
	}
	wantBase, _ := want.Base()
	haveBase, _ := have.Base()
	wantScript, _ := want.Script()
	haveScript, _ := have.Script()
	if wantBase != haveBase || wantScript != haveScript {
		return ""
	}
	return ls.list[i].Code
}

// pick chooses the page's language: the visitor's remembered choice, else
// the best Accept-Language match by quality (ties in header order), else
// the fallback. An entry that does not parse, or has a weight of 0, asks
// for nothing; the others still count.
func (ls *languages) pick(cookie, acceptLanguage string) string {
	if l := ls.match(cookie); l != "" {
		return l
	}
	type entry struct {
		tag language.Tag
		q   float32
	}
	var asked []entry
	for i, part := range strings.Split(acceptLanguage, ",") {
		if i == maxAcceptEntries {
			break
		}
		// One entry at a time: a bad one leaves the rest of the header.
		tags, qs, err := language.ParseAcceptLanguage(part)
		if err != nil || len(tags) != 1 || qs[0] > 1 {
			continue
		}
		asked = append(asked, entry{tags[0], qs[0]})
	}
	slices.SortStableFunc(asked, func(a, b entry) int { return cmp.Compare(b.q, a.q) })
	for _, e := range asked {
		if l := ls.matchTag(e.tag); l != "" {
			return l
		}
	}
	return fallback
}

// pageBoot is what the page reads before its first render, from
// <script type="application/json" id="waitroom-boot">.
type pageBoot struct {
	Lang  string          `json:"lang"`
	Langs []translation   `json:"langs"`
	Text  json.RawMessage `json:"text"`
	// Branding is the ?room's look, when it has one.
	Branding *roomLook `json:"branding,omitempty"`
	// Orders: the demo order endpoint is there to offer (Options.Orders).
	Orders bool `json:"orders,omitempty"`
	// Preview is a made-up state the page shows instead of joining (see
	// PreviewPage).
	Preview json.RawMessage `json:"preview,omitempty"`
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

// page serves the waiting page (index.html, embedded or from
// Options.PageDir) in the visitor's language, with the room's branding.
func (a *API) page(c *fiber.Ctx) error {
	html, err := a.pageFile("index.html")
	if err != nil {
		return httperr.New(404, "not_found", "no such page")
	}
	ls := a.langs
	lang := ls.pick(c.Cookies(LangCookie), c.Get(fiber.HeaderAcceptLanguage))
	boot := pageBoot{Lang: lang, Langs: ls.list, Text: ls.list[ls.byCode[lang]].text, Orders: a.orders}
	boot.Branding = a.pageBranding(c)
	c.Set(fiber.HeaderContentType, fiber.MIMETextHTMLCharsetUTF8)
	c.Set(fiber.HeaderCacheControl, "no-cache")
	c.Set(fiber.HeaderVary, "Accept-Language, Cookie")
	return c.Send(bootPage(html, boot))
}

// dashboardFile says whether name is one of the dashboard's files (admin.*,
// admin-*.js), which are always the built-in ones: the page directory is the
// waiting page's, not the dashboard's.
func dashboardFile(name string) bool {
	return strings.HasPrefix(name, "admin.") || strings.HasPrefix(name, "admin-")
}

// pageFile reads one file of the waiting page: from Options.PageDir when set and
// the file is there, else the embedded one. name is one path element
// (the routes refuse slashes); it is read anew each time, so an operator's
// edit shows on the next load.
func (a *API) pageFile(name string) ([]byte, error) {
	if a.pageDir != "" && fs.ValidPath(name) && !dashboardFile(name) {
		b, err := fs.ReadFile(os.DirFS(a.pageDir), name)
		if err == nil {
			return b, nil
		}
		if !errors.Is(err, fs.ErrNotExist) {
			return nil, err
		}
	}
	return static.Files.ReadFile(name)
}
