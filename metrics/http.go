package metrics

import (
	"log/slog"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/waitroom/waitroom/internal/httperr"
)

// AccessLog is the middleware that counts and times every request by the
// route pattern it was routed by, and logs it to log: at debug level, or
// warn for a 5xx, with the request id fiber's requestid middleware set and
// the query with its credentials redacted. An error from the handlers
// after it is written through httperr.Handler first, so the status is
// known. A nil log logs nothing.
func (m *Metrics) AccessLog(log *slog.Logger) fiber.Handler {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	writeErr := httperr.Handler(log)
	return func(c *fiber.Ctx) error {
		start := time.Now()
		self := c.Route() // the middleware's own: still the route after Next if none matched
		if err := c.Next(); err != nil {
			if herr := writeErr(c, err); herr != nil {
				return herr
			}
		}
		status := c.Response().StatusCode()
		m.observeHTTP(routeLabel(c, self), c.Method(), status, time.Since(start))
		level := slog.LevelDebug
		if status >= 500 {
			level = slog.LevelWarn
		}
		if !log.Enabled(c.UserContext(), level) {
			return nil // spare building the record's attributes
		}
		log.Log(c.UserContext(), level, "request", "method", c.Method(), "path", c.Path(),
			"query", redactQuery(c.Context().QueryArgs().String()), "status", status,
			"ms", time.Since(start).Milliseconds(), "request_id", requestID(c))
		return nil
	}
}

func requestID(c *fiber.Ctx) string {
	id, _ := c.Locals("requestid").(string)
	return id
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

// observeHTTP counts one answered request. route is the pattern it was
// routed by, so the label set stays bounded whatever paths clients send;
// it is a string fixed when the route was registered.
func (m *Metrics) observeHTTP(route, method string, code int, d time.Duration) {
	v, ok := m.httpByRoute.Load(route)
	if !ok {
		v, _ = m.httpByRoute.LoadOrStore(route, &httpSeries{seconds: m.httpSeconds.WithLabelValues(route)})
	}
	rs := v.(*httpSeries)
	rs.seconds.Observe(d.Seconds())
	key := httpCode{methodLabel(method), code}
	c, ok := rs.codes.Load(key)
	if !ok {
		c, _ = rs.codes.LoadOrStore(key, m.httpRequests.WithLabelValues(route, key.method, strconv.Itoa(code)))
	}
	c.(prometheus.Counter).Inc()
}

// httpSeries are one route's series, looked up once. Finding a series by
// its labels hashes them and takes the vector's lock, a cost every request
// would otherwise pay twice.
type httpSeries struct {
	seconds prometheus.Observer
	codes   sync.Map // httpCode → prometheus.Counter
}

// httpCode is a request's method label and status code.
type httpCode struct {
	method string
	code   int
}

// methodLabel is method as a constant string. Labels outlive the request,
// and fiber's method string is a view of a buffer the next request reuses;
// the front handler (httperr.KnownMethods) lets only these methods in, so
// no copy is needed.
func methodLabel(method string) string {
	for _, m := range [...]string{fiber.MethodGet, fiber.MethodHead, fiber.MethodPost, fiber.MethodPut, fiber.MethodDelete,
		fiber.MethodConnect, fiber.MethodOptions, fiber.MethodTrace, fiber.MethodPatch} {
		if method == m {
			return m
		}
	}
	return "other"
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
