package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/waitroom/waitroom/internal/httperr"
	"github.com/waitroom/waitroom/metrics"
)

// The operations listeners: -ops-addr serves /healthz, /readyz and
// /metrics, -metrics-addr /metrics alone, each on an address of its own
// that probes and a scraper reach and visitors do not (as Envoy's admin
// port and Traefik's ping and metrics entry points do). They answer the
// same on every mode: with -upstream the main listener's root is the app's,
// and its own /healthz is the app's too. The main listener keeps its
// /healthz and /readyz (under -gateway-page with -upstream).

// opsListener is one operations listener and what it serves.
type opsListener struct {
	name    string // the flag that asked for it, for errors and logs
	ln      net.Listener
	handler http.Handler
}

// listenOps opens the operations listeners the flags ask for; on error it
// closes those it opened.
func (s *server) listenOps() ([]opsListener, error) {
	var out []opsListener
	add := func(name, addr string, h http.Handler) error {
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			for _, o := range out {
				o.ln.Close()
			}
			return fmt.Errorf("%s: listen %s: %w", name, addr, err)
		}
		out = append(out, opsListener{name: name, ln: ln, handler: h})
		return nil
	}
	if s.cfg.OpsAddr != "" {
		if err := add("-ops-addr", s.cfg.OpsAddr, s.opsHandler()); err != nil {
			return nil, err
		}
	}
	if s.cfg.MetricsAddr != "" {
		if err := add("-metrics-addr", s.cfg.MetricsAddr, metricsOnly(s.metrics)); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// opsHandler serves -ops-addr: /healthz (the process serves), /readyz
// (Redis and pub/sub answer, not draining) and /metrics, without a key;
// anything else is the JSON 404 or 405 of the main listener.
func (s *server) opsHandler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, 200, []byte(`{"status":"ok"}`))
	})
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, r *http.Request) {
		if err := s.readiness(r.Context()); err != nil {
			writeJSON(w, err.Status, err.Body())
			return
		}
		writeJSON(w, 200, []byte(`{"status":"ready"}`))
	})
	mux.Handle("GET /metrics", s.metrics.Handler())
	mux.HandleFunc("/", notFound("/healthz", "/readyz", "/metrics"))
	return mux
}

// metricsOnly serves -metrics-addr: GET /metrics and nothing else.
func metricsOnly(m *metrics.Metrics) http.Handler {
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", m.Handler())
	mux.HandleFunc("/", notFound("/metrics"))
	return mux
}

// notFound answers a path the listener does not serve (404), or one of
// paths with another method than GET or HEAD (405), as JSON.
func notFound(paths ...string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		for _, p := range paths {
			if r.URL.Path == p {
				w.Header().Set("Allow", "GET, HEAD")
				writeJSON(w, 405, httperr.New(405, "method_not_allowed", "method not allowed on this route").Body())
				return
			}
		}
		writeJSON(w, 404, httperr.New(404, "not_found", "no such route").Body())
	}
}

func writeJSON(w http.ResponseWriter, status int, body []byte) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

// serveMetrics serves GET /metrics, and nothing else, on ln until ctx
// ends: the listener of -metrics-addr, for a scraper on a private network.
func serveMetrics(ctx context.Context, ln net.Listener, m *metrics.Metrics) error {
	return serveOps(ctx, ln, metricsOnly(m))
}

// serveOps serves h on ln until ctx ends, then closes ln and waits up to
// 2 s for the requests in flight. It returns what stopped the serving
// before ctx ended, or nil.
func serveOps(ctx context.Context, ln net.Listener, h http.Handler) error {
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second, WriteTimeout: 10 * time.Second, IdleTimeout: 60 * time.Second}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	err := srv.Shutdown(sctx)
	if serr := <-errc; !errors.Is(serr, http.ErrServerClosed) && err == nil {
		err = serr
	}
	return err
}
