package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"
	"github.com/redis/rueidis"
	"github.com/waitroom/waitroom/hub"
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
	// cluster: room events use sharded pub/sub (SPUBLISH and SSUBSCRIBE).
	cluster bool
}

// openRedis connects to cfg.Redis, or starts an embedded miniredis on
// loopback when it is empty.
func openRedis(ctx context.Context, cfg config, log *slog.Logger) (*redisConn, error) {
	rc := &redisConn{cluster: cfg.Cluster}
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
	if cfg.Sentinel != "" {
		if err := rc.openSentinel(cfg); err != nil {
			return nil, err
		}
		return rc, rc.check(ctx, cfg.Redis)
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
	return rc, rc.check(ctx, u.Host)
}

// check pings the new connection; it closes rc when that fails.
func (rc *redisConn) check(ctx context.Context, where string) error {
	pctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if err := rc.ping(pctx); err != nil {
		rc.Close()
		return fmt.Errorf("redis %s: %w", where, err)
	}
	return nil
}

// openSentinel connects through Redis Sentinel with the clients' own
// support: they ask the sentinels for the master of cfg.Sentinel and follow
// it when a failover promotes another.
func (rc *redisConn) openSentinel(cfg config) error {
	addrs, db, err := sentinelAddrs(cfg.Redis)
	if err != nil {
		return err
	}
	rc.addr = addrs[0]
	if cfg.RedisClient == "go-redis" {
		rc.gor = redis.NewFailoverClient(&redis.FailoverOptions{
			MasterName: cfg.Sentinel, SentinelAddrs: addrs, DB: db,
			PoolSize: 128, ReadTimeout: 3 * time.Second, WriteTimeout: 3 * time.Second,
		})
		rc.q = queue.NewGoRedis(rc.gor)
		return nil
	}
	c, err := rueidis.NewClient(rueidis.ClientOption{
		InitAddress: addrs, SelectDB: db, DisableCache: true, ConnWriteTimeout: 3 * time.Second,
		Sentinel: rueidis.SentinelOption{MasterSet: cfg.Sentinel},
	})
	if err != nil {
		return fmt.Errorf("redis sentinel %s: %w", cfg.Sentinel, err)
	}
	rc.rue = c
	rc.q = queue.NewRueidis(c)
	return nil
}

// sentinelAddrs reads "redis://host:port,host:port[/db]" (the scheme is
// optional): the sentinels' addresses and the database number.
func sentinelAddrs(raw string) ([]string, int, error) {
	rest, ok := strings.CutPrefix(raw, "redis://")
	if !ok && strings.Contains(raw, "://") {
		return nil, 0, errors.New("want redis://host:port,host:port[/db] with -redis-sentinel")
	}
	hosts, dbs, _ := strings.Cut(rest, "/")
	db := 0
	if dbs != "" {
		n, err := strconv.Atoi(dbs)
		if err != nil || n < 0 {
			return nil, 0, fmt.Errorf("database %q is not a number", dbs)
		}
		db = n
	}
	var addrs []string
	for _, h := range strings.Split(hosts, ",") {
		if _, port, err := net.SplitHostPort(h); err != nil || port == "" {
			return nil, 0, fmt.Errorf("sentinel address %q is not host:port", h)
		}
		addrs = append(addrs, h)
	}
	return addrs, db, nil
}

// roomBroker is the hub's subscription to the rooms' channels: classic
// pub/sub on a single Redis or behind Sentinel, sharded pub/sub on a
// cluster, where each room's channel lives on the node of its slot.
func (rc *redisConn) roomBroker(log *slog.Logger) hub.Broker {
	switch {
	case rc.cluster && rc.rue != nil:
		return hub.NewRueidisShardedBroker(rc.rue, log)
	case rc.cluster:
		return hub.NewGoRedisShardedBroker(rc.gor.(*redis.ClusterClient), log)
	case rc.rue != nil:
		return hub.NewRueidisBroker(rc.rue, log)
	}
	return hub.NewGoRedisBroker(rc.gor, log)
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
