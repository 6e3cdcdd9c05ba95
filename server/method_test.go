package main

import "testing"

// TestMethodThroughTheAPI: the method is a room setting; a rejecting room
// answers a join with closed and the operator's message, a passthrough
// room with a token.
func TestMethodThroughTheAPI(t *testing.T) {
	eachServer(t, withAdmin, func(t *testing.T, ts *testServer) {
		op := newVisitor(t, ts.URL)
		if r := op.admin("GET", "/rooms/drop", ""); r.str("method") != "fifo" {
			t.Fatalf("default method: %s", r.Raw)
		}
		if r := op.admin("PUT", "/rooms/drop", `{"method":"lottery"}`); r.Code != 400 || r.errCode() != "invalid_field" {
			t.Fatalf("bad method: %d %s", r.Code, r.Raw)
		}
		r := op.admin("PUT", "/rooms/drop", `{"method":"reject","message":"Back at 9:00 sharp, \"promise\""}`)
		if r.Code != 200 || r.str("method") != "reject" || r.str("message") != "Back at 9:00 sharp, \"promise\"" {
			t.Fatalf("put reject: %d %s", r.Code, r.Raw)
		}
		v := newVisitor(t, ts.URL)
		if j := v.join("drop"); j.str("status") != "closed" || j.str("message") != "Back at 9:00 sharp, \"promise\"" || j.str("visitor") == "" {
			t.Fatalf("join into a rejecting room: %s", j.Raw)
		}
		if r := op.admin("PUT", "/rooms/drop", `{"method":"passthrough"}`); r.Code != 200 {
			t.Fatalf("put passthrough: %d %s", r.Code, r.Raw)
		}
		if j := v.join("drop"); j.str("status") != "admitted" || j.str("token") == "" {
			t.Fatalf("join into a passthrough room: %s", j.Raw)
		}
	})
}
