package gateway

import (
	"context"
	"encoding/json"
	"net/http"
	"net/netip"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/valyala/fasthttp"
)

// vectors is testdata/vectors.json, which the edge connector's tests
// (clients/edge/test) read too: both gateways decide alike on it.
type vectors struct {
	Routes json.RawMessage `json:"routes"`
	Cases  []struct {
		Name    string            `json:"name"`
		Method  string            `json:"method"`
		Host    string            `json:"host"`
		Target  string            `json:"target"`
		Client  string            `json:"client"`
		Headers map[string]string `json:"headers"`
		Want    string            `json:"want"`
		Room    string            `json:"room"`
	} `json:"cases"`
	InvalidRoutes []struct {
		Name string          `json:"name"`
		Doc  json.RawMessage `json:"doc"`
	} `json:"invalidRoutes"`
	Paths []struct {
		Raw   string `json:"raw"`
		Want  string `json:"want"`
		Error bool   `json:"error"`
	} `json:"paths"`
}

func readVectors(t *testing.T) vectors {
	t.Helper()
	data, err := os.ReadFile("testdata/vectors.json")
	if err != nil {
		t.Fatal(err)
	}
	var v vectors
	if err := json.Unmarshal(data, &v); err != nil {
		t.Fatal(err)
	}
	return v
}

// TestVectors runs the shared cases through the built-in proxy's decision
// (a request as the client sent it, from a peer that is not a trusted
// proxy, without a session): what passes, what a room guards, what is
// refused; and checks that the client's X-Waitroom-* headers, however
// spelt, never reach the app.
func TestVectors(t *testing.T) {
	v := readVectors(t)
	cfg, err := Parse("vectors.json", v.Routes)
	if err != nil {
		t.Fatal(err)
	}
	g, err := New(Deps{Routes: cfg, Signer: NewSigner([]byte("test secret")), Store: &fakeStore{slidTo: time.Now().Add(time.Hour)},
		Rooms: fakeRooms{}, Visitors: fakeVisitors{}, Proxies: fakeProxies{}, API: fakeAPI{}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(v.Cases) < 40 {
		t.Fatalf("%d cases: the file was cut", len(v.Cases))
	}
	for _, tc := range v.Cases {
		t.Run(tc.Name, func(t *testing.T) {
			var h fasthttp.RequestHeader
			for k, val := range tc.Headers {
				h.Set(k, val)
			}
			client := netip.MustParseAddr("203.0.113.9")
			if tc.Client != "" {
				client = netip.MustParseAddr(tc.Client)
			}
			o := original{method: cmpOr(tc.Method, "GET"), proto: "https", host: tc.Host, uri: tc.Target, client: client,
				header: func(k string) string { return string(h.Peek(k)) },
				cookie: func(string) string { return "" }}
			o.setPath()
			vd := g.decide(context.Background(), &o)
			got := ""
			switch {
			case vd.pass && vd.room == "":
				got = "pass"
			case vd.pass:
				t.Fatalf("passed into room %q without a session", vd.room)
			case vd.errorCode == "invalid_path" || vd.errorCode == "unknown_host":
				got = vd.errorCode
			case vd.status == http.StatusFound:
				got = "guard"
			default:
				t.Fatalf("status %d %q", vd.status, vd.errorCode)
			}
			if got != tc.Want || (got == "guard" && vd.room != tc.Room) {
				t.Errorf("%s %s%s: %s (room %q), want %s (room %q)", o.method, tc.Host, tc.Target, got, vd.room, tc.Want, tc.Room)
			}
			stripGatewayHeaders(&h)
			for k := range h.All() {
				if name := strings.ToLower(strings.ReplaceAll(string(k), "_", "-")); strings.HasPrefix(name, "x-waitroom-") && name != "x-waitroom-bypass" {
					t.Errorf("the client's %s would reach the app", k)
				}
			}
		})
	}
}

// TestVectorPaths checks NormalizePath against the shared paths.
func TestVectorPaths(t *testing.T) {
	for _, tc := range readVectors(t).Paths {
		got, err := NormalizePath(tc.Raw)
		switch {
		case tc.Error && err == nil:
			t.Errorf("%q: %q, want an error", tc.Raw, got)
		case !tc.Error && (err != nil || got != tc.Want):
			t.Errorf("%q: %q, %v; want %q", tc.Raw, got, err, tc.Want)
		}
	}
}

// TestVectorInvalidRoutes checks that Parse refuses each of the shared
// routes files that every gateway must refuse.
func TestVectorInvalidRoutes(t *testing.T) {
	for _, tc := range readVectors(t).InvalidRoutes {
		if _, err := Parse("vectors.json", tc.Doc); err == nil {
			t.Errorf("%s: %s was taken", tc.Name, tc.Doc)
		}
	}
}
