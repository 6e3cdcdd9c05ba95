package main

import (
	"context"
	"log/slog"
	"net/url"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/waitroom/waitroom/internal/httperr"
	"github.com/waitroom/waitroom/queue"
)

// instrumented measures every Redis call the queue makes: latency by
// operation and failures.
type instrumented struct {
	next queue.Redis
	m    *metrics
}

func (r instrumented) observe(op string, start time.Time, err error) {
	rs := r.m.redisOp(op)
	rs.seconds.Observe(time.Since(start).Seconds())
	if err != nil {
		rs.fails.Inc()
	}
}

func (r instrumented) Eval(ctx context.Context, s *queue.Script, keys []string, args ...string) (any, error) {
	start := time.Now()
	v, err := r.next.Eval(ctx, s, keys, args...)
	r.observe(s.Name, start, err)
	return v, err
}

func (r instrumented) Do(ctx context.Context, args ...string) (any, error) {
	start := time.Now()
	v, err := r.next.Do(ctx, args...)
	op := "unknown"
	if len(args) > 0 {
		op = strings.ToLower(args[0])
	}
	r.observe(op, start, err)
	return v, err
}

func requestID(c *fiber.Ctx) string {
	id, _ := c.Locals("requestid").(string)
	return id
}

// accessLog logs each request at debug level, and failed ones at warn,
// with the request id.
func (s *server) accessLog(c *fiber.Ctx) error {
	start := time.Now()
	self := c.Route() // the middleware's own: still the route after Next if none matched
	err := c.Next()
	if err != nil {
		// Let the error handler write the response first so the status is
		// known.
		if herr := httperr.Handler(s.log)(c, err); herr != nil {
			return herr
		}
	}
	status := c.Response().StatusCode()
	s.metrics.observeHTTP(routeLabel(c, self), c.Method(), status, time.Since(start))
	level := slog.LevelDebug
	if status >= 500 {
		level = slog.LevelWarn
	}
	if !s.log.Enabled(c.UserContext(), level) {
		return nil // spare building the record's attributes
	}
	s.log.Log(c.UserContext(), level, "request", "method", c.Method(), "path", c.Path(),
		"query", redactQuery(c.Context().QueryArgs().String()), "status", status,
		"ms", time.Since(start).Milliseconds(), "request_id", requestID(c))
	return nil
}

// routeLabel is the pattern the request was routed by (/api/v1/rooms/:room/join),
// or "unmatched" when no route took it: a label that stays bounded
// whatever paths clients make up.
func routeLabel(c *fiber.Ctx, self *fiber.Route) string {
	r := c.Route()
	if r == self || len(r.Handlers) == 0 {
		return "unmatched"
	}
	return r.Path
}

// secretParams are query parameters that carry a credential: push clients
// that cannot send headers put the visitor credential or a connect ticket
// there. Their values never reach a log.
var secretParams = []string{"visitor", "ticket"}

// redactQuery returns a raw query string with the values of secretParams
// replaced by "redacted".
func redactQuery(q string) string {
	if q == "" {
		return ""
	}
	parts := strings.Split(q, "&")
	for i, p := range parts {
		name, _, _ := strings.Cut(p, "=")
		if u, err := url.QueryUnescape(name); err == nil {
			name = u
		}
		for _, sp := range secretParams {
			if strings.EqualFold(name, sp) {
				parts[i] = sp + "=redacted"
			}
		}
	}
	return strings.Join(parts, "&")
}
