// Package metrics holds an instance's Prometheus metrics (names
// waitroom_*): the counters and histograms the other packages feed, the
// gauges that read live state at scrape time, the Redis wrapper that
// times each call, and the access log middleware with its HTTP series.
//
// The series names, labels and help texts are a contract: the alert rules
// and the dashboard under deploy/ read them.
package metrics

import (
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/waitroom/waitroom/internal/rediscall"
	"github.com/waitroom/waitroom/queue"
)

// Build is what a binary says it is; waitroom_build_info carries it.
type Build struct {
	Version, Revision, GoVersion string
}

// Metrics are one instance's series, on a registry of its own so several
// instances can live in one process. Its methods are safe for concurrent
// use.
type Metrics struct {
	reg           *prometheus.Registry
	handler       http.Handler
	pollRedis     prometheus.Counter // polls' two series, looked up once
	pollMemory    prometheus.Counter
	redisErr      prometheus.Counter
	deliverLag    *prometheus.HistogramVec
	lagWS, lagSSE prometheus.Observer // deliverLag's two series, looked up once
	failOpen      *prometheus.CounterVec
	admissions    *prometheus.CounterVec
	passed        *prometheus.CounterVec // visitors let in on the spot (activation busy)
	queueing      *prometheus.GaugeVec   // rooms with activation busy: 1 queueing, 0 passing
	queueingSince *prometheus.GaugeVec   // … since when (Unix seconds)
	redisCalls    *prometheus.HistogramVec
	redisFails    *prometheus.CounterVec
	restored      *prometheus.CounterVec
	hooksDropped  *prometheus.CounterVec
	httpRequests  *prometheus.CounterVec   // by route pattern, method, code
	httpSeconds   *prometheus.HistogramVec // by route pattern
	httpByRoute   sync.Map                 // route pattern → *httpSeries
	redisOps      sync.Map                 // op → *redisSeries
	wsHeartbeats  atomic.Int64             // heartbeats queued to WebSocket connections
	autopilot     autopilotSeries
}

// New makes the registry with the Go and process collectors, the build
// info and the counters and histograms; Watch adds the gauges that read
// live state once what they read exists (the demo registers its own series).
func New(b Build) *Metrics {
	m := &Metrics{reg: prometheus.NewRegistry()}
	m.reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	polls := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "waitroom_polls_total", Help: "Status polls by how they were answered (redis or memory)."}, []string{"answer"})
	m.pollRedis, m.pollMemory = polls.WithLabelValues("redis"), polls.WithLabelValues("memory")
	m.redisErr = prometheus.NewCounter(prometheus.CounterOpts{Name: "waitroom_redis_errors_total", Help: "Redis calls from requests that failed."})
	m.deliverLag = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name: "waitroom_delivery_lag_seconds", Help: "Admitted push delivery: write time minus notBefore.",
		Buckets: []float64{.001, .002, .005, .01, .02, .05, .1, .25, .5, 1, 2, 3, 5},
	}, []string{"transport"})
	m.failOpen = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "waitroom_fail_open_total", Help: "Protected requests decided without Redis, by outcome."}, []string{"outcome"})
	m.admissions = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "waitroom_admissions_total", Help: "Visitors admitted by this instance's ticks."}, []string{"room"})
	m.passed = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "waitroom_passed_total", Help: "Visitors let in on the spot by this instance's gateway (rooms with activation busy, under their threshold with nobody waiting)."}, []string{"room"})
	m.queueing = prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "waitroom_room_queueing", Help: "Rooms with activation busy: 1 while someone waits (new visitors queue), 0 while visitors are let straight through."}, []string{"room"})
	m.queueingSince = prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "waitroom_room_queueing_since_timestamp_seconds", Help: "Rooms with activation busy: when waitroom_room_queueing took its value (Redis time, Unix seconds)."}, []string{"room"})
	m.redisCalls = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name: "waitroom_redis_seconds", Help: "Redis call latency by operation.",
		Buckets: []float64{.0002, .0005, .001, .002, .005, .01, .025, .05, .1, .5, 2},
	}, []string{"op"})
	m.redisFails = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "waitroom_redis_call_errors_total", Help: "Redis calls that failed, by operation."}, []string{"op"})
	m.restored = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "waitroom_redis_state_restored_total", Help: "State Redis had lost that this instance put back, by kind (settings, tickets, removed, tokens, webhooks, webhook_deliveries)."}, []string{"what"})
	m.hooksDropped = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "waitroom_webhook_dropped_total", Help: "Webhook deliveries dropped because their endpoint had the most deliveries waiting, the oldest first, by the endpoint's scope (deployment or room)."}, []string{"scope"})
	m.lagWS, m.lagSSE = m.deliverLag.WithLabelValues("ws"), m.deliverLag.WithLabelValues("sse")
	m.httpRequests = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "waitroom_http_requests_total", Help: "HTTP requests answered, by route pattern, method and status code."}, []string{"route", "method", "code"})
	m.httpSeconds = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name: "waitroom_http_request_duration_seconds", Help: "Time to answer an HTTP request (push connections: until the upgrade), by route pattern.",
		Buckets: []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 10},
	}, []string{"route"})
	buildInfo := prometheus.NewGauge(prometheus.GaugeOpts{Name: "waitroom_build_info", Help: "1, labelled with the version, VCS revision and Go version of this binary.",
		ConstLabels: prometheus.Labels{"version": b.Version, "revision": b.Revision, "goversion": b.GoVersion}})
	buildInfo.Set(1)
	m.reg.MustRegister(polls, m.redisErr, m.deliverLag, m.failOpen, m.admissions, m.passed, m.queueing, m.queueingSince, m.redisCalls, m.redisFails, m.restored,
		m.hooksDropped, m.httpRequests, m.httpSeconds, buildInfo)
	m.autopilot = newAutopilotSeries(m.reg)
	m.zero()
	m.handler = promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{})
	return m
}

// zero creates every series whose labels are known before the first
// event, so a rate or an alert reads 0 from the start rather than nothing.
func (m *Metrics) zero() {
	for _, v := range []string{"closed", "used", "limited", "admitted"} {
		m.failOpen.WithLabelValues(v)
	}
	for _, v := range []string{"settings", "tickets", "removed", "tokens", "webhooks", "webhook_deliveries"} {
		m.restored.WithLabelValues(v)
	}
	for _, v := range []string{"deployment", "room"} {
		m.hooksDropped.WithLabelValues(v)
	}
	for _, op := range rediscall.ScriptNames() {
		m.redisFails.WithLabelValues(op)
	}
}

// Registry is the registry the series live on, for a part that registers
// collectors of its own or a test that gathers them.
func (m *Metrics) Registry() *prometheus.Registry { return m.reg }

// Handler serves the registry in the text exposition format.
func (m *Metrics) Handler() http.Handler { return m.handler }

// StoreError counts a Redis call of a request that failed.
func (m *Metrics) StoreError() { m.redisErr.Inc() }

// Poll counts a status poll, answered from memory or from Redis.
func (m *Metrics) Poll(fromMemory bool) {
	if fromMemory {
		m.pollMemory.Inc()
	} else {
		m.pollRedis.Inc()
	}
}

// FailOpen counts a protected request decided without Redis, by outcome:
// "closed", "used", "limited" or "admitted". outcome must be one of a
// fixed set: it becomes a label.
func (m *Metrics) FailOpen(outcome string) { m.failOpen.WithLabelValues(outcome).Inc() }

// FailOpenAdmitted counts a request let through without Redis.
func (m *Metrics) FailOpenAdmitted() { m.FailOpen("admitted") }

// Admitted counts n visitors admitted in room by this instance's ticks.
// room becomes a label: the caller bounds the set (configured rooms only).
func (m *Metrics) Admitted(room string, n int) { m.admissions.WithLabelValues(room).Add(float64(n)) }

// Passed counts a visitor let in on the spot in room (a label: the
// caller bounds the set, as for Admitted).
func (m *Metrics) Passed(room string) { m.passed.WithLabelValues(room).Inc() }

// Activation sets the state of room, a room with activation busy:
// queueing or passing visitors through, since when. room is a label, as
// for Admitted.
func (m *Metrics) Activation(room string, queueing bool, since time.Time) {
	v := 0.0
	if queueing {
		v = 1
	}
	m.queueing.WithLabelValues(room).Set(v)
	m.queueingSince.WithLabelValues(room).Set(float64(since.UnixMilli()) / 1000)
}

// ForgetActivation removes room's state series (its activation is no
// longer busy, or it is gone).
func (m *Metrics) ForgetActivation(room string) {
	m.queueing.DeleteLabelValues(room)
	m.queueingSince.DeleteLabelValues(room)
}

// Delivered observes one admission pushed over transport kind ("ws" or
// "sse"), lag after its notBefore. It runs for every admission pushed:
// the two series are looked up once, not at each call.
func (m *Metrics) Delivered(kind string, lag time.Duration) {
	o := m.lagSSE
	if kind == "ws" {
		o = m.lagWS
	}
	o.Observe(lag.Seconds())
}

// WSHeartbeat counts a heartbeat queued to a quiet WebSocket connection.
func (m *Metrics) WSHeartbeat() { m.wsHeartbeats.Add(1) }

// Restored counts the state Redis had lost that this instance put back.
func (m *Metrics) Restored(r queue.Restored) {
	if r.Settings {
		m.restored.WithLabelValues("settings").Inc()
	}
	if r.Tickets > 0 {
		m.restored.WithLabelValues("tickets").Add(float64(r.Tickets))
	}
	if r.Removed > 0 {
		m.restored.WithLabelValues("removed").Add(float64(r.Removed))
	}
	if r.Tokens > 0 {
		m.restored.WithLabelValues("tokens").Add(float64(r.Tokens))
	}
}

// WebhooksRestored counts the rooms whose webhook endpoints, and the
// webhook deliveries, Redis had lost and this instance put back.
func (m *Metrics) WebhooksRestored(rooms, deliveries int) {
	if rooms > 0 {
		m.restored.WithLabelValues("webhooks").Add(float64(rooms))
	}
	if deliveries > 0 {
		m.restored.WithLabelValues("webhook_deliveries").Add(float64(deliveries))
	}
}

// WebhookDropped counts n webhook deliveries dropped because their
// endpoint had the most waiting. scope is "deployment" or "room": it
// becomes a label.
func (m *Metrics) WebhookDropped(scope string, n int) {
	m.hooksDropped.WithLabelValues(scope).Add(float64(n))
}
