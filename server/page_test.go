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
	"github.com/waitroom/waitroom/visit"
)

// bootData is the waiting page's boot data, as the page reads it.
type bootData struct {
	Lang  string
	Langs []struct{ Code, Name string }
	Text  json.RawMessage
}

// The page comes in the language Accept-Language asks for, or the one the
// switcher remembered, with that language's words in its boot data.
func TestPageLanguage(t *testing.T) {
	ts := startServer(t, nil, "rueidis", nil)
	bootRe := regexp.MustCompile(`<script type="application/json" id="waitroom-boot">(.*?)</script>`)
	get := func(header, cookie string) (string, bootData) {
		t.Helper()
		req, _ := http.NewRequest("GET", ts.URL+"/?room=drop", nil)
		if header != "" {
			req.Header.Set("Accept-Language", header)
		}
		if cookie != "" {
			req.AddCookie(&http.Cookie{Name: visit.LangCookie, Value: cookie})
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
		var boot bootData
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
