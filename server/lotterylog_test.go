package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/waitroom/waitroom/internal/waitfor"
)

// TestLotteryLogEndpoint: the lottery's log is public and paged, refuses
// bad paging with a stable code, names tickets and never visitors, and
// ends when the room leaves random.
func TestLotteryLogEndpoint(t *testing.T) {
	ts := startServer(t, nil, "rueidis", withAdmin)
	op := newVisitor(t, ts.URL)
	const path = "/api/v1/rooms/drop/lottery/log"
	if r := op.do("GET", path, ""); r.Code != 404 || r.errCode() != "no_lottery" {
		t.Fatalf("before any lottery: %d %s", r.Code, r.Raw)
	}
	if r := op.admin("PUT", "/rooms/drop", `{"method":"random"}`); r.Code != 200 {
		t.Fatalf("put random: %d %s", r.Code, r.Raw)
	}
	var ids []string
	for range 3 {
		v := newVisitor(t, ts.URL)
		v.join("drop")
		id, _, _ := strings.Cut(v.cred, ".")
		ids = append(ids, id)
	}
	var r reply
	waitfor.Until(t, 10*time.Second, "a pick in the log", func() bool {
		if _, err := ts.q.Admit(context.Background(), "drop"); err != nil {
			t.Fatal(err)
		}
		r = op.do("GET", path, "")
		return r.Code == 200 && strings.Contains(r.Raw, `"event":"picks"`)
	})
	if r.str("state") != "drawing" || r.num("first") != 1 || !strings.Contains(r.Raw, `"event":"start"`) {
		t.Fatalf("log: %s", r.Raw)
	}
	for _, id := range ids {
		if strings.Contains(r.Raw, id) {
			t.Fatalf("the log names visitor %s: %s", id, r.Raw)
		}
	}
	page := op.do("GET", path+"?after=1&limit=2", "")
	es, _ := page.Body["entries"].([]any)
	if page.Code != 200 || len(es) != 2 || page.num("next") != 3 {
		t.Fatalf("page after 1, limit 2: %d %s", page.Code, page.Raw)
	}
	if first, _ := es[0].(map[string]any); first["id"] != float64(2) {
		t.Fatalf("page after 1 starts at %v", first["id"])
	}
	for _, q := range []string{"after=-1", "after=x", "limit=0", "limit=10001", "limit=1.5"} {
		if r := op.do("GET", path+"?"+q, ""); r.Code != 400 || r.errCode() != "invalid_query" {
			t.Errorf("?%s: %d %s, want 400 invalid_query", q, r.Code, r.Raw)
		}
	}
	if r := op.admin("PUT", "/rooms/drop", `{"method":"fifo"}`); r.Code != 200 {
		t.Fatalf("put fifo: %d %s", r.Code, r.Raw)
	}
	r = op.do("GET", path+"?limit=10000", "")
	all, _ := r.Body["entries"].([]any)
	last, _ := all[len(all)-1].(map[string]any)
	if r.str("state") != "revealed" || last["event"] != "end" || r.Body["next"] != nil {
		t.Fatalf("after the lottery: %s", r.Raw)
	}
	if cc := r.Header.Get("Cache-Control"); cc != "public, max-age=2" {
		t.Fatalf("the last page's Cache-Control %q, want %q", cc, "public, max-age=2")
	}
	// A page whose range is complete never changes.
	if page := op.do("GET", path+"?after=1&limit=2", ""); page.Header.Get("Cache-Control") != "public, max-age=31536000, immutable" {
		t.Fatalf("a full page's Cache-Control %q, want the immutable one", page.Header.Get("Cache-Control"))
	}
	// The bound on readers at once is tested in visit (TestLotteryLogReaders).
	if r := op.do("GET", path, ""); r.Code != 200 {
		t.Fatalf("a reader once the others are done: %d %s", r.Code, r.Raw)
	}
}
