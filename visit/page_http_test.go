package visit

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gofiber/fiber/v2"
)

// The waiting page comes in the visitor's language with the room's
// branding, its footer cleaned, behind the page headers.
func TestPageServed(t *testing.T) {
	headers := func(c *fiber.Ctx) error {
		c.Set("X-Page-Policy", "on")
		return c.Next()
	}
	f := newFixture(t, &Options{PageHeaders: headers})
	r := f.do("GET", "/?room=shop", "", "Accept-Language", "de-AT,de;q=0.9")
	if r.Code != 200 || r.Header.Get("X-Page-Policy") != "on" || !strings.Contains(r.Raw, `<html lang="de"`) {
		t.Fatalf("page: %d %v", r.Code, r.Header)
	}
	if !strings.Contains(r.Raw, `"title":"Shop"`) || strings.Contains(r.Raw, "<script>x") {
		t.Fatalf("branding in the boot data: %s", r.Raw)
	}
	b := f.do("GET", "/api/v1/rooms/shop/branding", "")
	if b.Code != 200 || b.str("title") != "Shop" || b.str("footer") != "<b>hi</b>" {
		t.Fatalf("branding: %d %s", b.Code, b.Raw)
	}
	if r := f.do("GET", "/assets/style.css", ""); r.Code != 200 || !strings.HasPrefix(r.Header.Get("Content-Type"), "text/css") {
		t.Fatalf("asset: %d %v", r.Code, r.Header)
	}
	for _, p := range []string{"/assets/.hidden.css", "/assets/missing.css", "/assets/x.exe"} {
		if r := f.do("GET", p, ""); r.Code != 404 || r.errCode() != "not_found" {
			t.Errorf("%s: %d %s", p, r.Code, r.Raw)
		}
	}
}

// An operator's page directory is served instead of the embedded page,
// but never for the dashboard's files nor waitroom.js.
func TestPageDirServed(t *testing.T) {
	dir := t.TempDir()
	for name, body := range map[string]string{"index.html": "<html><head></head><body>Own page</body></html>", "admin.js": "not the dashboard", "waitroom.js": "not ours"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	f := newFixture(t, &Options{PageDir: dir})
	if r := f.do("GET", "/", ""); r.Code != 200 || !strings.Contains(r.Raw, "Own page") || !strings.Contains(r.Raw, `id="waitroom-boot"`) {
		t.Fatalf("own page: %d %s", r.Code, r.Raw)
	}
	if r := f.do("GET", "/assets/admin.js", ""); r.Code != 200 || strings.Contains(r.Raw, "not the dashboard") {
		t.Fatalf("dashboard script: %d", r.Code)
	}
	if r := f.do("GET", "/waitroom.js", ""); r.Code != 200 || strings.Contains(r.Raw, "not ours") {
		t.Fatalf("waitroom.js: %d", r.Code)
	}
}
