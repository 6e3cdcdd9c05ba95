package main

import (
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/gofiber/fiber/v2/middleware/adaptor"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/waitroom/waitroom/hub"
	"github.com/waitroom/waitroom/queue"
	"github.com/waitroom/waitroom/visit"
)

// metrics are the instance's Prometheus metrics (names waitroom_*). Each
// server has its own registry so several can live in one test process.
type metrics struct {
	reg           *prometheus.Registry
	polls         *prometheus.CounterVec
	redisErr      prometheus.Counter
	deliverLag    *prometheus.HistogramVec
	lagWS, lagSSE prometheus.Observer // deliverLag's two series, looked up once
	failOpen      *prometheus.CounterVec
	admissions    *prometheus.CounterVec
	redisCalls    *prometheus.HistogramVec
	redisFails    *prometheus.CounterVec
	restored      *prometheus.CounterVec
	httpRequests  *prometheus.CounterVec   // by route pattern, method, code
	httpSeconds   *prometheus.HistogramVec // by route pattern
	httpByRoute   sync.Map                 // route pattern → *httpSeries
	redisOps      sync.Map                 // op → *redisSeries
	wsHeartbeats  atomic.Int64             // heartbeats queued to WebSocket connections
}

// newMetrics makes the counters and histograms; watch adds the gauges that
// read live state, once what they read exists.
func newMetrics(b build) *metrics {
	m := &metrics{reg: prometheus.NewRegistry()}
	m.reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	m.polls = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "waitroom_polls_total", Help: "Status polls by how they were answered (redis or memory)."}, []string{"answer"})
	m.redisErr = prometheus.NewCounter(prometheus.CounterOpts{Name: "waitroom_redis_errors_total", Help: "Redis calls from requests that failed."})
	m.deliverLag = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name: "waitroom_delivery_lag_seconds", Help: "Admitted push delivery: write time minus notBefore.",
		Buckets: []float64{.001, .002, .005, .01, .02, .05, .1, .25, .5, 1, 2, 3, 5},
	}, []string{"transport"})
	m.failOpen = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "waitroom_fail_open_total", Help: "Protected requests decided without Redis, by outcome."}, []string{"outcome"})
	m.admissions = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "waitroom_admissions_total", Help: "Visitors admitted by this instance's ticks."}, []string{"room"})
	m.redisCalls = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name: "waitroom_redis_seconds", Help: "Redis call latency by operation.",
		Buckets: []float64{.0002, .0005, .001, .002, .005, .01, .025, .05, .1, .5, 2},
	}, []string{"op"})
	m.redisFails = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "waitroom_redis_call_errors_total", Help: "Redis calls that failed, by operation."}, []string{"op"})
	m.restored = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "waitroom_redis_state_restored_total", Help: "State Redis had lost that this instance put back, by kind (settings, tickets, removed, tokens)."}, []string{"what"})
	m.lagWS, m.lagSSE = m.deliverLag.WithLabelValues("ws"), m.deliverLag.WithLabelValues("sse")
	m.httpRequests = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "waitroom_http_requests_total", Help: "HTTP requests answered, by route pattern, method and status code."}, []string{"route", "method", "code"})
	m.httpSeconds = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name: "waitroom_http_request_duration_seconds", Help: "Time to answer an HTTP request (push connections: until the upgrade), by route pattern.",
		Buckets: []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 10},
	}, []string{"route"})
	buildInfo := prometheus.NewGauge(prometheus.GaugeOpts{Name: "waitroom_build_info", Help: "1, labelled with the version, VCS revision and Go version of this binary.",
		ConstLabels: prometheus.Labels{"version": b.Version, "revision": b.Revision, "goversion": b.GoVersion}})
	buildInfo.Set(1)
	m.reg.MustRegister(m.polls, m.redisErr, m.deliverLag, m.failOpen, m.admissions, m.redisCalls, m.redisFails, m.restored,
		m.httpRequests, m.httpSeconds, buildInfo)
	m.zero()
	return m
}

// zero creates every series whose labels are known before the first
// event, so a rate or an alert reads 0 from the start rather than nothing.
func (m *metrics) zero() {
	for _, v := range []string{"redis", "memory"} {
		m.polls.WithLabelValues(v)
	}
	for _, v := range []string{"closed", "used", "limited", "admitted"} {
		m.failOpen.WithLabelValues(v)
	}
	for _, v := range []string{"settings", "tickets", "removed", "tokens"} {
		m.restored.WithLabelValues(v)
	}
	for _, op := range queue.ScriptNames() {
		m.redisFails.WithLabelValues(op)
	}
}

// observeHTTP counts one answered request. route is the pattern it was
// routed by, so the label set stays bounded whatever paths clients send;
// it is a string fixed when the route was registered.
func (m *metrics) observeHTTP(route, method string, code int, d time.Duration) {
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

// redisSeries are one Redis operation's series, looked up once.
type redisSeries struct {
	seconds prometheus.Observer
	fails   prometheus.Counter
}

// redisOp returns op's series. The ops are script names and command names:
// a fixed set.
func (m *metrics) redisOp(op string) *redisSeries {
	if v, ok := m.redisOps.Load(op); ok {
		return v.(*redisSeries)
	}
	v, _ := m.redisOps.LoadOrStore(op, &redisSeries{seconds: m.redisCalls.WithLabelValues(op), fails: m.redisFails.WithLabelValues(op)})
	return v.(*redisSeries)
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

// hubStats is what the metrics read of the hub.
type hubStats interface {
	Stats() hub.Stats
	Ready() bool // subscribed and running
}

// roomSnapshots is what the metrics read of the room cache.
type roomSnapshots interface {
	snapshot() map[string]queue.RoomStats
}

// watch registers the gauges and counters read from the poll cache, the
// hub and the room cache.
func (m *metrics) watch(polls *visit.PollCache, h hubStats, rooms roomSnapshots, maxConns int) {
	gauge := func(name, help string, f func() float64) prometheus.Collector {
		return prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: name, Help: help}, f)
	}
	m.reg.MustRegister(roomCollector{rooms},
		gauge("waitroom_max_connections", "Push connections this instance may hold (-max-conns).", func() float64 { return float64(maxConns) }),
		gauge("waitroom_pubsub_up", "1 while this instance's Redis pub/sub subscription serves its rooms, else 0.", func() float64 {
			if h.Ready() {
				return 1
			}
			return 0
		}),
		gauge("waitroom_poll_cache_entries", "Poll answers held in memory.", func() float64 { return float64(polls.Len()) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "waitroom_connections", Help: "Open push connections.", ConstLabels: prometheus.Labels{"transport": "ws"}},
			func() float64 { return float64(h.Stats().Conns["ws"]) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "waitroom_connections", Help: "Open push connections.", ConstLabels: prometheus.Labels{"transport": "sse"}},
			func() float64 { return float64(h.Stats().Conns["sse"]) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "waitroom_push_messages_total", Help: "Messages written to push connections."},
			func() float64 { return float64(h.Stats().Sent) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "waitroom_ws_heartbeats_total", Help: "Heartbeat messages queued to quiet WebSocket connections."},
			func() float64 { return float64(m.wsHeartbeats.Load()) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "waitroom_push_dropped_slow_total", Help: "Push connections closed as slow consumers."},
			func() float64 { return float64(h.Stats().DroppedSlow) }),
	)
}

// observeDelivery runs for every admission pushed: the series of the two
// transports are looked up once, not at each call.
func (m *metrics) observeDelivery(kind string, lag time.Duration) {
	o := m.lagSSE
	if kind == "ws" {
		o = m.lagWS
	}
	o.Observe(lag.Seconds())
}

// handler serves the text exposition format.
func (m *metrics) handler() fiber.Handler {
	return adaptor.HTTPHandler(promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{}))
}

var (
	waitingDesc = prometheus.NewDesc("waitroom_waiting", "Visitors waiting in a room (queue and pre-queue), as of the last refresh.", []string{"room"}, nil)
	activeDesc  = prometheus.NewDesc("waitroom_active_tokens", "Live entry tokens of a room, as of the last refresh.", []string{"room"}, nil)
	rateDesc    = prometheus.NewDesc("waitroom_admission_rate", "Measured admissions per second of a room (smoothed).", []string{"room"}, nil)
)

// roomCollector reports per-room figures from the room cache, so a scrape
// costs no Redis call.
type roomCollector struct{ rooms roomSnapshots }

func (roomCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- waitingDesc
	ch <- activeDesc
	ch <- rateDesc
}

func (rc roomCollector) Collect(ch chan<- prometheus.Metric) {
	for room, st := range rc.rooms.snapshot() {
		ch <- prometheus.MustNewConstMetric(waitingDesc, prometheus.GaugeValue, float64(st.Waiting+st.PreQueue), room)
		ch <- prometheus.MustNewConstMetric(activeDesc, prometheus.GaugeValue, float64(st.ActiveTokens), room)
		ch <- prometheus.MustNewConstMetric(rateDesc, prometheus.GaugeValue, st.Rate, room)
	}
}
