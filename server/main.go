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
	"io"
	"log/slog"
	"net"
	"net/http"
	_ "net/http/pprof"
	"os"
	"os/signal"
	"runtime/debug"
	"syscall"
)

func main() {
	if len(os.Args) > 1 && os.Args[1] == "keys" {
		os.Exit(keysCommand(os.Args[2:], os.Stdout, os.Stderr))
	}
	cfg, err := parseConfig(os.Args[1:], os.Getenv)
	if errors.Is(err, flag.ErrHelp) {
		usage(os.Stdout)
		return
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "waitroom:", err)
		os.Exit(2)
	}
	if cfg.ShowVersion {
		printVersion(os.Stdout, buildInfo())
		return
	}
	log := newLogger(os.Stderr, cfg)

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, cfg, log); err != nil {
		fmt.Fprintln(os.Stderr, "waitroom:", err)
		os.Exit(1)
	}
}

// newLogger is the logger -log-level and -log-format ask for.
func newLogger(w io.Writer, cfg config) *slog.Logger {
	var level slog.Level
	_ = level.UnmarshalText([]byte(cfg.LogLevel))
	opts := &slog.HandlerOptions{Level: level}
	if cfg.LogFormat == "json" {
		return slog.New(slog.NewJSONHandler(w, opts))
	}
	return slog.New(slog.NewTextHandler(w, opts))
}

func run(ctx context.Context, cfg config, log *slog.Logger) error {
	if err := productionGuards(cfg); err != nil {
		return err
	}
	if os.Getenv("GOGC") == "" {
		// A server holding connections has a large live heap: at 100 % as
		// much again may be garbage, most of the memory a connection costs
		// beyond its own; lower trades that for CPU and lag (see docs/configuration.md).
		debug.SetGCPercent(cfg.GCPercent)
	}
	s, err := newServer(ctx, cfg, nil, log)
	if err != nil {
		return err
	}
	if err := s.routesNameRooms(ctx); err != nil {
		s.redis.Close()
		return err
	}
	ln, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		s.redis.Close()
		return fmt.Errorf("listen %s: %w", cfg.Addr, err)
	}
	ops, err := s.listenOps()
	if err != nil {
		ln.Close()
		s.redis.Close()
		return err
	}
	invented := ""
	if cfg.AdminKey == "" && cfg.AdminKeysFile == "" {
		invented = s.cfg.AdminKey // made up by newServer for this run
	}
	s.writeBanner(os.Stderr, ln.Addr(), ops, invented)
	if cfg.DebugAddr != "" {
		go func() {
			// pprof registers on http.DefaultServeMux.
			if err := http.ListenAndServe(cfg.DebugAddr, nil); err != nil {
				log.Error("debug listener", "err", err)
			}
		}()
	}
	return s.run(ctx, ln, ops...)
}

// errInventedAdminKey refuses a start on a shared Redis without an admin
// key: each instance would invent its own, and the dashboard would work on
// whichever instance the load balancer picked.
var errInventedAdminKey = errors.New("with -redis, set -admin-key (WAITROOM_ADMIN_KEY) or -admin-keys (WAITROOM_ADMIN_KEYS): " +
	"an admin key invented at start would differ on every instance")

// productionGuards refuses set-ups that start but cannot work as the
// operator means: checked when the binary starts, not when tests build a
// server.
func productionGuards(cfg config) error {
	if cfg.Redis != "" && cfg.AdminKey == "" && cfg.AdminKeysFile == "" {
		return errInventedAdminKey
	}
	return nil
}

// routesNameRooms refuses a gateway route whose room exists neither in the
// rooms file nor in Redis (unless -open-rooms lets a join make it): every
// visitor it guards would be sent to a page saying the room does not exist.
func (s *server) routesNameRooms(ctx context.Context) error {
	if s.cfg.OpenRooms {
		return nil
	}
	routes, err := s.loadRoutes()
	if err != nil {
		return err
	}
	for _, rt := range routes.Routes {
		ok, err := s.rooms.Exists(ctx, rt.Room)
		if err != nil {
			return fmt.Errorf("route %s: checking room %q: %w", rt.Match, rt.Room, err)
		}
		if !ok {
			return fmt.Errorf("route %s names room %q, which neither the rooms file (-rooms) nor Redis holds: create it (/admin, the rooms file) or pass -open-rooms", rt.Match, rt.Room)
		}
	}
	return nil
}
