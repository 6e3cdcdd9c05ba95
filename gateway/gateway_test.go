package gateway

import (
	"net/netip"
	"strings"
	"testing"
	"time"
)

const sample = `
routes:
  - match: shop.example.com/checkout/*
    room: drop
  - match: shop.example.com/api/cart
    room: drop
    methods: [post, PUT]
    cookie: wr_drop
  - match: "*.tickets.example.com/events/*/buy"
    room: tickets
  - match: "*/lecture/*"
    room: lecture-42
bypass:
  paths: ["/checkout/static/*", "*.css"]
  cidrs: ["10.0.0.0/8", "192.0.2.7"]
  header: {name: X-Waitroom-Bypass, secret: "0123456789abcdef-partner"}
`

func mustParse(t *testing.T) *Config {
	t.Helper()
	c, err := Parse("routes.yaml", []byte(sample))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestRouteMatch(t *testing.T) {
	c := mustParse(t)
	for _, tc := range []struct{ method, host, path, room, cookie string }{
		// A room has one cookie: the one a route of it names.
		{"GET", "shop.example.com", "/checkout/pay", "drop", "wr_drop"},
		{"GET", "Shop.Example.com:8443", "/checkout", "drop", "wr_drop"},
		{"GET", "shop.example.com", "/checkoutx", "", ""},
		{"GET", "other.example.com", "/checkout/pay", "", ""},
		{"POST", "shop.example.com", "/api/cart", "drop", "wr_drop"},
		{"GET", "shop.example.com", "/api/cart", "", ""},
		{"GET", "a.tickets.example.com", "/events/42/buy", "tickets", "wr_session_tickets"},
		{"GET", "tickets.example.com", "/events/42/buy", "", ""},
		{"GET", "a.tickets.example.com", "/events/42/43/buy", "", ""},
		{"GET", "anything", "/lecture/x/y", "lecture-42", "wr_session_lecture-42"},
		{"GET", "anything", "/", "", ""},
	} {
		r := c.Route(tc.method, tc.host, tc.path)
		got, cookie := "", ""
		if r != nil {
			got, cookie = r.Room, r.Cookie
		}
		if got != tc.room || cookie != tc.cookie {
			t.Errorf("%s %s%s: room %q cookie %q, want %q %q", tc.method, tc.host, tc.path, got, cookie, tc.room, tc.cookie)
		}
	}
}

func TestBypass(t *testing.T) {
	c := mustParse(t)
	none := func(string) string { return "" }
	secret := func(h string) string {
		if h == "X-Waitroom-Bypass" {
			return "0123456789abcdef-partner"
		}
		return ""
	}
	wrong := func(string) string { return "0123456789abcdef-partneR" }
	public := netip.MustParseAddr("203.0.113.9")
	for _, tc := range []struct {
		name   string
		path   string
		addr   netip.Addr
		header func(string) string
		want   bool
	}{
		{"static path", "/checkout/static/app.js", public, none, true},
		{"suffix", "/checkout/theme.css", public, none, true},
		{"office", "/checkout/pay", netip.MustParseAddr("10.1.2.3"), none, true},
		{"one address", "/checkout/pay", netip.MustParseAddr("192.0.2.7"), none, true},
		{"mapped v4", "/checkout/pay", netip.MustParseAddr("::ffff:10.1.2.3"), none, true},
		{"secret", "/checkout/pay", public, secret, true},
		{"wrong secret", "/checkout/pay", public, wrong, false},
		{"nothing", "/checkout/pay", public, none, false},
		{"no address", "/checkout/pay", netip.Addr{}, none, false},
	} {
		if got := c.Bypassed(tc.path, tc.addr, tc.header); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestParseErrors(t *testing.T) {
	for _, tc := range []struct{ src, want string }{
		{"routes:\n  - match: shop.example.com\n    room: drop\n", "routes.yaml:2: match"},
		{"routes:\n  - match: a.com/x\n    room: Drop\n", "routes.yaml:2: room"},
		{"routes:\n  - match: a.com/x\n    room: drop\n    method: [GET]\n", "field method not found"},
		{"routes:\n  - match: a.com/x\n    room: drop\n    methods: [\"G T\"]\n", "not an HTTP method"},
		{"bypass:\n  cidrs: [nope]\n", "routes.yaml:2: bypass: cidr"},
		{"bypass:\n  header: {name: X-B, secret: short}\n", "at least 16"},
		{"routez: []\n", "field routez not found"},
		{"bypass:\n  path: [/health]\n", "field path not found in type gateway.fileBypass"},
		{"bypass:\n  header: {name: X-B, secrets: 0123456789abcdef}\n", "field secrets not found"},
		{"routes:\n  - match: a.com/[x\n    room: drop\n", "bad pattern"},
	} {
		_, err := Parse("routes.yaml", []byte(tc.src))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: error %v, want it to contain %q", tc.src, err, tc.want)
		}
	}
}

func TestParseJSONAndInline(t *testing.T) {
	c, err := Parse("routes.json", []byte(`{"routes":[{"match":"*/buy/*","room":"drop","methods":["POST"]}],"bypass":{"paths":["/buy/health"]}}`))
	if err != nil {
		t.Fatal(err)
	}
	if r := c.Route("POST", "x", "/buy/1"); r == nil || r.Room != "drop" {
		t.Fatalf("json route: %+v", r)
	}
	r, err := ParseRoute("{match: shop.example.com/checkout/*, room: drop, cookie: wr_drop}")
	if err != nil {
		t.Fatal(err)
	}
	if r.Host != "shop.example.com" || r.Path != "/checkout/*" || r.Cookie != "wr_drop" {
		t.Fatalf("inline: %+v", r)
	}
	if _, err := ParseRoute("shop.example.com/x"); err == nil {
		t.Fatal("a bare string is not a route")
	}
}

func TestSession(t *testing.T) {
	g := NewSigner([]byte("0123456789abcdef0123"))
	s := Session{Room: "drop", Visitor: "v_1-x", NotBefore: time.UnixMilli(1700000000123),
		ExpiresAt: time.UnixMilli(1700000300123), SlidAt: time.UnixMilli(1700000000200)}
	v := g.Sign(s)
	got, err := g.Parse(v)
	if err != nil || got != s {
		t.Fatalf("round trip: %+v %v", got, err)
	}
	other := NewSigner([]byte("0123456789abcdef0124"))
	if _, err := other.Parse(v); err == nil {
		t.Fatal("another secret's session passed")
	}
	for _, bad := range []string{"", "g1", v + "x", strings.Replace(v, "drop", "dros", 1), "g1.drop.v.1.0.0." + strings.Split(v, ".")[6]} {
		if _, err := g.Parse(bad); err == nil {
			t.Errorf("%q passed", bad)
		}
	}
}

func FuzzSessionParse(f *testing.F) {
	g := NewSigner([]byte("0123456789abcdef0123"))
	f.Add(g.Sign(Session{Room: "a", Visitor: "b", NotBefore: time.UnixMilli(1), ExpiresAt: time.UnixMilli(2)}))
	f.Add("g1.a.b.1.2.3.xx")
	f.Fuzz(func(t *testing.T, v string) {
		s, err := g.Parse(v)
		if err == nil && g.Sign(s) != v {
			t.Fatalf("%q parsed but signs as %q", v, g.Sign(s))
		}
	})
}

func TestCache(t *testing.T) {
	c := NewCache(16)
	now := time.Unix(1000, 0)
	c.Revoke("a", now.Add(time.Minute))
	if !c.Revoked("a") || c.Revoked("b") {
		t.Fatal("revoked")
	}
	if !c.ClaimSlide("b", now, 30*time.Second) || c.ClaimSlide("b", now.Add(time.Second), 30*time.Second) {
		t.Fatal("a slide is claimed once per interval")
	}
	if !c.ClaimSlide("b", now.Add(31*time.Second), 30*time.Second) {
		t.Fatal("a slide after the interval")
	}
	c.Prune(now.Add(2*time.Minute), time.Minute)
	if c.Revoked("a") || c.Len() != 0 {
		t.Fatal("prune")
	}
	for i := range 100 {
		c.Revoke(string(rune('A'+i)), now.Add(time.Duration(i)*time.Second))
	}
	if c.Len() > 16 {
		t.Fatalf("bounded: %d", c.Len())
	}
	if !c.Revoked(string(rune('A' + 99))) {
		t.Fatal("the latest revocation was evicted")
	}
}

func TestReturnURL(t *testing.T) {
	c := mustParse(t)
	for _, tc := range []struct{ raw, host, want string }{
		{"/checkout/pay?x=1", "shop.example.com", "/checkout/pay?x=1"},
		{"https://shop.example.com/checkout", "other.example.com", "https://shop.example.com/checkout"},
		{"http://127.0.0.1:9000/x", "127.0.0.1:9000", "http://127.0.0.1:9000/x"},
		{"https://a.tickets.example.com/events/1/buy", "x", "https://a.tickets.example.com/events/1/buy"},
		{"https://evil.example/x", "shop.example.com", ""},
		{"//evil.example/x", "shop.example.com", ""},
		{"/\\evil.example", "shop.example.com", ""},
		{"javascript:alert(1)", "shop.example.com", ""},
		{"https://user@shop.example.com/", "shop.example.com", ""},
		{"checkout", "shop.example.com", ""},
		{"", "shop.example.com", ""},
	} {
		got, err := c.ReturnURL(tc.raw, tc.host)
		if tc.want == "" {
			if err == nil {
				t.Errorf("%q on %s: accepted as %q", tc.raw, tc.host, got)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("%q on %s: %q %v, want %q", tc.raw, tc.host, got, err, tc.want)
		}
	}
}
