package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/waitroom/waitroom/queue"
)

// serveReveal answers like the draw endpoint, in pages of 3.
func serveReveal(t *testing.T, seed, commitment string, ids []string) *httptest.Server {
	t.Helper()
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		off, _ := strconv.Atoi(r.URL.Query().Get("offset"))
		end := min(off+3, len(ids))
		out := map[string]any{"room": "drop", "state": "revealed", "seed": seed, "commitment": commitment,
			"count": len(ids), "offset": off, "ids": ids[off:end]}
		if end < len(ids) {
			out["nextOffset"] = end
		}
		_ = json.NewEncoder(w).Encode(out)
	}))
	t.Cleanup(ts.Close)
	return ts
}

func TestDrawcheckAgreesWithTheServer(t *testing.T) {
	seed := "9f2c6b1e0d4a7f3e8b5c2a1d0e9f8a7b6c5d4e3f2a1b0c9d8e7f6a5b4c3d2e1f"
	var ids []string
	for i := range 11 {
		ids = append(ids, fmt.Sprintf("visitor-%02d", i))
	}
	ts := serveReveal(t, seed, queue.Commitment(seed), ids)
	var out bytes.Buffer
	saved := filepath.Join(t.TempDir(), "draw.json")
	if err := run([]string{"-url", ts.URL, "-print", "-visitor", "visitor-07.signature", "-save", saved}, &out); err != nil {
		t.Fatal(err)
	}
	want := queue.DrawOrder(seed, ids)
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if !slices.Equal(lines[2:], want) {
		t.Fatalf("printed order %v, the server's %v", lines[2:], want)
	}
	place := slices.Index(want, "visitor-07") + 1
	if !strings.Contains(lines[1], fmt.Sprintf("place %d of 11", place)) {
		t.Fatalf("visitor line %q, want place %d", lines[1], place)
	}
	// Offline, from the saved file.
	out.Reset()
	if err := run([]string{"-file", saved, "-visitor", "visitor-07"}, &out); err != nil || !strings.Contains(out.String(), fmt.Sprintf("place %d of 11", place)) {
		t.Fatalf("offline: %v %s", err, out.String())
	}
}

func TestDrawcheckRefusesBadReveals(t *testing.T) {
	seed := "abc"
	ids := []string{"a", "b", "c", "d"}
	for name, tc := range map[string]struct {
		r    reveal
		want string
	}{
		"wrong seed":    {reveal{Seed: "abd", Commitment: queue.Commitment(seed), Count: 4, IDs: ids}, "does not match"},
		"not opened":    {reveal{State: "committed", Commitment: queue.Commitment(seed)}, "not revealed"},
		"missing ids":   {reveal{Seed: seed, Commitment: queue.Commitment(seed), Count: 5, IDs: ids}, "4 ids of 5"},
		"unsorted":      {reveal{Seed: seed, Commitment: queue.Commitment(seed), Count: 4, IDs: []string{"b", "a", "c", "d"}}, "not sorted"},
		"no commitment": {reveal{Seed: seed, Count: 4, IDs: ids}, "no commitment"},
	} {
		if _, err := check(tc.r); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want an error saying %q", name, err, tc.want)
		}
	}
	if err := run(nil, &bytes.Buffer{}); err == nil {
		t.Error("no -url or -file accepted")
	}
}
