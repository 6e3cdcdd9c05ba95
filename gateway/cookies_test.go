package gateway

import (
	"strings"
	"testing"
)

// TestNameCookies: each room has one session cookie of its own, derived
// from the room unless one of its routes names it; a room with two names
// or a name shared by two rooms is refused with the line at fault.
func TestNameCookies(t *testing.T) {
	c, err := Parse("routes.yaml", []byte(`
routes:
  - {match: "*/a/*", room: ra}
  - {match: "*/b/*", room: rb}
  - {match: "*/c/*", room: rc}
  - {match: "*/c2/*", room: rc, cookie: shop_c}
  - {match: "*/a2/*", room: ra}
`))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"/a/x": "wr_session_ra", "/a2/x": "wr_session_ra", "/b/x": "wr_session_rb", "/c/x": "shop_c", "/c2/x": "shop_c"}
	for p, name := range want {
		if r := c.Route("GET", "h", p); r == nil || r.Cookie != name {
			t.Errorf("%s: %+v, want cookie %s", p, r, name)
		}
	}

	// Routes added later (inline) join their room's name.
	for _, src := range []string{"{match: '*/c3/*', room: rc}", "{match: '*/d/*', room: rd, cookie: shop_d}", "{match: '*/a3/*', room: ra}"} {
		r, err := ParseRoute(src)
		if err != nil {
			t.Fatal(err)
		}
		c.Routes = append(c.Routes, r)
	}
	if err := c.NameCookies(); err != nil {
		t.Fatal(err)
	}
	for p, name := range map[string]string{"/c3/x": "shop_c", "/d/x": "shop_d", "/a3/x": "wr_session_ra", "/a/x": "wr_session_ra"} {
		if r := c.Route("GET", "h", p); r == nil || r.Cookie != name {
			t.Errorf("%s after adding routes: %+v, want cookie %s", p, r, name)
		}
	}
	r, err := ParseRoute("{match: '*/e/*', room: rb, cookie: other}")
	if err != nil {
		t.Fatal(err)
	}
	c.Routes = append(c.Routes, r)
	if err := c.NameCookies(); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"/b/x", "/e/x"} {
		if r := c.Route("GET", "h", p); r == nil || r.Cookie != "other" {
			t.Errorf("%s once a route names the room's cookie: %+v", p, r)
		}
	}

	for _, tc := range []struct{ src, want string }{
		{"routes:\n  - {match: '*/x/*', room: one, cookie: a}\n  - {match: '*/y/*', room: one, cookie: b}\n", `routes.yaml:3: cookie "b": room "one" already has the session cookie "a"`},
		{"routes:\n  - {match: '*/x/*', room: one, cookie: same}\n  - {match: '*/y/*', room: two, cookie: same}\n", `routes.yaml:3: cookie "same": already the session cookie of room "one"`},
		{"routes:\n  - {match: '*/x/*', room: one, cookie: wr_session_two}\n  - {match: '*/y/*', room: two}\n", `routes.yaml:3: cookie "wr_session_two"`},
	} {
		if _, err := Parse("routes.yaml", []byte(tc.src)); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: %v, want %q", tc.src, err, tc.want)
		}
	}
}
