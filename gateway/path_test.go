package gateway

import (
	"errors"
	"net/netip"
	"os"
	"path"
	"strings"
	"testing"
)

func TestNormalizePath(t *testing.T) {
	for _, tc := range []struct{ raw, want string }{
		{"/", "/"},
		{"/checkout/pay", "/checkout/pay"},
		{"/checkout/pay?x=1", "/checkout/pay"},
		{"/checkout/pay?x=%2F", "/checkout/pay"},
		{"/checkout/pay#.css", "/checkout/pay"},
		{"/checkout/pay#a?b", "/checkout/pay"},
		{"/%63heckout/pay", "/checkout/pay"},
		{"/%63HECKOUT/pay", "/cHECKOUT/pay"},
		{"/checkout/static/%2e%2e/pay", "/checkout/pay"},
		{"/checkout/static/%2E%2e/pay", "/checkout/pay"},
		{"/checkout/static/.%2e/pay", "/checkout/pay"},
		{"/checkout/static/../pay", "/checkout/pay"},
		{"/checkout/./pay", "/checkout/pay"},
		{"/checkout/%2e/pay", "/checkout/pay"},
		{"/checkout/pay;.css", "/checkout/pay"},
		{"/checkout/pay%3b.css", "/checkout/pay"},
		{"/checkout/pay%3B.css", "/checkout/pay"},
		{"/checkout;jsessionid=1/pay", "/checkout/pay"},
		{"/checkout/static/..;/pay", "/checkout/pay"},
		{"/checkout/static/%2e%2e;x/pay", "/checkout/pay"},
		{"//checkout/pay", "/checkout/pay"},
		{"///checkout//pay", "/checkout/pay"},
		{"/checkout/", "/checkout/"},
		{"/checkout//", "/checkout/"},
		{"/checkout/.", "/checkout/"},
		{"/checkout/x/..", "/checkout/"},
		{"/checkout/;x", "/checkout/"},
		{"/;x/checkout", "/checkout"},
		{"/a/b/../../c", "/c"},
		{"/..a/.b/...", "/..a/.b/..."},
		{"/caf%C3%A9", "/café"},
		{"/100%25", "/100%"},
		{"/a%20b", "/a b"},
		{"/a+b", "/a+b"},
	} {
		got, err := NormalizePath(tc.raw)
		if err != nil || got != tc.want {
			t.Errorf("NormalizePath(%q) = %q, %v; want %q", tc.raw, got, err, tc.want)
		}
	}
}

func TestNormalizePathRefuses(t *testing.T) {
	for _, raw := range []string{
		"",
		"checkout/pay",
		"*",
		"http://shop.example.com/checkout/pay",
		"/checkout%2Fpay",
		"/checkout%2fpay",
		"/checkout/static%2F..%2Fpay",
		"/%2e%2e/checkout/pay",
		"/../checkout/pay",
		"/checkout/../../pay",
		"/checkout/%2e%2e/%2e%2e/pay",
		"/checkout/pay%00.css",
		"/checkout/pay\x00.css",
		"/checkout/pay%0a",
		"/checkout/pay\t",
		"/checkout/pay%7f",
		"/checkout/pay%",
		"/checkout/pay%4",
		"/checkout/pay%zz",
		"/checkout/pay%%32%66",
		"/checkout\\pay",
		"/checkout/pay%23.css",
		"/x%23/../checkout/pay",
		"/checkout%5cpay",
		"/checkout/static/..%5c..%5cpay",
	} {
		got, err := NormalizePath(raw)
		if !errors.Is(err, ErrAmbiguousPath) {
			t.Errorf("NormalizePath(%q) = %q, %v; want ErrAmbiguousPath", raw, got, err)
		}
	}
}

// TestSpellingsMatch: the spellings of a guarded path that apps decode to
// it are guarded, and none of them is bypassed through the bypass rules
// written for other paths.
func TestSpellingsMatch(t *testing.T) {
	c := mustParse(t)
	for _, raw := range []string{
		"/checkout/pay", "/%63heckout/pay", "/checkout/static/%2e%2e/pay", "/checkout/pay;.css",
		"/checkout/pay%3b.css", "/checkout/pay#.css", "//checkout/pay", "/CHECKOUT/pay", "/Checkout/Pay",
		"/checkout/static/..;/pay",
	} {
		p, err := NormalizePath(raw)
		if err != nil {
			t.Fatalf("%q: %v", raw, err)
		}
		if c.Bypassed(p, netip.Addr{}, func(string) string { return "" }) {
			t.Errorf("%q (%q) is bypassed", raw, p)
		}
		if r := c.Route("GET", "shop.example.com", p); r == nil || r.Room != "drop" {
			t.Errorf("%q (%q) is not guarded", raw, p)
		}
	}
}

// TestMatchCase: routes ignore case (more is guarded), bypass patterns do
// not (less is bypassed).
func TestMatchCase(t *testing.T) {
	c := mustParse(t)
	none := func(string) string { return "" }
	for _, p := range []string{"/CHECKOUT/pay", "/Checkout/x", "/checkout/PAY"} {
		if r := c.Route("GET", "shop.example.com", p); r == nil || r.Room != "drop" {
			t.Errorf("route for %q: %v", p, r)
		}
	}
	if r := c.Route("POST", "shop.example.com", "/API/Cart"); r == nil || r.Room != "drop" {
		t.Errorf("exact route ignoring case: %v", r)
	}
	for _, p := range []string{"/checkout/static/app.js", "/x/site.css"} {
		if !c.Bypassed(p, netip.Addr{}, none) {
			t.Errorf("%q not bypassed", p)
		}
	}
	for _, p := range []string{"/checkout/STATIC/app.js", "/Checkout/static/app.js", "/x/site.CSS"} {
		if c.Bypassed(p, netip.Addr{}, none) {
			t.Errorf("%q bypassed", p)
		}
	}
}

func TestNormalizeHost(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"shop.example.com", "shop.example.com"},
		{"Shop.Example.COM", "shop.example.com"},
		{"shop.example.com.", "shop.example.com"},
		{"shop.example.com.:8443", "shop.example.com:8443"},
		{"SHOP.example.com:80", "shop.example.com:80"},
		{"[::1]:8080", "[::1]:8080"},
		{"[::1]", "[::1]"},
		{"127.0.0.1:3000", "127.0.0.1:3000"},
		{"", ""},
	} {
		if got := NormalizeHost(tc.in); got != tc.want {
			t.Errorf("NormalizeHost(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestServes(t *testing.T) {
	c := mustParse(t)
	for _, tc := range []struct {
		host string
		want bool
	}{
		{"shop.example.com", true},
		{"SHOP.example.com.", true},
		{"shop.example.com.:443", true},
		{"a.tickets.example.com", true},
		{"tickets.example.com", false}, // *.x names subdomains only
		{"127.0.0.1", false},
		{"127.0.0.1:8000", false},
		{"other.example", false},
		{"shop.example.com..", false},
		{"", false},
	} {
		if got := c.Serves(tc.host); got != tc.want {
			t.Errorf("Serves(%q) = %v, want %v", tc.host, got, tc.want)
		}
		// A host route must not match another spelling either.
		if tc.host == "shop.example.com." {
			if r := c.Route("GET", tc.host, "/checkout/pay"); r == nil {
				t.Errorf("trailing dot: no route")
			}
		}
	}
	withHosts, err := Parse("r.yaml", []byte(sample+"hosts: [www.Example.com., '*.cdn.example.com', '127.0.0.1:8000']\n"))
	if err != nil {
		t.Fatal(err)
	}
	for host, want := range map[string]bool{
		"www.example.com": true, "a.cdn.example.com": true, "127.0.0.1:8000": true,
		"127.0.0.1:9000": false, "127.0.0.1": false, "example.com": false,
	} {
		if got := withHosts.Serves(host); got != want {
			t.Errorf("with hosts: Serves(%q) = %v, want %v", host, got, want)
		}
	}
	anyHost, err := Parse("r.yaml", []byte("routes:\n  - {match: '*/checkout/*', room: a}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if !anyHost.Serves("127.0.0.1") || !anyHost.Serves("") {
		t.Error("routes for any host: some host is refused")
	}
	star, err := Parse("r.yaml", []byte(sample+"hosts: ['*']\n"))
	if err != nil || !star.Serves("anything.example") {
		t.Errorf("hosts: ['*'] refuses a host (%v)", err)
	}
	for _, bad := range []string{"hosts: ['a b']\n", "hosts: ['http://x']\n", "hosts: {a: 1}\n"} {
		if _, err := Parse("r.yaml", []byte(sample+bad)); err == nil || !strings.Contains(err.Error(), "r.yaml:") {
			t.Errorf("%q: %v", bad, err)
		}
	}
}

// FuzzNormalizePath: whatever the input, a result is a clean absolute
// path that path.Clean leaves alone (but for a trailing slash), holds
// nothing an app could read as another path, and is stable.
func FuzzNormalizePath(f *testing.F) {
	for _, s := range []string{
		"/", "/checkout/pay", "/%63heckout/pay", "/checkout/static/%2e%2e/pay", "/checkout/pay;.css",
		"/checkout/pay%3b.css", "/checkout/pay#.css", "//checkout/pay", "/a/./b/../c/", "/%2F", "/%00",
		"/..", "/a/..;/b", "/a%", "/a\\b", "/a?b#c", "/caf%C3%A9/%25",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		got, err := NormalizePath(raw)
		if err != nil {
			if !errors.Is(err, ErrAmbiguousPath) {
				t.Fatalf("%q: error %v does not wrap ErrAmbiguousPath", raw, err)
			}
			return
		}
		if !strings.HasPrefix(got, "/") || strings.Contains(got, "//") || strings.ContainsAny(got, ";#\\\x00") {
			t.Fatalf("%q -> %q", raw, got)
		}
		for _, seg := range strings.Split(got[1:], "/") {
			if seg == "." || seg == ".." {
				t.Fatalf("%q -> %q keeps a dot segment", raw, got)
			}
		}
		if c := path.Clean(got); c != strings.TrimSuffix(got, "/") && !(got == "/" && c == "/") {
			t.Fatalf("%q -> %q, but path.Clean gives %q", raw, got, c)
		}
		if !strings.ContainsAny(got, "%?#") {
			if again, err := NormalizePath(got); err != nil || again != got {
				t.Fatalf("%q -> %q -> %q, %v", raw, got, again, err)
			}
		}
		// A raw path with nothing to decode or drop is already what the
		// app sees: it keeps its segments.
		if !strings.ContainsAny(raw, "%;?#") && !strings.Contains(raw, "/.") && !strings.Contains(raw, "//") {
			if got != raw {
				t.Fatalf("plain %q -> %q", raw, got)
			}
		}
	})
}

// TestExampleRoutes: examples/routes.yaml parses, its hosts list serves
// its host, and its loopback routes serve 127.0.0.1 (where the README tries
// it out); other hosts stay refused.
func TestExampleRoutes(t *testing.T) {
	data, err := os.ReadFile("../examples/routes.yaml")
	if err != nil {
		t.Fatal(err)
	}
	c, err := Parse("routes.yaml", data)
	if err != nil {
		t.Fatal(err)
	}
	if !c.Serves("www.example.com") || !c.Serves("127.0.0.1:8000") || c.Serves("other.example.net") ||
		c.Route("GET", "Shop.Example.com.", "/checkout/x") == nil || c.Route("GET", "127.0.0.1:8000", "/checkout/x") == nil {
		t.Errorf("examples/routes.yaml: %+v", c)
	}
}
