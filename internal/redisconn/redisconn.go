// Package redisconn connects waitroom to Redis as its flags say: one
// server, Sentinel or Cluster, through rueidis or go-redis, or an embedded
// miniredis on loopback when no address is given. It adapts either client
// to the seam every package calls Redis through (rediscall.Redis:
// NewRueidis, NewGoRedis) and hands the hub its brokers; with those
// brokers (package hub), it is the only code that sees client library
// types.
package redisconn

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
	"github.com/waitroom/waitroom/internal/lograte"
	"github.com/waitroom/waitroom/internal/rediscall"
)

// Options say which Redis to connect to.
type Options struct {
	// URL is redis://host:port[/db] (rediss:// for TLS), or with Sentinel
	// the sentinels, redis://host:port,host:port[/db]. Empty starts an
	// embedded miniredis.
	URL string
	// Sentinel is the name of the master set Sentinel watches; empty
	// connects to URL directly.
	Sentinel string
	// Cluster connects to a Redis Cluster; room events then use sharded
	// pub/sub.
	Cluster bool
	// Client is "go-redis" or "rueidis" (the default).
	Client string
}

// Conn is an open Redis: the queue's seam, and the library client the
// hub's brokers are built on.
type Conn struct {
	q      rediscall.Redis
	rue    rueidis.Client
	gor    redis.UniversalClient
	mini   *miniredis.Miniredis
	addr   string
	closed bool
	// cluster: room events use sharded pub/sub (SPUBLISH and SSUBSCRIBE).
	cluster bool
}

// Open connects to o.URL, or starts an embedded miniredis on loopback
// when it is empty, and checks that it answers a PING within 5 s.
func Open(ctx context.Context, o Options, log *slog.Logger) (*Conn, error) {
	if o.Client == "go-redis" {
		// The library's own lines (its pool's failed dials, one per call
		// while Redis is down) go to the log, not to stderr, at most one
		// per 10 s. Its logger is the package's: the last Open's wins.
		redis.SetLogger(goRedisLog{lograte.NewRepeats(log, slog.LevelWarn, nil)})
	}
	rc := &Conn{cluster: o.Cluster}
	rawURL := o.URL
	if rawURL == "" {
		m := miniredis.NewMiniRedis()
		if err := m.StartAddr("127.0.0.1:0"); err != nil {
			return nil, fmt.Errorf("embedded redis: %w", err)
		}
		rc.mini = m
		rawURL = "redis://" + m.Addr()
		log.Info("embedded redis started (state lives in this process only)", "addr", m.Addr())
	}
	if o.Sentinel != "" {
		if err := rc.openSentinel(o); err != nil {
			return nil, err
		}
		return rc, rc.check(ctx, o.URL)
	}
	u, err := url.Parse(rawURL)
	if err != nil {
		rc.Close()
		return nil, fmt.Errorf("redis url: %w", err)
	}
	rc.addr = u.Host
	switch o.Client {
	case "go-redis":
		if o.Cluster {
			opt, err := redis.ParseClusterURL(rawURL)
			if err != nil {
				return nil, fmt.Errorf("redis url: %w", err)
			}
			opt.PoolSize = 128
			opt.ReadTimeout = 3 * time.Second
			opt.WriteTimeout = 3 * time.Second
			rc.gor = redis.NewClusterClient(opt)
			rc.q = NewGoRedis(rc.gor)
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
		rc.q = NewGoRedis(rc.gor)
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
		rc.q = NewRueidis(c)
	}
	return rc, rc.check(ctx, u.Host)
}

// check pings the new connection; it closes rc when that fails.
func (rc *Conn) check(ctx context.Context, where string) error {
	pctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if err := rc.Ping(pctx); err != nil {
		rc.Close()
		return fmt.Errorf("redis %s: %w", where, err)
	}
	return nil
}

// openSentinel connects through Redis Sentinel with the clients' own
// support: they ask the sentinels for the master of o.Sentinel and follow
// it when a failover promotes another.
func (rc *Conn) openSentinel(o Options) error {
	addrs, db, err := SentinelAddrs(o.URL)
	if err != nil {
		return err
	}
	rc.addr = addrs[0]
	if o.Client == "go-redis" {
		rc.gor = redis.NewFailoverClient(&redis.FailoverOptions{
			MasterName: o.Sentinel, SentinelAddrs: addrs, DB: db,
			PoolSize: 128, ReadTimeout: 3 * time.Second, WriteTimeout: 3 * time.Second,
		})
		rc.q = NewGoRedis(rc.gor)
		return nil
	}
	c, err := rueidis.NewClient(rueidis.ClientOption{
		InitAddress: addrs, SelectDB: db, DisableCache: true, ConnWriteTimeout: 3 * time.Second,
		Sentinel: rueidis.SentinelOption{MasterSet: o.Sentinel},
	})
	if err != nil {
		return fmt.Errorf("redis sentinel %s: %w", o.Sentinel, err)
	}
	rc.rue = c
	rc.q = NewRueidis(c)
	return nil
}

// SentinelAddrs reads "redis://host:port,host:port[/db]" (the scheme is
// optional): the sentinels' addresses and the database number.
func SentinelAddrs(raw string) ([]string, int, error) {
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

// RoomBroker is the hub's subscription to the rooms' channels: classic
// pub/sub on a single Redis or behind Sentinel, sharded pub/sub on a
// cluster, where each room's channel lives on the node of its slot.
func (rc *Conn) RoomBroker(log *slog.Logger) hub.Broker {
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

// Broker is classic pub/sub on the same client, for channels that are not
// a room's (the gateway's revocations).
func (rc *Conn) Broker(log *slog.Logger) hub.Broker {
	if rc.rue != nil {
		return hub.NewRueidisBroker(rc.rue, log)
	}
	return hub.NewGoRedisBroker(rc.gor, log)
}

// Redis is the queue's seam onto this connection.
func (rc *Conn) Redis() rediscall.Redis { return rc.q }

// Do runs one command.
func (rc *Conn) Do(ctx context.Context, args ...string) (any, error) { return rc.q.Do(ctx, args...) }

// Ping checks that Redis answers.
func (rc *Conn) Ping(ctx context.Context) error {
	_, err := rc.q.Do(ctx, "PING")
	return err
}

// Close closes the client and stops the embedded server. Idempotent.
func (rc *Conn) Close() {
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

// goRedisLog writes what go-redis logs through a Repeats.
type goRedisLog struct{ r *lograte.Repeats }

func (g goRedisLog) Printf(_ context.Context, format string, v ...any) {
	g.r.Log("redis client (go-redis)", "said", fmt.Sprintf(format, v...))
}
