// Command waitroom is a self-hosted virtual waiting room: a fair queue in
// Redis, batched and jittered admission sized from what the protected system
// can absorb, signed entry tokens, and position updates pushed over
// WebSocket or SSE (or polled).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	_ "net/http/pprof"
	"net/url"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	cfg, err := parseConfig(os.Args[1:], os.Getenv)
	if errors.Is(err, flag.ErrHelp) {
		usage(os.Stdout)
		return
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "waitroom:", err)
		os.Exit(2)
	}
	var level slog.Level
	_ = level.UnmarshalText([]byte(cfg.LogLevel))
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, cfg, log); err != nil {
		fmt.Fprintln(os.Stderr, "waitroom:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, cfg config, log *slog.Logger) error {
	s, err := newServer(ctx, cfg, log)
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		s.redis.Close()
		return fmt.Errorf("listen %s: %w", cfg.Addr, err)
	}
	fmt.Fprintf(os.Stderr, "waitroom listening on http://%s/?room=demo (redis: %s, client: %s, batch %d per %v)\n",
		ln.Addr(), redisLabel(cfg), cfg.RedisClient, cfg.Capacity.BatchSize(), cfg.Capacity.Tick)
	if cfg.DebugAddr != "" {
		go func() {
			// pprof registers on http.DefaultServeMux.
			if err := http.ListenAndServe(cfg.DebugAddr, nil); err != nil {
				log.Error("debug listener", "err", err)
			}
		}()
	}
	if cfg.AdminKey == "" {
		fmt.Fprintf(os.Stderr, "admin dashboard: http://%s/admin (admin key for this run: %s)\n", ln.Addr(), s.cfg.AdminKey)
	}
	return s.run(ctx, ln)
}

func redisLabel(cfg config) string {
	if cfg.Redis == "" {
		return "embedded"
	}
	if u, err := url.Parse(cfg.Redis); err == nil {
		return u.Redacted()
	}
	return "external"
}
