package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"slices"
	"strconv"
	"sync"
	"time"
)

// The autopilot scenario's origin: the app the built-in proxy protects, a
// child process of the bench (`bench autopilot-origin -config JSON`, see
// workerFleet) so that the herd's own work in the bench process does not
// stretch its timings. Every POST under /shop/ is an order: it waits for
// one of the pool's slots, holds it for the service time and answers 201;
// an order that waits longer than the bound for a slot is answered 503
// pool_timeout, as a connection pool's acquire timeout does. Any other
// request is answered 200 at once (the server's readiness probe at the
// root reaches the app in proxy mode).
//
// The pool's size can be changed while the origin runs, on a second
// listener the proxy does not reach: POST /pool {"size":20}. Slots in use
// are not taken back; a smaller pool hands out no new slot until fewer
// than its size are in use.

// originConfig is the origin's configuration, as JSON on its command line.
type originConfig struct {
	AppPort   int           `json:"appPort"`
	CtlPort   int           `json:"ctlPort"`
	Pool      int           `json:"pool"`
	Service   time.Duration `json:"service"`
	WaitBound time.Duration `json:"waitBound"`
}

// originSample is one order as the origin saw it.
type originSample struct {
	AtMs int64   `json:"at"` // Unix milliseconds when it arrived
	Ms   float32 `json:"ms"` // until it was answered
	OK   bool    `json:"ok"` // 201; otherwise 503 pool_timeout
}

// originReport is what the origin hands back when it ends.
type originReport struct {
	Samples []originSample `json:"samples"`
	// Resized are the pool sizes set on the control listener, with the
	// Unix milliseconds they took effect.
	Resized []originPoolChange `json:"resized"`
}

type originPoolChange struct {
	AtMs int64 `json:"at"`
	Size int   `json:"size"`
}

var originKind = fleetKind[originConfig, originReport]{worker: "autopilot-origin", start: startOrigin}

func originWorkerMain(ctx context.Context, cfg string) error { return originKind.workerMain(ctx, cfg) }

// slotPool is a pool of slots handed out in the order they were asked for.
type slotPool struct {
	mu      sync.Mutex
	size    int
	used    int
	waiters []chan struct{} // oldest first; closed when given a slot
}

// acquire takes a slot, waiting at most bound; it reports whether it got one.
func (p *slotPool) acquire(bound time.Duration) bool {
	p.mu.Lock()
	if p.used < p.size && len(p.waiters) == 0 {
		p.used++
		p.mu.Unlock()
		return true
	}
	ch := make(chan struct{})
	p.waiters = append(p.waiters, ch)
	p.mu.Unlock()
	t := time.NewTimer(bound)
	defer t.Stop()
	select {
	case <-ch:
		return true
	case <-t.C:
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	for i, w := range p.waiters {
		if w == ch {
			p.waiters = append(p.waiters[:i], p.waiters[i+1:]...)
			return false
		}
	}
	return true // given a slot as the bound passed: it is this order's
}

func (p *slotPool) release() {
	p.mu.Lock()
	p.used--
	p.grant()
	p.mu.Unlock()
}

func (p *slotPool) resize(n int) {
	p.mu.Lock()
	p.size = n
	p.grant()
	p.mu.Unlock()
}

// grant hands free slots to the oldest waiters; p.mu is held.
func (p *slotPool) grant() {
	for p.used < p.size && len(p.waiters) > 0 {
		p.used++
		close(p.waiters[0])
		p.waiters = p.waiters[1:]
	}
}

// startOrigin starts the origin's two listeners; the fleet's report is
// every order it answered.
func startOrigin(_ context.Context, cfg originConfig) (localFleet[originReport], error) {
	if cfg.Pool < 1 || cfg.Service <= 0 || cfg.WaitBound <= 0 {
		return localFleet[originReport]{}, fmt.Errorf("autopilot-origin: bad config %+v", cfg)
	}
	pool := &slotPool{size: cfg.Pool}
	var mu sync.Mutex
	rep := originReport{Samples: make([]originSample, 0, 1<<15)}
	record := func(s originSample) {
		mu.Lock()
		rep.Samples = append(rep.Samples, s)
		mu.Unlock()
	}
	app := http.NewServeMux()
	app.HandleFunc("POST /shop/", func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		// Each order is recorded before it is answered, so that every
		// answer a visitor reads is in the report.
		if !pool.acquire(cfg.WaitBound) {
			record(originSample{AtMs: start.UnixMilli(), Ms: float32(time.Since(start).Seconds() * 1e3)})
			w.WriteHeader(http.StatusServiceUnavailable)
			io.WriteString(w, `{"error":{"code":"pool_timeout","message":"no database connection within the wait bound"}}`)
			return
		}
		// The order's work: the slot is held for the service time.
		t := time.NewTimer(cfg.Service)
		<-t.C
		pool.release()
		record(originSample{AtMs: start.UnixMilli(), Ms: float32(time.Since(start).Seconds() * 1e3), OK: true})
		w.WriteHeader(http.StatusCreated)
		io.WriteString(w, `{"order":"created"}`)
	})
	app.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") })

	ctl := http.NewServeMux()
	ctl.HandleFunc("POST /pool", func(w http.ResponseWriter, r *http.Request) {
		var body struct {
			Size int `json:"size"`
		}
		if err := json.NewDecoder(io.LimitReader(r.Body, 1<<10)).Decode(&body); err != nil || body.Size < 1 {
			http.Error(w, `{"error":{"code":"invalid_size","message":"size must be a positive integer"}}`, http.StatusBadRequest)
			return
		}
		pool.resize(body.Size)
		mu.Lock()
		rep.Resized = append(rep.Resized, originPoolChange{AtMs: time.Now().UnixMilli(), Size: body.Size})
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"size":%d}`, body.Size)
	})

	var servers []*http.Server
	stop := func() {
		for _, s := range servers {
			_ = s.Close()
		}
	}
	for _, l := range []struct {
		port int
		h    http.Handler
	}{{cfg.AppPort, app}, {cfg.CtlPort, ctl}} {
		ln, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(l.port))
		if err != nil {
			stop()
			return localFleet[originReport]{}, err
		}
		s := &http.Server{Handler: l.h, ReadHeaderTimeout: 10 * time.Second}
		servers = append(servers, s)
		go func() { // ends with stop
			if err := s.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
				fmt.Fprintf(os.Stderr, "autopilot-origin: %v\n", err)
			}
		}()
	}
	return localFleet[originReport]{
		stop: stop,
		report: func() originReport {
			stop()
			mu.Lock()
			defer mu.Unlock()
			// A handler still running may record after this: the copy
			// is what is reported.
			return originReport{Samples: slices.Clone(rep.Samples), Resized: slices.Clone(rep.Resized)}
		},
	}, nil
}
