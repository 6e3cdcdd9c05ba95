package webhook

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/waitroom/waitroom/internal/waitfor"
)

// receiver is an endpoint that checks every request the way the
// specification tells a receiver to, on its own (not with Sign), and
// counts what it saw by webhook-id.
type receiver struct {
	*httptest.Server
	secret string
	// answer is the status for the n-th request (from 1) with a
	// webhook-id; nil answers 204.
	answer func(id string, n int) int

	mu     sync.Mutex
	seen   map[string]int
	events map[string]payload
	bad    []string // why requests were refused
}

func newReceiver(t *testing.T, answer func(id string, n int) int) *receiver {
	t.Helper()
	rc := &receiver{secret: NewSecret(), answer: answer, seen: map[string]int{}, events: map[string]payload{}}
	rc.Server = httptest.NewServer(http.HandlerFunc(rc.serve))
	t.Cleanup(rc.Close)
	return rc
}

func (rc *receiver) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	id := r.Header.Get("webhook-id")
	rc.mu.Lock()
	defer rc.mu.Unlock()
	if why := verify(rc.secret, r.Header, body); why != "" {
		rc.bad = append(rc.bad, why)
		w.WriteHeader(http.StatusUnauthorized)
		return
	}
	rc.seen[id]++
	var p payload
	_ = json.Unmarshal(body, &p)
	rc.events[id] = p
	status := http.StatusNoContent
	if rc.answer != nil {
		status = rc.answer(id, rc.seen[id])
	}
	w.WriteHeader(status)
}

// verify says why a request is not signed with secret ("" when it is).
func verify(secret string, h http.Header, body []byte) string {
	id, ts, sigs := h.Get("webhook-id"), h.Get("webhook-timestamp"), h.Get("webhook-signature")
	if id == "" || ts == "" || sigs == "" {
		return "missing header"
	}
	sec, err := strconv.ParseInt(ts, 10, 64)
	if err != nil || time.Since(time.Unix(sec, 0)).Abs() > 5*time.Minute {
		return "timestamp " + ts
	}
	key, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(secret, "whsec_"))
	if err != nil {
		return "secret"
	}
	m := hmac.New(sha256.New, key)
	m.Write([]byte(id + "." + ts + "." + string(body)))
	want := m.Sum(nil)
	for _, s := range strings.Fields(sigs) {
		v, b64, ok := strings.Cut(s, ",")
		got, err := base64.StdEncoding.DecodeString(b64)
		if ok && v == "v1" && err == nil && hmac.Equal(got, want) {
			return ""
		}
	}
	return "no signature matches"
}

func (rc *receiver) endpoint(events ...string) Endpoint {
	return Endpoint{URL: rc.URL + "/hook", Secret: rc.secret, Events: events}
}

// counts is how often each webhook-id was seen, and the refusals.
func (rc *receiver) counts() (map[string]int, []string) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	out := make(map[string]int, len(rc.seen))
	for k, v := range rc.seen {
		out[k] = v
	}
	return out, append([]string(nil), rc.bad...)
}

func (rc *receiver) ofType(t string) []payload {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	var out []payload
	for _, p := range rc.events {
		if p.Type == t {
			out = append(out, p)
		}
	}
	return out
}

// run runs h's delivery loop until the test ends, and checks that it
// returns then.
func run(t *testing.T, h *Hooks) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- h.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != context.Canceled {
				t.Errorf("Run: %v", err)
			}
		case <-time.After(10 * time.Second):
			t.Error("Run did not return after its context ended")
		}
	})
}

// outboxEmpty waits until no delivery waits or is claimed, and no
// endpoint is left in the ready set.
func outboxEmpty(t *testing.T, r Redis) {
	t.Helper()
	waitfor.Until(t, 10*time.Second, "an empty outbox", func() bool {
		v, err := r.Do(context.Background(), "HLEN", jobsKey)
		w, err2 := r.Do(context.Background(), "ZCARD", readyKey)
		n, _ := v.(int64)
		m, _ := w.(int64)
		return err == nil && err2 == nil && n == 0 && m == 0
	})
}

var quiet = slog.New(slog.DiscardHandler)

// loopback lets the tests' receivers, httptest servers on 127.0.0.1, be
// reached: internal addresses are refused by default.
var loopback = AllowList{netip.MustParsePrefix("127.0.0.0/8"), netip.MustParsePrefix("::1/128")}

// fast are options for tests: quick polls and retries, loopback allowed.
func fast() *Options {
	return &Options{Poll: 20 * time.Millisecond, Backoff: []time.Duration{50 * time.Millisecond, 50 * time.Millisecond}, Timeout: time.Second, Logger: quiet, Allow: loopback}
}

type atomicBool struct {
	mu sync.Mutex
	v  bool
}

func (b *atomicBool) get() bool  { b.mu.Lock(); defer b.mu.Unlock(); return b.v }
func (b *atomicBool) set(v bool) { b.mu.Lock(); defer b.mu.Unlock(); b.v = v }
