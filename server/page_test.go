package main

import (
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/waitroom/waitroom/static"
)

func TestLanguagePick(t *testing.T) {
	ls := mustLanguages()
	for _, tc := range []struct{ cookie, header, want string }{
		{"", "", "en"},
		{"", "de-DE,de;q=0.9,en;q=0.8", "de"},
		{"", "fr-CH, fr;q=0.9, en;q=0.8", "fr"},
		{"", "en;q=0.5, ja;q=0.9", "ja"},
		{"", "zh-CN", "zh"},
		{"", "zh-Hans-CN,zh;q=0.9", "zh"},
		{"", "pt-BR", "pt"},
		{"", "ES", "es"},
		{"", "nl, sv;q=0.8", "en"},       // none supported
		{"", "nl, de;q=0.1", "de"},       // the one supported, however low
		{"", "de;q=0, fr;q=0.2", "fr"},   // q=0 is "not this one"
		{"", "de;q=abc, fr;q=0.2", "fr"}, // a bad weight drops the tag
		{"ja", "de-DE", "ja"},            // the switcher's choice wins
		{"xx", "de-DE", "de"},            // an unknown choice does not
		{"", strings.Repeat("x,", 5000), "en"},
	} {
		if got := ls.pick(tc.cookie, tc.header); got != tc.want {
			t.Errorf("pick(%q, %q) = %q, want %q", tc.cookie, tc.header, got, tc.want)
		}
	}
}

// Chinese in Traditional script is not served the Simplified page (zh):
// without a Traditional one it gets the fallback; the Simplified tags, and
// Chinese with no script or region, get zh.
func TestLanguageScript(t *testing.T) {
	ls := mustLanguages()
	for header, want := range map[string]string{
		"zh-TW": "en", "zh-Hant": "en", "zh-HK": "en", "zh-MO": "en", "zh-Hant-CN": "en",
		// Asked for Simplified too, if less; or for another language.
		"zh-TW,zh;q=0.9": "zh", "zh-TW,ja;q=0.5": "ja",
		"zh-CN": "zh", "zh-Hans": "zh", "zh": "zh", "zh-SG": "zh", "zh-Hans-TW": "zh", "cmn": "zh",
		// Related languages are not the same one.
		"gsw": "en", "gl": "en", "yue": "en",
		"pt-PT": "pt", "es-419": "es", "en-GB": "en", "de-Latf": "en",
	} {
		if got := ls.pick("", header); got != want {
			t.Errorf("pick(%q) = %q, want %q", header, got, want)
		}
	}
	if got := ls.pick("zh-TW", "de"); got != "de" {
		t.Errorf("a remembered zh-TW with no Traditional page: got %q, want de", got)
	}
}

// With a Traditional page, the Traditional tags get it and the Simplified
// ones still get zh.
func TestLanguageTraditional(t *testing.T) {
	ls, err := newLanguages([]translation{{Code: "zh"}, {Code: "zh-Hant"}, {Code: "en"}})
	if err != nil {
		t.Fatal(err)
	}
	if ls.list[0].Code != "en" {
		t.Errorf("first language %q, want the fallback en", ls.list[0].Code)
	}
	for header, want := range map[string]string{
		"zh-TW": "zh-Hant", "zh-Hant": "zh-Hant", "zh-HK": "zh-Hant", "zh-Hant-HK": "zh-Hant",
		"zh-CN": "zh", "zh-Hans": "zh", "zh": "zh", "ja": "en",
	} {
		if got := ls.pick("", header); got != want {
			t.Errorf("pick(%q) = %q, want %q", header, got, want)
		}
	}
	if _, err := newLanguages([]translation{{Code: "en"}, {Code: "not a tag"}}); err == nil {
		t.Error("a translation named by no language tag was taken")
	}
}

// Weights order the entries, ties keep the header's order, and anything
// that is not an Accept-Language header asks for nothing.
func TestLanguageAcceptHeader(t *testing.T) {
	ls := mustLanguages()
	for _, tc := range []struct{ header, want string }{
		{"fr;q=0.3, de;q=0.7, ja;q=0.5", "de"},
		{"fr;q=0.5, de;q=0.5", "fr"},
		{"de;q=0.5, fr;q=0.5", "de"},
		{"ja;q=0.001, nl", "ja"},
		{"de;q=1.5, fr;q=0.1", "fr"}, // a weight over 1 is not one
		{"de;q=-1, fr;q=0.1", "fr"},
		{"*", "en"},
		{"*;q=0.5, pt", "pt"},
		{";;;,,,", "en"},
		{"\x00\xff garbage", "en"},
		{"de-DE-u-co-phonebk", "de"},
		{"12345678901234567890", "en"},
		{strings.Repeat("nl,", 100) + "de", "en"}, // past the entries looked at
	} {
		if got := ls.pick("", tc.header); got != tc.want {
			t.Errorf("pick(%q) = %q, want %q", tc.header, got, tc.want)
		}
	}
}

func TestBootPage(t *testing.T) {
	boot := pageBoot{Lang: "de", Text: json.RawMessage(`{"a":"\u003c/script\u003e"}`)}
	for _, tc := range []struct{ in, wantPrefix string }{
		{`<!doctype html><html lang="en"><head><title>x</title></head><body></body></html>`, `<!doctype html><html lang="de"><head><title>x</title><script type="application/json" id="waitroom-boot">`},
		{`<html class="x"><body>hi</body></html>`, `<html lang="de" class="x">` + "\n" + `<script type="application/json" id="waitroom-boot">`},
		{`<p>bare</p>`, `<script type="application/json" id="waitroom-boot">`},
		{`<HTML LANG='fr'><HEAD></HEAD>`, `<HTML lang="de"><HEAD><script type="application/json" id="waitroom-boot">`},
	} {
		got := string(bootPage([]byte(tc.in), boot))
		if !strings.HasPrefix(got, tc.wantPrefix) {
			t.Errorf("bootPage(%q) =\n%s\nwant prefix\n%s", tc.in, got, tc.wantPrefix)
		}
		if strings.Count(got, "</script>") != 1 {
			t.Errorf("bootPage(%q): the text closed the script early:\n%s", tc.in, got)
		}
	}
}

// The page comes in the language Accept-Language asks for, or the one the
// switcher remembered, with that language's words in its boot data.
func TestPageLanguage(t *testing.T) {
	ts := startServer(t, nil, "rueidis", nil)
	bootRe := regexp.MustCompile(`<script type="application/json" id="waitroom-boot">(.*?)</script>`)
	get := func(header, cookie string) (string, pageBoot) {
		t.Helper()
		req, _ := http.NewRequest("GET", ts.URL+"/?room=drop", nil)
		if header != "" {
			req.Header.Set("Accept-Language", header)
		}
		if cookie != "" {
			req.AddCookie(&http.Cookie{Name: langCookie, Value: cookie})
		}
		resp, err := noKeepAlive.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != 200 || !strings.Contains(resp.Header.Get("Vary"), "Accept-Language") {
			t.Fatalf("page: %d %v", resp.StatusCode, resp.Header)
		}
		m := bootRe.FindSubmatch(b)
		if m == nil {
			t.Fatalf("no boot data in the page:\n%s", b)
		}
		var boot pageBoot
		if err := json.Unmarshal(m[1], &boot); err != nil {
			t.Fatal(err)
		}
		return string(b), boot
	}
	for header, want := range map[string]string{"": "en", "de-AT,de;q=0.9": "de", "ja-JP": "ja", "zh-CN,zh;q=0.9": "zh"} {
		html, boot := get(header, "")
		var words map[string]string
		_ = json.Unmarshal(boot.Text, &words)
		if boot.Lang != want || !strings.Contains(html, `<html lang="`+want+`">`) || len(boot.Langs) != 7 || words["brand"] == "" {
			t.Errorf("Accept-Language %q: lang %q, %d languages, brand %q", header, boot.Lang, len(boot.Langs), words["brand"])
		}
	}
	if _, boot := get("de", "fr"); boot.Lang != "fr" {
		t.Errorf("remembered fr, Accept-Language de: got %q", boot.Lang)
	}
	// Each language's file is an asset the switcher fetches.
	resp, err := noKeepAlive.Get(ts.URL + "/assets/i18n-pt.json")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") {
		t.Fatalf("i18n-pt.json: %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
}

// With -page-dir the operator's index.html and assets are served, with the
// boot data put in; what the directory lacks is the built-in file, and the
// dashboard and waitroom.js stay ours.
func TestPageDir(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("index.html", `<!doctype html><html><head><link rel="stylesheet" href="assets/shop.css"></head><body>Shop queue<script src="waitroom.js"></script></body></html>`)
	write("shop.css", "body{color:#123}")
	write("admin.js", "alert('not the dashboard')")
	ts := startServer(t, nil, "rueidis", func(c *config) { c.PageDir = dir })
	get := func(path string) (int, string, string) {
		t.Helper()
		req, _ := http.NewRequest("GET", ts.URL+path, nil)
		req.Header.Set("Accept-Language", "es-MX")
		resp, err := noKeepAlive.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, resp.Header.Get("Content-Type"), string(b)
	}
	if code, _, body := get("/?room=drop"); code != 200 || !strings.Contains(body, "Shop queue") ||
		!strings.Contains(body, `<html lang="es">`) || !strings.Contains(body, `id="waitroom-boot"`) {
		t.Fatalf("page: %d %s", code, body)
	}
	if code, ctype, body := get("/assets/shop.css"); code != 200 || body != "body{color:#123}" || !strings.HasPrefix(ctype, "text/css") {
		t.Fatalf("own asset: %d %s %q", code, ctype, body)
	}
	builtin, _ := staticBytes("style.css")
	if code, _, body := get("/assets/style.css"); code != 200 || body != builtin {
		t.Fatalf("built-in asset: %d", code)
	}
	if code, _, body := get("/assets/admin.js"); code != 200 || strings.Contains(body, "not the dashboard") {
		t.Fatalf("dashboard script from the page directory: %d %q", code, body[:min(len(body), 60)])
	}
	if code, _, body := get("/waitroom.js"); code != 200 || !strings.Contains(body, "Waitroom") {
		t.Fatalf("waitroom.js: %d", code)
	}
	for _, p := range []string{"/assets/..%2Fetc%2Fpasswd", "/assets/.hidden.css", "/assets/missing.css"} {
		if code, _, _ := get(p); code != 404 {
			t.Errorf("%s: %d, want 404", p, code)
		}
	}
	// A directory without index.html is refused at start.
	cfg, err := parseConfig([]string{"-page-dir", t.TempDir()}, func(string) string { return "" })
	if err == nil {
		err = cfg.validate()
	}
	if err == nil || !strings.Contains(err.Error(), "index.html") {
		t.Fatalf("empty -page-dir: %v", err)
	}
}

func staticBytes(name string) (string, error) {
	b, err := static.Files.ReadFile(name)
	return string(b), err
}
