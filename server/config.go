package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/waitroom/waitroom/internal/redisconn"
	"github.com/waitroom/waitroom/limit"
	"github.com/waitroom/waitroom/queue"
	"github.com/waitroom/waitroom/webhook"
)

// config is everything the server is started with. Flags live only here and
// in main.
type config struct {
	Addr        string
	Redis       string // empty = embedded miniredis
	RedisClient string // rueidis | go-redis
	Cluster     bool   // -redis is a Redis Cluster
	Sentinel    string // master name: -redis lists Sentinel addresses
	Secret      string
	AdminKey    string
	Capacity    queue.Capacity
	TokenTTL    time.Duration
	TokenMax    time.Duration
	// TokenKeep is how long a token record outlives its cap (0: not at all).
	TokenKeep time.Duration
	// JoinBatch is the most joins of a room one Redis call takes together
	// (queue.Options.JoinBatch; 1: each its own).
	JoinBatch   int
	FailMode    string
	DBWait      time.Duration
	Demo        bool // mount the demo protected endpoint (package demo)
	Shutdown    time.Duration
	DrainWindow time.Duration
	MaxConns    int
	MaxPerVis   int
	WSHeartbeat time.Duration
	Origins     []string
	NoJitter    bool
	NoWS        bool
	NoSSE       bool
	OpenRooms   bool
	LogLevel    string
	LogFormat   string // text or json
	// ShowVersion is -version: print the version and exit.
	ShowVersion bool
	DebugAddr   string
	// GCPercent is the collector's target (GOGC) unless the environment
	// sets GOGC.
	GCPercent int
	// JoinRate and JoinBurst limit joins without a valid credential per
	// client address; JoinRate 0 turns the limit off.
	JoinRate       float64
	JoinBurst      int
	TrustedProxies limit.Proxies
	MetricsAddr    string
	PublicMetrics  bool
	// OpsAddr is -ops-addr: /healthz, /readyz and /metrics on a listener of
	// their own (opslistener.go); empty: none.
	OpsAddr string
	// Gateway mode: routes file, inline routes, the built-in proxy's
	// upstream and the waiting page's path prefix.
	RoutesFile    string
	Routes        []string
	Upstream      string
	GatewayPage   string
	RoomsFile     string // -rooms: the rooms as code
	AdminKeysFile string // -admin-keys: labelled admin keys
	PageDir       string // -page-dir: the operator's own waiting page
	// FrameAncestors is who may frame the waiting page (CSP
	// frame-ancestors): 'none', 'self' or origins.
	FrameAncestors string
	Entry          entryConfig // -signing-keys, -issuer, -service-keys (entry.go)
	Webhooks       string      // -webhooks: the deployment's webhook endpoints
	// WebhookAllow are the internal networks webhooks may reach
	// (-webhook-allow-cidrs); every other internal address is refused.
	WebhookAllow webhook.AllowList

	// ReportRetention is how long the room reports keep each minute.
	ReportRetention time.Duration
}

// newFlagSet defines every flag on c.
func newFlagSet(c *config) *flag.FlagSet {
	fs := flag.NewFlagSet("waitroom", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.StringVar(&c.Addr, "addr", "127.0.0.1:8080", "listen address")
	fs.StringVar(&c.Redis, "redis", "", "Redis URL (redis://host:port/db); empty starts an embedded Redis")
	fs.BoolVar(&c.Cluster, "redis-cluster", false, "-redis is a Redis Cluster (more seed nodes as ?addr=host:port)")
	fs.StringVar(&c.Sentinel, "redis-sentinel", "", "master name watched by Redis Sentinel; -redis then lists the sentinels (redis://host:26379,host2:26379[/db])")
	fs.StringVar(&c.RedisClient, "redis-client", "rueidis", "Redis client: rueidis or go-redis")
	fs.StringVar(&c.Secret, "secret", "", "signing secret, at least 16 bytes (required with -redis)")
	fs.StringVar(&c.AdminKey, "admin-key", "", "bearer key for /api/v1/admin and /admin, at least 16 bytes (empty: a random one, printed at start)")
	fs.DurationVar(&c.Capacity.Tick, "tick", 100*time.Millisecond, "admission tick")
	fs.IntVar(&c.Capacity.Batch, "batch", 0, "visitors admitted per tick (0 = derive from db-pool, service-time, safety)")
	fs.IntVar(&c.Capacity.DBPool, "db-pool", 40, "connections of the protected system's DB pool")
	fs.DurationVar(&c.Capacity.ServiceTime, "service-time", 200*time.Millisecond, "time one order holds a DB connection")
	fs.Float64Var(&c.Capacity.Safety, "safety", 0.7, "share of the protected system's capacity to use, in (0, 1]")
	fs.DurationVar(&c.TokenTTL, "token-ttl", 300*time.Second, "entry token idle lifetime, extended by use (verify, touch)")
	fs.DurationVar(&c.TokenMax, "token-max", 900*time.Second, "absolute cap of an entry token's lifetime")
	fs.DurationVar(&c.TokenKeep, "token-retention", queue.DefaultRetention, "how long a token record outlives its cap, so a visitor who comes back reads \"expired\" rather than \"not in queue\" (0: not at all)")
	fs.IntVar(&c.JoinBatch, "join-batch", queue.DefaultJoinBatch, "the most joins (or status reads) of a room that arrive together and go to Redis in one call (1: each a call of its own)")
	fs.StringVar(&c.FailMode, "fail-mode", "open", "protected endpoint while Redis is unreachable: open (local limiter at the admission rate) or closed")
	fs.DurationVar(&c.DBWait, "db-wait", 10*time.Second, "how long a demo order waits for a DB slot before 503 (with -demo)")
	fs.BoolVar(&c.Demo, "demo", false, "mount the demo protected endpoint POST /api/v1/rooms/{room}/orders on a simulated DB pool of -db-pool slots held -service-time each, and its metrics")
	fs.DurationVar(&c.Shutdown, "shutdown-timeout", 15*time.Second, "graceful shutdown limit")
	fs.DurationVar(&c.ReportRetention, "report-retention", 30*24*time.Hour, "how long the room reports keep each minute (admin API …/report)")
	fs.DurationVar(&c.DrainWindow, "drain-window", 5*time.Second, "window over which push clients are told to reconnect on shutdown")
	fs.IntVar(&c.MaxConns, "max-conns", 50000, "push connections per instance")
	fs.IntVar(&c.MaxPerVis, "max-conns-per-visitor", 5, "push connections per visitor")
	fs.DurationVar(&c.WSHeartbeat, "ws-heartbeat", 40*time.Second, "a WebSocket with no message for this long gets a heartbeat message (keeps proxies and the page sure it is alive)")
	fs.Func("origins", "comma-separated origins (https://shop.example.com) whose pages may use the API and push with credentials (CORS, WebSocket Origin)", func(v string) error {
		c.Origins = nil
		for _, o := range strings.Split(v, ",") {
			if o = strings.TrimSpace(o); o == "" {
				continue
			}
			u, err := url.Parse(o)
			if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || (u.Path != "" && u.Path != "/") {
				return fmt.Errorf("origin %q is not scheme://host[:port]", o)
			}
			c.Origins = append(c.Origins, u.Scheme+"://"+u.Host)
		}
		return nil
	})
	fs.BoolVar(&c.NoJitter, "no-jitter", false, "admit each batch at one instant instead of spreading it over the tick (for experiments)")
	fs.BoolVar(&c.NoWS, "no-ws", false, "refuse WebSocket (clients fall back to SSE)")
	fs.BoolVar(&c.NoSSE, "no-sse", false, "refuse SSE (clients fall back to polling)")
	fs.BoolVar(&c.OpenRooms, "open-rooms", false, "let a join create any valid room name (demos); by default rooms exist only once an operator made them")
	fs.StringVar(&c.DebugAddr, "debug-addr", "", "serve Go's pprof on this address (keep it on loopback); empty: off")
	fs.IntVar(&c.GCPercent, "gc-percent", 100, "the garbage collector's target: the heap may grow this many percent over what is live before a collection (GOGC in the environment wins); 50 keeps about 1 KiB less per push connection for more CPU and collector pauses")
	fs.StringVar(&c.LogLevel, "log-level", "info", "debug, info, warn or error")
	fs.StringVar(&c.LogFormat, "log-format", "text", "text (key=value lines) or json (one JSON object per line, for log collectors)")
	fs.BoolVar(&c.ShowVersion, "version", false, "print the version, commit and Go version, and exit")
	fs.Float64Var(&c.JoinRate, "join-rate", 20, "new visitors per second one client address may create, sustained (0 = no limit); a re-join with a valid credential is never limited")
	fs.IntVar(&c.JoinBurst, "join-burst", 300, "new visitors one client address may create at once (a shared NAT of a few hundred people)")
	fs.Func("trusted-proxies", "comma-separated CIDRs of proxies whose X-Forwarded-For (client address) and X-Forwarded-Proto (https) are believed", func(v string) error {
		ps, err := limit.ParseProxies(v)
		c.TrustedProxies = ps
		return err
	})
	fs.StringVar(&c.MetricsAddr, "metrics-addr", "", "serve /metrics only on this address (e.g. 127.0.0.1:9100); empty: on -addr, behind the admin key unless -public-metrics")
	fs.StringVar(&c.OpsAddr, "ops-addr", "", "serve /healthz, /readyz and /metrics on this address too (e.g. 0.0.0.0:9090 for probes and Prometheus on a private port); /metrics then leaves -addr; empty: off")
	fs.BoolVar(&c.PublicMetrics, "public-metrics", false, "serve /metrics on -addr without the admin key (it lists room names)")
	fs.StringVar(&c.RoutesFile, "routes", "", "gateway routes file (YAML or JSON): which host + path patterns each room protects, and bypass rules")
	fs.Func("route", "one gateway route inline, in the routes file's syntax, e.g. '{match: shop.example.com/checkout/*, room: drop}' (repeatable)", func(v string) error {
		c.Routes = append(c.Routes, v)
		return nil
	})
	fs.StringVar(&c.Upstream, "upstream", "", "run the built-in gateway proxy in front of this app (http://host:port); requests outside -gateway-page go there")
	fs.StringVar(&c.GatewayPage, "gateway-page", "/waitroom/", "path prefix where the gateway serves waitroom (the waiting page, its assets and API) on the protected host; gateways route it to waitroom")
	fs.StringVar(&c.RoomsFile, "rooms", "", "rooms file (YAML or JSON) declaring rooms and the settings it pins; applied at start and on SIGHUP")
	fs.StringVar(&c.PageDir, "page-dir", "", "serve the waiting page (index.html and its /assets/) from this directory instead of the built-in one; a file it lacks is the built-in one")
	fs.StringVar(&c.FrameAncestors, "frame-ancestors", "'self'", "who may show the waiting page in a frame: 'none', 'self', or origins separated by spaces (https://shop.example.com) for a shop that embeds it")
	fs.StringVar(&c.AdminKeysFile, "admin-keys", "", "file of labelled admin keys (YAML: label: key), beside -admin-key; the label names who changed what in the audit trail; reread on SIGHUP")
	fs.StringVar(&c.Webhooks, "webhooks", "", "webhooks file (YAML or JSON): a list of {url, secret, events} that get the events of every room, signed per Standard Webhooks; read at start")
	fs.Func("webhook-allow-cidrs", "comma-separated CIDRs or addresses of internal networks webhooks may reach (e.g. 10.1.2.0/24,::1); loopback, private, link-local and other internal addresses are refused otherwise", func(v string) error {
		l, err := webhook.ParseAllowList(v)
		c.WebhookAllow = l
		return err
	})
	entryFlags(fs, &c.Entry)

	return fs
}

// usage prints the flags and their environment names.
func usage(w io.Writer) {
	var c config
	fs := newFlagSet(&c)
	fmt.Fprintln(w, "usage: waitroom [flags]\n       waitroom keys generate|rotate|activate … (entry token key files; waitroom keys -h)\n\nEach flag also reads WAITROOM_<NAME> (e.g. -db-pool: WAITROOM_DB_POOL); a flag given wins; -version is command line only.")
	fs.SetOutput(w)
	fs.PrintDefaults()
}

// parseConfig reads flags, each with a WAITROOM_<NAME> environment fallback
// (flags win). A bad value is one clear error; -h is flag.ErrHelp.
func parseConfig(args []string, getenv func(string) string) (config, error) {
	var c config
	fs := newFlagSet(&c)

	// Environment first, so flags on the command line override it.
	var envErr error
	fs.VisitAll(func(f *flag.Flag) {
		if f.Name == "version" {
			return // a deployment's WAITROOM_VERSION label must not turn the server into a version print
		}
		name := "WAITROOM_" + strings.ToUpper(strings.ReplaceAll(f.Name, "-", "_"))
		if v := getenv(name); v != "" && envErr == nil {
			if err := f.Value.Set(v); err != nil {
				envErr = fmt.Errorf("invalid %s %q: %v", name, v, err)
			}
		}
	})
	if envErr != nil {
		return c, envErr
	}
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	if fs.NArg() > 0 {
		return c, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	if c.ShowVersion {
		return c, nil // nothing else is read
	}
	return c, c.validate()
}

func (c config) validate() error {
	if _, _, err := net.SplitHostPort(c.Addr); err != nil {
		return fmt.Errorf("invalid -addr %q: %v", c.Addr, err)
	}
	if c.PageDir != "" {
		if _, err := os.Stat(filepath.Join(c.PageDir, "index.html")); err != nil {
			return fmt.Errorf("-page-dir %q: needs an index.html: %v", c.PageDir, err)
		}
	}
	for _, check := range []func() error{c.validateRedis, c.validateLimits, c.validateServing} {
		if err := check(); err != nil {
			return err
		}
	}
	return nil
}

// validateRedis checks the Redis connection, the secret and the admin key.
func (c config) validateRedis() error {
	if c.Sentinel != "" {
		if c.Redis == "" || c.Cluster {
			return errors.New("-redis-sentinel needs -redis with the sentinel addresses, and no -redis-cluster")
		}
		if _, _, err := redisconn.SentinelAddrs(c.Redis); err != nil {
			return fmt.Errorf("invalid -redis %q: %v", c.Redis, err)
		}
	}
	if c.Redis != "" {
		u, err := url.Parse(c.Redis)
		if c.Sentinel != "" {
			u, err = url.Parse("redis://sentinels") // checked by sentinelAddrs
		}
		if err != nil || (u.Scheme != "redis" && u.Scheme != "rediss") || u.Host == "" {
			return fmt.Errorf("invalid -redis %q: want redis://host:port[/db]", c.Redis)
		}
		if c.Secret == "" {
			return errors.New("-secret is required with an external -redis so every instance signs alike")
		}
	}
	if c.Cluster && c.Redis == "" {
		return errors.New("-redis-cluster needs -redis")
	}
	if c.RedisClient != "rueidis" && c.RedisClient != "go-redis" {
		return fmt.Errorf("invalid -redis-client %q: want rueidis or go-redis", c.RedisClient)
	}
	if c.Secret != "" && len(c.Secret) < 16 {
		return errors.New("invalid -secret: at least 16 bytes")
	}
	if c.AdminKey != "" && len(c.AdminKey) < 16 {
		return errors.New("invalid -admin-key: at least 16 bytes")
	}
	return nil
}

// validateLimits checks capacity, lifetimes and connection limits.
func (c config) validateLimits() error {
	if c.Capacity.DBPool < 1 || c.Capacity.ServiceTime <= 0 {
		return errors.New("invalid -db-pool or -service-time: the simulated database needs at least 1 connection and a positive service time")
	}
	if err := c.Capacity.Validate(); err != nil {
		return fmt.Errorf("invalid capacity: %v", err)
	}
	switch {
	case c.TokenTTL < time.Second || c.TokenTTL > 24*time.Hour:
		return errors.New("invalid -token-ttl: between 1s and 24h")
	case c.TokenMax < c.TokenTTL || c.TokenMax > 7*24*time.Hour:
		return errors.New("invalid -token-max: at least -token-ttl and at most 168h")
	case c.TokenKeep < 0 || c.TokenKeep > 24*time.Hour:
		return errors.New("invalid -token-retention: between 0 and 24h")
	case c.JoinBatch < 1 || c.JoinBatch > queue.MaxJoinBatch:
		return fmt.Errorf("invalid -join-batch: between 1 and %d", queue.MaxJoinBatch)
	case c.ReportRetention < time.Hour || c.ReportRetention > 400*24*time.Hour:
		return errors.New("invalid -report-retention: between 1h and 9600h")
	case c.FailMode != "open" && c.FailMode != "closed":
		return fmt.Errorf("invalid -fail-mode %q: want open or closed", c.FailMode)
	case c.DBWait < 0 || c.DBWait > 10*time.Minute:
		return errors.New("invalid -db-wait: between 0 and 10m")
	case c.Shutdown < time.Second:
		return errors.New("invalid -shutdown-timeout: at least 1s")
	case c.DrainWindow < 0 || c.DrainWindow >= c.Shutdown:
		return errors.New("invalid -drain-window: at least 0 and less than -shutdown-timeout")
	case c.MaxConns < 1:
		return errors.New("invalid -max-conns: at least 1")
	case c.MaxPerVis < 1:
		return errors.New("invalid -max-conns-per-visitor: at least 1")
	case c.GCPercent < 10 || c.GCPercent > 1000:
		return errors.New("invalid -gc-percent: between 10 and 1000")
	case c.WSHeartbeat < 100*time.Millisecond || c.WSHeartbeat > 10*time.Minute:
		return errors.New("invalid -ws-heartbeat: between 100ms and 10m")
	case c.JoinRate < 0 || c.JoinRate > 1e6:
		return errors.New("invalid -join-rate: between 0 (off) and 1000000 per second")
	case c.JoinRate > 0 && (c.JoinBurst < 1 || c.JoinBurst > 1e6):
		return errors.New("invalid -join-burst: between 1 and 1000000")
	}
	return nil
}

// validateServing checks the listeners, the gateway page, logging and the
// frame policy.
func (c config) validateServing() error {
	if c.MetricsAddr != "" {
		if _, _, err := net.SplitHostPort(c.MetricsAddr); err != nil {
			return fmt.Errorf("invalid -metrics-addr %q: %v", c.MetricsAddr, err)
		}
	}
	if c.OpsAddr != "" {
		if _, _, err := net.SplitHostPort(c.OpsAddr); err != nil {
			return fmt.Errorf("invalid -ops-addr %q: %v", c.OpsAddr, err)
		}
		if c.OpsAddr == c.Addr || c.OpsAddr == c.MetricsAddr {
			if _, port, _ := net.SplitHostPort(c.OpsAddr); port != "0" {
				return fmt.Errorf("invalid -ops-addr %q: the operations listener needs an address of its own, not that of -addr or -metrics-addr", c.OpsAddr)
			}
		}
	}
	if !strings.HasPrefix(c.GatewayPage, "/") || !strings.HasSuffix(c.GatewayPage, "/") || strings.ContainsAny(c.GatewayPage, "?#*") {
		return fmt.Errorf("invalid -gateway-page %q: a path prefix such as /waitroom/", c.GatewayPage)
	}
	if c.Upstream != "" && c.GatewayPage == "/" {
		return errors.New("invalid -gateway-page: with -upstream it must be a prefix such as /waitroom/ (everything else goes to the upstream)")
	}
	switch c.LogLevel {
	case "debug", "info", "warn", "error":
	default:
		return fmt.Errorf("invalid -log-level %q", c.LogLevel)
	}
	if !validAncestors(c.FrameAncestors) {
		return fmt.Errorf("invalid -frame-ancestors %q: 'none', 'self', or origins (https://shop.example.com) separated by spaces", c.FrameAncestors)
	}
	if c.LogFormat != "text" && c.LogFormat != "json" {
		return fmt.Errorf("invalid -log-format %q: text or json", c.LogFormat)
	}
	return nil
}
