package main

import (
	"io"
	"strings"
	"testing"
)

// TestNoDemo: without -demo the order route is absent (404 as any unknown
// route, even with a good entry token), /metrics names none of the demo's
// series and the waiting page is not told to offer an order; with it, all
// three are there.
func TestNoDemo(t *testing.T) {
	series := []string{"waitroom_orders_total", "waitroom_db_slots_in_use", "waitroom_db_slots_peak", "waitroom_db_slots "}
	for _, on := range []bool{false, true} {
		ts := startServer(t, nil, "rueidis", func(c *config) { c.Demo = on; c.PublicMetrics = true })
		v := newVisitor(t, ts.URL)
		v.join("shop")
		st := ts.admitUntil(t, v, "shop")
		r := v.do("POST", "/api/v1/rooms/shop/orders", "", "Authorization", "Bearer "+st.str("token"))
		switch {
		case !on && (r.Code != 404 || r.errCode() != "not_found"):
			t.Fatalf("without -demo: %d %s, want 404 not_found", r.Code, r.Raw)
		case on && r.Code != 201 && r.Code != 425:
			t.Fatalf("with -demo: %d %s", r.Code, r.Raw)
		}
		resp, err := noKeepAlive.Get(ts.URL + "/?room=shop")
		if err != nil {
			t.Fatal(err)
		}
		page, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || strings.Contains(string(page), `"orders":true`) != on {
			t.Errorf("demo %v: the page's boot data: %d, has \"orders\":true: %v", on, resp.StatusCode, !on)
		}
		body := scrapeMetrics(t, ts.URL)
		for _, name := range series {
			if strings.Contains(body, name) != on {
				t.Errorf("demo %v: /metrics has %q: %v", on, name, !on)
			}
		}
	}
}
