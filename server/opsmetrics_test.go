package main

import (
	"io"
	"net/http"
	"strings"
	"testing"
)

// TestOperatorMetrics checks the series operators alert on: the build,
// the connection limit, pub/sub, HTTP requests by route pattern (bounded:
// made-up paths share one label) and counters that read 0 before their
// first event.
func TestOperatorMetrics(t *testing.T) {
	ts := startServer(t, nil, "rueidis", func(c *config) { c.PublicMetrics = true; c.MaxConns = 1234 })
	for _, p := range []string{"/api/v1/rooms/shop/status", "/no/such/path/1", "/no/such/path/2"} {
		resp, err := noKeepAlive.Get(ts.URL + p)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	// Requests of other methods after them: a label that were a view of
	// the request's buffer would now read as another method, and the
	// scrape would fail on two equal series.
	for i := 0; i < 3; i++ {
		for _, method := range []string{"POST", "DELETE", "PATCH", "GET"} {
			req, _ := http.NewRequest(method, ts.URL+"/api/v1/rooms/shop/leave", nil)
			resp, err := noKeepAlive.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
		}
	}
	body := scrapeMetrics(t, ts.URL)
	for _, want := range []string{
		`waitroom_build_info{goversion="go`,
		`waitroom_max_connections 1234`,
		`waitroom_pubsub_up 1`,
		`waitroom_http_requests_total{code="401",method="GET",route="/api/v1/rooms/:room/status"} 1`,
		`waitroom_http_requests_total{code="404",method="GET",route="unmatched"} 5`,
		`waitroom_http_request_duration_seconds_bucket{route="/api/v1/rooms/:room/status",le="+Inf"} 1`,
		`waitroom_fail_open_total{outcome="used"} 0`,
		`waitroom_redis_state_restored_total{what="tickets"} 0`,
		`waitroom_redis_call_errors_total{op="join"} 0`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics has no %s in\n%s", want, grepLines(body, "waitroom_http_requests_total"))
		}
	}
	if strings.Contains(body, "/no/such/path") {
		t.Error("a path no route matched became a label")
	}
}

func scrapeMetrics(t *testing.T, base string) string {
	t.Helper()
	resp, err := noKeepAlive.Get(base + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("/metrics: %d", resp.StatusCode)
	}
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func grepLines(s, sub string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}
