package limit

import (
	"net/netip"
	"testing"
)

func TestClient(t *testing.T) {
	ps, err := ParseProxies("10.0.0.0/8, 192.168.1.5 ,fd00::/8")
	if err != nil {
		t.Fatal(err)
	}
	a := netip.MustParseAddr
	cases := []struct {
		name, peer, xff, want string
	}{
		{"direct, header ignored", "203.0.113.9", "1.2.3.4", "203.0.113.9"},
		{"trusted proxy", "10.1.2.3", "198.51.100.7", "198.51.100.7"},
		{"single trusted address", "192.168.1.5", "198.51.100.7", "198.51.100.7"},
		{"client's own header is not believed", "10.1.2.3", "6.6.6.6, 198.51.100.7", "198.51.100.7"},
		{"chain of trusted proxies", "10.1.2.3", "198.51.100.7, 10.9.9.9, 10.8.8.8", "198.51.100.7"},
		{"all hops trusted", "10.1.2.3", "10.9.9.9", "10.9.9.9"},
		{"garbage hop", "10.1.2.3", "198.51.100.7, nonsense", "10.1.2.3"},
		{"no header", "10.1.2.3", "", "10.1.2.3"},
		{"v4-mapped peer", "::ffff:10.1.2.3", "198.51.100.7", "198.51.100.7"},
		{"ipv6 proxy", "fd00::1", "2001:db8::1", "2001:db8::1"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := ps.Client(a(tc.peer), tc.xff); got != a(tc.want) {
				t.Fatalf("got %v, want %s", got, tc.want)
			}
		})
	}
	if got := Proxies(nil).Client(a("10.1.2.3"), "198.51.100.7"); got != a("10.1.2.3") {
		t.Fatalf("no proxies: %v", got)
	}
	for _, bad := range []string{"10.0.0.0/33", "nope", "10.0.0.0/8,x"} {
		if _, err := ParseProxies(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

func TestKey(t *testing.T) {
	if k1, k2 := Key(netip.MustParseAddr("2001:db8::1")), Key(netip.MustParseAddr("2001:db8::ffff:1")); k1 != k2 || k1 != "2001:db8::/64" {
		t.Fatalf("one /64 is one key: %s %s", k1, k2)
	}
	if k := Key(netip.MustParseAddr("::ffff:198.51.100.7")); k != "198.51.100.7" {
		t.Fatalf("v4-mapped: %s", k)
	}
}
