package entry

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// HealthPath is the server's endpoint that takes samples of an origin's
// health, under a room: /api/v1/rooms/{room}/health.
const HealthPath = "/api/v1/rooms/%s/health"

// maxHealthBatch is the most samples the server takes in one call.
const maxHealthBatch = 1000

// HealthSample is one request the protected service served: how long its
// handler took and whether it succeeded (a status below 500).
type HealthSample struct {
	Ms float64 `json:"ms"`
	OK bool    `json:"ok"`
}

// ReporterOptions configure a Reporter. Nil means the defaults.
type ReporterOptions struct {
	// Client sends the reports (default: one with a 5 s timeout).
	Client *http.Client
	// Every is how often the samples gathered are sent (default 500 ms).
	Every time.Duration
	// Buffer bounds the samples held between two sends, all rooms together
	// (default 10000); past it samples are dropped and counted (Dropped).
	Buffer int
}

// Reporter sends the latency and outcome of a service's requests to a
// waitroom server's health endpoint, in the background and in batches,
// with a service key: the signal a room's autopilot sizes its admission
// rate from. Record never blocks on the network; Run sends. Safe for
// concurrent use.
type Reporter struct {
	base  string
	auth  string
	o     ReporterOptions
	mu    sync.Mutex
	rooms map[string][]HealthSample
	held  int
	drop  atomic.Int64
}

// NewReporter is a Reporter to the server at baseURL (scheme, host and any
// path prefix) with serviceKey.
func NewReporter(baseURL, serviceKey string, opts *ReporterOptions) *Reporter {
	var o ReporterOptions
	if opts != nil {
		o = *opts
	}
	if o.Client == nil {
		o.Client = &http.Client{Timeout: 5 * time.Second}
	}
	if o.Every <= 0 {
		o.Every = 500 * time.Millisecond
	}
	if o.Buffer <= 0 {
		o.Buffer = 10000
	}
	return &Reporter{base: strings.TrimRight(baseURL, "/"), auth: "Bearer " + serviceKey, o: o, rooms: map[string][]HealthSample{}}
}

// Record holds one sample of room's origin until the next send; past the
// buffer it is dropped.
func (r *Reporter) Record(room string, latency time.Duration, ok bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.held >= r.o.Buffer {
		r.drop.Add(1)
		return
	}
	r.held++
	r.rooms[room] = append(r.rooms[room], HealthSample{Ms: float64(latency.Microseconds()) / 1000, OK: ok})
}

// Dropped is how many samples were dropped: the buffer was full, or a send
// failed.
func (r *Reporter) Dropped() int64 { return r.drop.Load() }

// Run sends what was recorded every ReporterOptions.Every until ctx ends,
// then once more (with a second's grace) so that the last samples are not
// lost at shutdown.
func (r *Reporter) Run(ctx context.Context) error {
	t := time.NewTicker(r.o.Every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			fctx, cancel := context.WithTimeout(context.Background(), time.Second)
			defer cancel()
			r.Flush(fctx)
			return nil
		case <-t.C:
			r.Flush(ctx)
		}
	}
}

// Flush sends what was recorded now, each room's samples in calls of at
// most 1000; the samples of a call that fails are dropped (and counted).
func (r *Reporter) Flush(ctx context.Context) {
	r.mu.Lock()
	rooms := r.rooms
	r.rooms, r.held = map[string][]HealthSample{}, 0
	r.mu.Unlock()
	for room, s := range rooms {
		for len(s) > 0 {
			n := min(len(s), maxHealthBatch)
			if err := r.send(ctx, room, s[:n]); err != nil {
				r.drop.Add(int64(n))
			}
			s = s[n:]
		}
	}
}

func (r *Reporter) send(ctx context.Context, room string, s []HealthSample) error {
	body, _ := json.Marshal(struct {
		Samples []HealthSample `json:"samples"`
	}{s})
	u := r.base + fmt.Sprintf(HealthPath, url.PathEscape(room))
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", r.auth)
	resp, err := r.o.Client.Do(req)
	if err != nil {
		return fmt.Errorf("entry: health: %w", err)
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("entry: health: %s", resp.Status)
	}
	return nil
}

// statusWriter keeps the status a handler wrote.
type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(p []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.ResponseWriter.Write(p)
}

// Unwrap lets http.ResponseController reach the writer's own methods
// (Flush, deadlines).
func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// serveReported runs next and records, under room, how long it took and
// whether it answered below 500 (a handler that panics is a failure).
func serveReported(rep *Reporter, room string, next http.Handler, w http.ResponseWriter, r *http.Request) {
	sw := &statusWriter{ResponseWriter: w}
	began := time.Now()
	ok := false
	defer func() {
		rep.Record(room, time.Since(began), ok)
	}()
	next.ServeHTTP(sw, r)
	ok = sw.status < 500
}
