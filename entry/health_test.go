package entry

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"
)

// healthServer stands in for the server's health endpoint (the server
// package tests the real one): it keeps what each room was sent, call by
// call.
type healthServer struct {
	*httptest.Server
	mu    sync.Mutex
	calls map[string][][]HealthSample
	hold  chan struct{} // when not nil, each call waits for it to close
	came  chan struct{} // with hold: told of each call as it arrives
}

func newHealthServer(t *testing.T) *healthServer {
	hs := &healthServer{calls: map[string][][]HealthSample{}}
	hs.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if hs.hold != nil {
			hs.came <- struct{}{}
			<-hs.hold
		}
		if r.Header.Get("Authorization") != "Bearer svc-key-0123456789" {
			WriteError(w, &APIError{Status: 401, Code: "invalid_service_key", Message: "no"})
			return
		}
		var room string
		var req struct{ Samples []HealthSample }
		if _, err := fmtSscanRoom(r.URL.Path, &room); err != nil || json.NewDecoder(r.Body).Decode(&req) != nil {
			WriteError(w, &APIError{Status: 400, Code: "invalid_samples", Message: "no"})
			return
		}
		hs.mu.Lock()
		hs.calls[room] = append(hs.calls[room], req.Samples)
		hs.mu.Unlock()
		w.Write([]byte(`{"accepted":1}`))
	}))
	t.Cleanup(hs.Close)
	return hs
}

// fmtSscanRoom reads the room of a health path.
func fmtSscanRoom(path string, room *string) (int, error) {
	const pre, post = "/api/v1/rooms/", "/health"
	if len(path) <= len(pre)+len(post) || path[:len(pre)] != pre || path[len(path)-len(post):] != post {
		return 0, http.ErrNotSupported
	}
	*room = path[len(pre) : len(path)-len(post)]
	return 1, nil
}

// TestReporterBatches: a flush sends each room's samples in calls of at
// most 1000, with the service key.
func TestReporterBatches(t *testing.T) {
	hs := newHealthServer(t)
	rep := NewReporter(hs.URL, "svc-key-0123456789", nil)
	for i := range 2500 {
		rep.Record("drop", time.Duration(i)*time.Microsecond, i%10 != 0)
	}
	rep.Record("shop", 1500*time.Microsecond, false)
	rep.Flush(context.Background())
	var sizes []int
	for _, c := range hs.calls["drop"] {
		sizes = append(sizes, len(c))
	}
	if len(sizes) != 3 || sizes[0]+sizes[1]+sizes[2] != 2500 || max(sizes[0], sizes[1], sizes[2]) != 1000 {
		t.Errorf("drop's calls %v, want 2500 samples in 3 calls of at most 1000", sizes)
	}
	if s := hs.calls["shop"]; len(s) != 1 || len(s[0]) != 1 || s[0][0] != (HealthSample{Ms: 1.5, OK: false}) {
		t.Errorf("shop's calls %v", s)
	}
	if rep.Dropped() != 0 {
		t.Errorf("%d dropped", rep.Dropped())
	}
	bad := NewReporter(hs.URL, "wrong", nil)
	bad.Record("drop", time.Millisecond, true)
	bad.Flush(context.Background())
	if bad.Dropped() != 1 {
		t.Errorf("a refused call: %d dropped, want 1", bad.Dropped())
	}
}

// TestReporterNeverBlocks: while a send hangs, Record returns at once;
// past the buffer, samples are dropped and counted.
func TestReporterNeverBlocks(t *testing.T) {
	hs := newHealthServer(t)
	hs.hold, hs.came = make(chan struct{}), make(chan struct{}, 1)
	rep := NewReporter(hs.URL, "svc-key-0123456789", &ReporterOptions{Buffer: 10})
	rep.Record("drop", time.Millisecond, true)
	done := make(chan struct{})
	go func() {
		defer close(done)
		rep.Flush(context.Background())
	}()
	<-hs.came // the send is on its way, and hangs
	for range 15 {
		rep.Record("drop", time.Millisecond, true)
	}
	if rep.Dropped() != 5 {
		t.Errorf("%d dropped, want 5 past a buffer of 10", rep.Dropped())
	}
	close(hs.hold)
	<-done
}

// TestMiddlewareReportsHealth: with Health, each request the handler
// served is recorded under the token's room (whatever the request says),
// a 5xx as a failure; a refused request is not recorded.
func TestMiddlewareReportsHealth(t *testing.T) {
	ks := testSet(t, EdDSA)
	v, _ := NewVerifier("", &VerifierOptions{Keys: ks.Keys(), Rooms: []string{"drop"}})
	hs := newHealthServer(t)
	rep := NewReporter(hs.URL, "svc-key-0123456789", nil)
	app := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/fail" {
			w.WriteHeader(503)
			return
		}
		w.Write([]byte("ok"))
	})
	h := v.Middleware(app, &MiddlewareOptions{Health: rep, AllowMissingVisitor: true})
	tok, _ := ks.Sign(testClaims())
	for _, p := range []string{"/buy", "/buy", "/fail"} {
		req := httptest.NewRequest("POST", p+"?room=shop", nil)
		req.Header.Set("Authorization", "Bearer "+tok)
		req.Header.Set("X-Waitroom-Room", "shop")
		h.ServeHTTP(httptest.NewRecorder(), req)
	}
	h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("POST", "/buy", nil)) // no token: refused
	rep.Flush(context.Background())
	if len(hs.calls) != 1 || len(hs.calls["drop"]) != 1 {
		t.Fatalf("calls %v, want one call for drop", hs.calls)
	}
	got := hs.calls["drop"][0]
	if len(got) != 3 || !got[0].OK || !got[1].OK || got[2].OK {
		t.Errorf("samples %v, want ok, ok, failed", got)
	}
}
