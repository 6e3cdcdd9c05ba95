// Package healthrelay turns a gateway's access-log lines into samples of
// an origin's health for waitroom's autopilot: it listens for syslog
// datagrams on loopback, one per request the gateway passed to the app on
// a guarded route ("<room> <upstream response time> <upstream status>",
// as the nginx recipe's log_format waitroom_health writes them), and sends
// them to the rooms' health endpoint in batches through an entry.Reporter.
// It is for gateways that cannot call out after a response themselves
// (docs/gateway.md); the built-in proxy needs none of it.
package healthrelay

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/waitroom/waitroom/entry"
	"github.com/waitroom/waitroom/wire"
)

// Relay reads syslog datagrams from a UDP socket and records a sample for
// each line it can read.
type Relay struct {
	conn    net.PacketConn
	rep     *entry.Reporter
	log     *slog.Logger
	skipped atomic.Int64
}

// Listen opens addr (UDP, e.g. 127.0.0.1:5140) for lines to rep.
func Listen(addr string, rep *entry.Reporter, log *slog.Logger) (*Relay, error) {
	c, err := net.ListenPacket("udp", addr)
	if err != nil {
		return nil, err
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Relay{conn: c, rep: rep, log: log}, nil
}

// Addr is the address the relay listens on.
func (r *Relay) Addr() string { return r.conn.LocalAddr().String() }

// Skipped is how many lines could not be read as a sample.
func (r *Relay) Skipped() int64 { return r.skipped.Load() }

// Run reads until ctx ends, then closes the socket.
func (r *Relay) Run(ctx context.Context) error {
	stop := context.AfterFunc(ctx, func() { r.conn.Close() })
	defer stop()
	buf := make([]byte, 8192)
	for {
		n, _, err := r.conn.ReadFrom(buf)
		if err != nil {
			if ctx.Err() != nil || errors.Is(err, net.ErrClosed) {
				return nil
			}
			return err
		}
		room, lat, ok, good := ParseLine(string(buf[:n]))
		if !good {
			if r.skipped.Add(1) == 1 {
				r.log.Warn("healthrelay: a line that is no sample (the first; the others are counted)", "line", string(buf[:n]))
			}
			continue
		}
		r.rep.Record(room, lat, ok)
	}
}

// ParseLine reads one log line, with or without its syslog header (the
// header ends at the first ": "): the room, the upstream's response time
// and whether it succeeded. good is false for a line that is no sample: no
// room (a route nobody guards), a request the upstream never answered with
// a time ("-"), or a malformed one.
//
// nginx writes, for a request that went to several servers, the times and
// statuses separated by ", " (attempts) and " : " (internal redirects, the
// recipe's post_action among them): the first group is the app's, and in
// it the time is the sum of the attempts and the status the last one's. A
// 5xx, or a status nginx made up because no server answered (502, 504), is
// a failure.
func ParseLine(line string) (room string, latency time.Duration, ok, good bool) {
	line = strings.TrimSpace(line)
	if strings.HasPrefix(line, "<") {
		i := strings.Index(line, ": ")
		if i < 0 {
			return "", 0, false, false
		}
		line = line[i+2:]
	}
	room, rest, found := strings.Cut(line, " ")
	if !found || !wire.ValidRoom(room) {
		return "", 0, false, false
	}
	// rest: "<times> <statuses>"; each may hold ", " and " : ".
	times, statuses, found := splitFields(rest)
	if !found {
		return "", 0, false, false
	}
	var secs float64
	for _, t := range strings.Split(firstGroup(times), ", ") {
		v, err := strconv.ParseFloat(strings.TrimSpace(t), 64)
		if err != nil || v < 0 {
			return "", 0, false, false
		}
		secs += v
	}
	sts := strings.Split(firstGroup(statuses), ", ")
	status, err := strconv.Atoi(strings.TrimSpace(sts[len(sts)-1]))
	if err != nil {
		return "", 0, false, false
	}
	return room, time.Duration(secs * float64(time.Second)), status < 500, true
}

// splitFields cuts "<times> <statuses>" where each may contain ", " and
// " : ": the times end at the first space that is not part of one of
// those separators.
func splitFields(s string) (times, statuses string, ok bool) {
	for i := 0; i < len(s); i++ {
		if s[i] != ' ' {
			continue
		}
		if i > 0 && s[i-1] == ',' || i+1 < len(s) && s[i+1] == ':' || i > 0 && s[i-1] == ':' {
			continue
		}
		return s[:i], strings.TrimSpace(s[i+1:]), true
	}
	return "", "", false
}

func firstGroup(s string) string {
	g, _, _ := strings.Cut(s, " : ")
	return g
}
