package main

import (
	"crypto/sha1"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/waitroom/waitroom/internal/waitfor"
)

// drawOrder is the documented draw function, written out here so the
// test does not check the server against its own code.
func drawOrder(seed string, ids []string) []string {
	key := func(id string) string {
		s := sha1.Sum([]byte(seed + ":" + id))
		return hex.EncodeToString(s[:])
	}
	out := slices.Clone(ids)
	slices.SortFunc(out, func(a, b string) int {
		if c := strings.Compare(key(a), key(b)); c != 0 {
			return c
		}
		return strings.Compare(a, b)
	})
	return out
}

// TestDrawEndpoint: the draw endpoint publishes the commitment before
// anyone joins and no endpoint shows the seed before opening; after
// opening the seed matches the commitment and recomputing the order from
// the revealed list gives every visitor the place the server gave.
func TestDrawEndpoint(t *testing.T) {
	eachServer(t, withAdmin, func(t *testing.T, ts *testServer) {
		op := newVisitor(t, ts.URL)
		if r := op.do("GET", "/api/v1/rooms/drop/draw", ""); r.Code != 404 || r.errCode() != "no_draw" {
			t.Fatalf("draw of a room without opensAt: %d %s", r.Code, r.Raw)
		}
		opens := time.Now().Add(time.Hour).UTC().Format(time.RFC3339Nano)
		if r := op.admin("PUT", "/rooms/drop", `{"opensAt":"`+opens+`","batch":1}`); r.Code != 200 {
			t.Fatalf("put: %d %s", r.Code, r.Raw)
		}
		before := op.do("GET", "/api/v1/rooms/drop/draw", "")
		commit := before.str("commitment")
		if before.Code != 200 || before.str("state") != "committed" || len(commit) != 64 || before.Body["seed"] != nil || before.Body["ids"] != nil {
			t.Fatalf("before opening: %d %s", before.Code, before.Raw)
		}
		if r := op.do("GET", "/api/v1/rooms/drop/draw?limit=x", ""); r.Code != 400 || r.errCode() != "invalid_query" {
			t.Fatalf("bad limit: %d %s", r.Code, r.Raw)
		}
		var bodies []string // every answer before opening
		const n = 25
		vs := make([]*visitor, n)
		ids := make([]string, n)
		for i := range vs {
			vs[i] = newVisitor(t, ts.URL)
			r := vs[i].join("drop")
			if r.Code != 200 || r.str("opensAt") == "" {
				t.Fatalf("pre-queue join: %d %s", r.Code, r.Raw)
			}
			ids[i], _, _ = strings.Cut(r.str("visitor"), ".")
			bodies = append(bodies, r.Raw, vs[i].status("drop").Raw)
		}
		for _, p := range []string{"/rooms/drop", "/rooms/drop/stats", "/rooms"} {
			bodies = append(bodies, op.admin("GET", p, "").Raw)
		}
		bodies = append(bodies, op.do("GET", "/api/v1/rooms/drop/draw?limit=100000", "").Raw)

		past := time.Now().Add(-time.Second).UTC().Format(time.RFC3339Nano)
		if r := op.admin("PUT", "/rooms/drop", `{"opensAt":"`+past+`","paused":true}`); r.Code != 200 {
			t.Fatalf("open: %d %s", r.Code, r.Raw)
		}
		var after reply
		waitfor.Until(t, 10*time.Second, "the draw revealed", func() bool {
			vs[0].join("drop") // a join always reaches Redis, and draws
			after = op.do("GET", "/api/v1/rooms/drop/draw?limit=10", "")
			return after.str("state") == "revealed"
		})
		seed := after.str("seed")
		sum := sha256.Sum256([]byte(seed))
		if hex.EncodeToString(sum[:]) != commit || after.str("commitment") != commit {
			t.Fatalf("seed %q does not match the commitment %s: %s", seed, commit, after.Raw)
		}
		for _, b := range bodies {
			if strings.Contains(b, seed) {
				t.Fatalf("the seed was readable before opening: %s", b)
			}
		}
		// The revealed list, in pages of 10.
		var listed []string
		for off := 0; ; {
			page := op.do("GET", fmt.Sprintf("/api/v1/rooms/drop/draw?limit=10&offset=%d", off), "")
			got, _ := page.Body["ids"].([]any)
			for _, id := range got {
				listed = append(listed, id.(string))
			}
			next, ok := page.Body["nextOffset"].(float64)
			if !ok {
				break
			}
			off = int(next)
		}
		if !slices.Equal(listed, slices.Sorted(slices.Values(ids))) || after.num("count") != n {
			t.Fatalf("revealed %v (count %d), want the %d ids sorted", listed, after.num("count"), n)
		}
		order := drawOrder(seed, listed)
		for i, v := range vs {
			st := v.join("drop") // a poll may be answered from memory
			if want := int64(slices.Index(order, ids[i]) + 1); st.num("position") != want {
				t.Fatalf("visitor %s at %d, the recomputed draw says %d: %s", ids[i], st.num("position"), want, st.Raw)
			}
		}
	})
}
