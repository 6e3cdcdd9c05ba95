package metrics

import "github.com/prometheus/client_golang/prometheus"

// autopilotSeries are the series of the rooms' autopilot.
type autopilotSeries struct {
	rate       *prometheus.GaugeVec
	latency    *prometheus.GaugeVec
	errRatio   *prometheus.GaugeVec
	overloaded *prometheus.GaugeVec
	changes    *prometheus.CounterVec
}

func newAutopilotSeries(reg *prometheus.Registry) autopilotSeries {
	s := autopilotSeries{
		rate:       prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "waitroom_autopilot_rate", Help: "Rooms with autopilot on: the rate it set (admissions/s; slots under max-active)."}, []string{"room"}),
		latency:    prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "waitroom_origin_latency_seconds", Help: "Rooms with autopilot on: the origin's latency over the last window, by quantile (0.5, 0.95)."}, []string{"room", "quantile"}),
		errRatio:   prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "waitroom_origin_error_ratio", Help: "Rooms with autopilot on: the share of the origin's requests that failed over the last window."}, []string{"room"}),
		overloaded: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "waitroom_autopilot_overloaded", Help: "Rooms with autopilot on: 1 while the origin is overloaded (the last decision cut the rate on errors or latency), else 0."}, []string{"room"}),
		changes:    prometheus.NewCounterVec(prometheus.CounterOpts{Name: "waitroom_autopilot_changes_total", Help: "Changes of a room's rate by its autopilot, by direction (up, down), counted by the instance that made them."}, []string{"room", "direction"}),
	}
	reg.MustRegister(s.rate, s.latency, s.errRatio, s.overloaded, s.changes)
	return s
}

// Autopilot sets room's autopilot series from what its last decision
// showed: the rate, the origin's p50 and p95 latency (seconds), its error
// ratio and whether it is overloaded.
func (m *Metrics) Autopilot(room string, rate, p50, p95, errRatio float64, overloaded bool) {
	s := m.autopilot
	s.rate.WithLabelValues(room).Set(rate)
	s.latency.WithLabelValues(room, "0.5").Set(p50)
	s.latency.WithLabelValues(room, "0.95").Set(p95)
	s.errRatio.WithLabelValues(room).Set(errRatio)
	v := 0.0
	if overloaded {
		v = 1
	}
	s.overloaded.WithLabelValues(room).Set(v)
	s.changes.WithLabelValues(room, "up")
	s.changes.WithLabelValues(room, "down")
}

// AutopilotChanged counts a change of room's rate by this instance's
// autopilot, up or down.
func (m *Metrics) AutopilotChanged(room string, up bool) {
	d := "down"
	if up {
		d = "up"
	}
	m.autopilot.changes.WithLabelValues(room, d).Inc()
}

// ForgetAutopilot removes room's gauges (its autopilot was turned off).
func (m *Metrics) ForgetAutopilot(room string) {
	s := m.autopilot
	s.rate.DeleteLabelValues(room)
	s.latency.DeleteLabelValues(room, "0.5")
	s.latency.DeleteLabelValues(room, "0.95")
	s.errRatio.DeleteLabelValues(room)
	s.overloaded.DeleteLabelValues(room)
}
