package main

import (
	"io"
	"net"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"
)

// get fetches u with the admin key (which no probe path needs) and
// returns the status and body.
func get(t *testing.T, method, u string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(method, u, nil)
	req.Header.Set("Authorization", "Bearer "+testAdminKey)
	resp, err := noKeepAlive.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, u, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// listenerURL is the base URL of ts's operations listener of flag.
func (ts *testServer) listenerURL(t *testing.T, flag string) string {
	t.Helper()
	for _, o := range ts.listeners {
		if o.name == flag {
			return "http://" + o.ln.Addr().String()
		}
	}
	t.Fatalf("no %s listener", flag)
	return ""
}

// TestOpsListener: with -upstream, the main listener's root is the app's
// (its /healthz is the app's answer) and waitroom's own endpoints sit under
// /waitroom/; -ops-addr serves /healthz, /readyz and /metrics on an address
// of its own, JSON errors for anything else, and stops with the server.
func TestOpsListener(t *testing.T) {
	up := newUpstreamApp(t)
	ts := startServer(t, nil, "rueidis", func(c *config) {
		withAdmin(c)
		c.Upstream = up.URL
		c.OpsAddr = "127.0.0.1:0"
	})
	ops := ts.listenerURL(t, "-ops-addr")

	for path, want := range map[string]string{"/healthz": `{"status":"ok"}`, "/readyz": `{"status":"ready"}`} {
		if code, body := get(t, "GET", ops+path); code != 200 || body != want {
			t.Errorf("ops %s: %d %s, want 200 %s", path, code, body, want)
		}
	}
	if code, body := get(t, "GET", ops+"/metrics"); code != 200 || !strings.Contains(body, "waitroom_build_info") {
		t.Errorf("ops /metrics: %d", code)
	}
	if code, _ := get(t, "HEAD", ops+"/healthz"); code != 200 {
		t.Errorf("ops HEAD /healthz: %d", code)
	}
	for _, tc := range []struct{ method, path, code string }{
		{"GET", "/api/v1/openapi.json", "not_found"},
		{"GET", "/waitroom/healthz", "not_found"},
		{"POST", "/healthz", "method_not_allowed"},
		{"DELETE", "/metrics", "method_not_allowed"},
	} {
		code, body := get(t, tc.method, ops+tc.path)
		if !strings.Contains(body, `"code":"`+tc.code+`"`) || (code != 404 && code != 405) {
			t.Errorf("ops %s %s: %d %s, want the JSON error %s", tc.method, tc.path, code, body, tc.code)
		}
	}

	// The main listener: the root is the app's, /healthz included, as
	// docs/gateway.md says; waitroom's own answers are under /waitroom/.
	if code, body := get(t, "GET", ts.URL+"/healthz"); code != 200 || body != "page /healthz" {
		t.Errorf("main /healthz: %d %q, want the app's answer", code, body)
	}
	if code, body := get(t, "GET", ts.URL+"/waitroom/healthz"); code != 200 || body != `{"status":"ok"}` {
		t.Errorf("main /waitroom/healthz: %d %s", code, body)
	}
	if code, body := get(t, "GET", ts.URL+"/waitroom/readyz"); code != 200 || body != `{"status":"ready"}` {
		t.Errorf("main /waitroom/readyz: %d %s", code, body)
	}
	if code, _ := get(t, "GET", ts.URL+"/waitroom/metrics"); code != 404 {
		t.Errorf("main /waitroom/metrics with -ops-addr: %d, want 404 (the metrics are on the operations listener)", code)
	}

	// Stopped with the server, after the main listener.
	ts.stop()
	err := <-ts.done
	ts.done <- err // for the cleanup
	if err != nil {
		t.Fatal(err)
	}
	if c, err := net.DialTimeout("tcp", strings.TrimPrefix(ops, "http://"), time.Second); err == nil {
		c.Close()
		t.Error("the operations listener still accepts after the server stopped")
	}
}

var bannerURL = regexp.MustCompile(`http://[^\s,)]+`)

// TestBannerTrue: every address the start-up banner prints answers what it
// says, in each mode: plain, and -upstream with -ops-addr (where the
// waiting page, the dashboard and the keys are under /waitroom/ and the
// probes on the operations listener).
func TestBannerTrue(t *testing.T) {
	up := newUpstreamApp(t)
	for _, tc := range []struct {
		name   string
		mutate func(*config)
		want   []string // what the banner must say (MAIN: the main listener, OPS: -ops-addr's)
	}{
		{"plain", withAdmin, []string{
			"waitroom listening on MAIN/?room=demo ",
			"health: MAIN/healthz and MAIN/readyz",
			"metrics: MAIN/metrics (with an admin key)",
			"entry token keys (JWKS): MAIN/.well-known/jwks.json",
			"admin dashboard: MAIN/admin",
		}},
		{"upstream", func(c *config) { withAdmin(c); c.Upstream = up.URL; c.OpsAddr = "127.0.0.1:0" }, []string{
			"waitroom listening on MAIN/waitroom/?room=demo ",
			"gateway: every path outside /waitroom/ goes to " + up.URL,
			"operations: OPS/healthz, /readyz and /metrics",
			"entry token keys (JWKS): MAIN/waitroom/.well-known/jwks.json",
			"admin dashboard: MAIN/waitroom/admin",
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ts := startServer(t, nil, "rueidis", tc.mutate)
			main, err := net.ResolveTCPAddr("tcp", strings.TrimPrefix(ts.URL, "http://"))
			if err != nil {
				t.Fatal(err)
			}
			var b strings.Builder
			ts.writeBanner(&b, main, ts.listeners, "")
			banner := b.String()
			ops := ""
			if tc.name == "upstream" {
				ops = ts.listenerURL(t, "-ops-addr")
			}
			for _, want := range tc.want {
				want = strings.NewReplacer("MAIN", "http://"+main.String(), "OPS", ops).Replace(want)
				if !strings.Contains(banner, want) {
					t.Errorf("banner has no %q:\n%s", want, banner)
				}
			}
			// Each address answers on the running server, not the app.
			for _, u := range bannerURL.FindAllString(banner, -1) {
				if u == up.URL {
					continue
				}
				code, body := get(t, "GET", u)
				if code != 200 || strings.HasPrefix(body, "page /") {
					t.Errorf("banner address %s: %d %.60q", u, code, body)
				}
			}
		})
	}
}
