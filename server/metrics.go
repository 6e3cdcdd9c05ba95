package main

import (
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/gofiber/fiber/v2/middleware/adaptor"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// metrics are the instance's Prometheus metrics (names waitroom_*). Each
// server has its own registry so several can live in one test process.
type metrics struct {
	reg        *prometheus.Registry
	polls      *prometheus.CounterVec
	orders     *prometheus.CounterVec
	redisErr   prometheus.Counter
	deliverLag *prometheus.HistogramVec
}

func newMetrics(s *server) *metrics {
	m := &metrics{reg: prometheus.NewRegistry()}
	m.reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	m.polls = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "waitroom_polls_total", Help: "Status polls by how they were answered (redis or memory)."}, []string{"answer"})
	m.orders = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "waitroom_orders_total", Help: "Demo orders by result."}, []string{"result"})
	m.redisErr = prometheus.NewCounter(prometheus.CounterOpts{Name: "waitroom_redis_errors_total", Help: "Redis calls from requests that failed."})
	m.deliverLag = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name: "waitroom_delivery_lag_seconds", Help: "Admitted push delivery: write time minus notBefore.",
		Buckets: []float64{.001, .002, .005, .01, .02, .05, .1, .25, .5, 1, 5},
	}, []string{"transport"})
	gauge := func(name, help string, f func() float64) prometheus.Collector {
		return prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: name, Help: help}, f)
	}
	m.reg.MustRegister(m.polls, m.orders, m.redisErr, m.deliverLag,
		gauge("waitroom_db_slots_in_use", "Simulated protected DB connections in use.", func() float64 { return float64(s.db.inUse.Load()) }),
		gauge("waitroom_db_slots_peak", "Most simulated DB connections in use at once since start.", func() float64 { return float64(s.db.peak.Load()) }),
		gauge("waitroom_db_slots", "Size of the simulated DB pool.", func() float64 { return float64(cap(s.db.slots)) }),
		gauge("waitroom_poll_cache_entries", "Poll answers held in memory.", func() float64 { return float64(s.polls.size.Load()) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "waitroom_connections", Help: "Open push connections.", ConstLabels: prometheus.Labels{"transport": "ws"}},
			func() float64 { return float64(s.hub.Stats().Conns["ws"]) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "waitroom_connections", Help: "Open push connections.", ConstLabels: prometheus.Labels{"transport": "sse"}},
			func() float64 { return float64(s.hub.Stats().Conns["sse"]) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "waitroom_push_messages_total", Help: "Messages written to push connections."},
			func() float64 { return float64(s.hub.Stats().Sent) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "waitroom_push_dropped_slow_total", Help: "Push connections closed as slow consumers."},
			func() float64 { return float64(s.hub.Stats().DroppedSlow) }),
	)
	return m
}

func (m *metrics) observeDelivery(kind string, lag time.Duration) {
	m.deliverLag.WithLabelValues(kind).Observe(lag.Seconds())
}

// handler serves the text exposition format.
func (m *metrics) handler() fiber.Handler {
	return adaptor.HTTPHandler(promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{}))
}
