package main

import (
	"fmt"
	"io"
	"net"
	"net/url"
	"sort"
	"strings"
)

// writeBanner prints, once the listeners are open, where this instance
// answers: the waiting page, the probes, the metrics, the entry tokens'
// keys and the dashboard, at the paths they have in this mode (under
// -gateway-page with -upstream, where every other path is the app's), and
// the operations listeners. invented is the admin key newServer made up
// for this run, printed so the dashboard can be opened; "" when the
// operator gave keys.
func (s *server) writeBanner(w io.Writer, addr net.Addr, ops []opsListener, invented string) {
	base := "http://" + addr.String() + s.ownPath()
	var b strings.Builder
	fmt.Fprintf(&b, "waitroom listening on %s%s (redis: %s, client: %s, batch %d per %v)\n",
		base, bannerPage(s.ownPath(), s.cfg.OpenRooms, s.rooms.SettingsRooms()), redisLabel(s.cfg), s.cfg.RedisClient, s.cfg.Capacity.BatchSize(), s.cfg.Capacity.Tick)
	if s.cfg.Upstream != "" {
		fmt.Fprintf(&b, "gateway: every path outside %s goes to %s (its /healthz and /metrics too)\n", s.cfg.GatewayPage, s.cfg.Upstream)
	}
	var opsURL, metricsURL string
	for _, o := range ops {
		switch o.name {
		case "-ops-addr":
			opsURL = "http://" + o.ln.Addr().String()
		case "-metrics-addr":
			metricsURL = "http://" + o.ln.Addr().String() + "/metrics"
		}
	}
	if opsURL != "" {
		fmt.Fprintf(&b, "operations: %s/healthz, /readyz and /metrics\n", opsURL)
	} else {
		fmt.Fprintf(&b, "health: %shealthz and %sreadyz\n", base, base)
	}
	switch {
	case opsURL != "":
		// on the operations listener, above
	case metricsURL != "":
		fmt.Fprintf(&b, "metrics: %s\n", metricsURL)
	case s.cfg.PublicMetrics:
		fmt.Fprintf(&b, "metrics: %smetrics\n", base)
	default:
		fmt.Fprintf(&b, "metrics: %smetrics (with an admin key)\n", base)
	}
	fmt.Fprintf(&b, "entry token keys (JWKS): %s.well-known/jwks.json\n", base)
	if invented != "" {
		fmt.Fprintf(&b, "admin dashboard: %sadmin (admin key for this run: %s)\n", base, invented)
	} else {
		fmt.Fprintf(&b, "admin dashboard: %sadmin\n", base)
	}
	_, _ = io.WriteString(w, b.String())
}

// ownPath is where waitroom's own paths start on its main listener: the
// root, or -gateway-page with -upstream (the root is then the app's).
func (s *server) ownPath() string {
	if s.cfg.Upstream != "" {
		return s.cfg.GatewayPage
	}
	return "/"
}

// bannerPage is the waiting page the start-up line points at, below base
// (see ownPath), one that answers: any room with -open-rooms, else the
// first room that exists, else none (rooms are made in the dashboard or the
// rooms file).
func bannerPage(base string, openRooms bool, rooms []string) string {
	if openRooms {
		return "?room=demo"
	}
	if len(rooms) == 0 {
		return "?room=NAME for a room made in " + base + "admin or the rooms file"
	}
	sort.Strings(rooms)
	return "?room=" + url.QueryEscape(rooms[0])
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
