package main

import (
	"context"
	"fmt"
	"log/slog"
	"net/url"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"
	"github.com/redis/rueidis"
	"github.com/waitroom/waitroom/queue"
)

// redisConn is the server's Redis: the queue's seam, and the library client
// the hub's broker is built on. Only this file and the wiring in app.go see
// client library types.
type redisConn struct {
	q      queue.Redis
	rue    rueidis.Client
	gor    redis.UniversalClient
	mini   *miniredis.Miniredis
	addr   string
	closed bool
}

// openRedis connects to cfg.Redis, or starts an embedded miniredis on
// loopback when it is empty.
func openRedis(ctx context.Context, cfg config, log *slog.Logger) (*redisConn, error) {
	rc := &redisConn{}
	rawURL := cfg.Redis
	if rawURL == "" {
		m := miniredis.NewMiniRedis()
		if err := m.StartAddr("127.0.0.1:0"); err != nil {
			return nil, fmt.Errorf("embedded redis: %w", err)
		}
		rc.mini = m
		rawURL = "redis://" + m.Addr()
		log.Info("embedded redis started (state lives in this process only)", "addr", m.Addr())
	}
	u, _ := url.Parse(rawURL)
	rc.addr = u.Host
	switch cfg.RedisClient {
	case "go-redis":
		if cfg.Cluster {
			opt, err := redis.ParseClusterURL(rawURL)
			if err != nil {
				return nil, fmt.Errorf("redis url: %w", err)
			}
			opt.PoolSize = 128
			opt.ReadTimeout = 3 * time.Second
			opt.WriteTimeout = 3 * time.Second
			rc.gor = redis.NewClusterClient(opt)
			rc.q = queue.NewGoRedis(rc.gor)
			break
		}
		opt, err := redis.ParseURL(rawURL)
		if err != nil {
			rc.Close()
			return nil, fmt.Errorf("redis url: %w", err)
		}
		opt.PoolSize = 128
		opt.ReadTimeout = 3 * time.Second
		opt.WriteTimeout = 3 * time.Second
		if rc.mini != nil {
			opt.Protocol = 2
		}
		rc.gor = redis.NewClient(opt)
		rc.q = queue.NewGoRedis(rc.gor)
	default:
		opt, err := rueidis.ParseURL(rawURL)
		if err != nil {
			rc.Close()
			return nil, fmt.Errorf("redis url: %w", err)
		}
		// Client-side caching is not used; miniredis needs RESP2 and a
		// single-node client.
		opt.DisableCache = true
		opt.ForceSingleClient = rc.mini != nil
		opt.AlwaysRESP2 = rc.mini != nil
		opt.ConnWriteTimeout = 3 * time.Second
		c, err := rueidis.NewClient(opt)
		if err != nil {
			rc.Close()
			return nil, fmt.Errorf("redis %s: %w", u.Host, err)
		}
		rc.rue = c
		rc.q = queue.NewRueidis(c)
	}
	pctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if err := rc.ping(pctx); err != nil {
		rc.Close()
		return nil, fmt.Errorf("redis %s: %w", u.Host, err)
	}
	return rc, nil
}

func (rc *redisConn) ping(ctx context.Context) error {
	_, err := rc.q.Do(ctx, "PING")
	return err
}

// Close closes the client and stops the embedded server. Idempotent.
func (rc *redisConn) Close() {
	if rc.closed {
		return
	}
	rc.closed = true
	if rc.rue != nil {
		rc.rue.Close()
	}
	if rc.gor != nil {
		_ = rc.gor.Close()
	}
	if rc.mini != nil {
		rc.mini.Close()
	}
}
