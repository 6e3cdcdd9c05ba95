package metrics

import "github.com/prometheus/client_golang/prometheus"

// DemoPool is what the demo's metrics read of its simulated DB pool.
type DemoPool interface {
	InUse() int64 // slots held now
	Peak() int64  // most slots held at once since start
	Size() int    // slots in the pool
}

// Orders counts the demo's orders by result.
type Orders struct{ created, timedOut prometheus.Counter }

// Created counts an order the simulated DB took.
func (o *Orders) Created() { o.created.Inc() }

// TimedOut counts an order refused because no DB slot came free in time.
func (o *Orders) TimedOut() { o.timedOut.Inc() }

// WatchDemo registers the demo's series (waitroom_db_slots*, read from
// pool at each scrape, and waitroom_orders_total) and returns the orders
// counter. Call it once, and only when the demo runs: a second call
// panics.
func (m *Metrics) WatchDemo(pool DemoPool) *Orders {
	orders := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "waitroom_orders_total", Help: "Demo orders by result."}, []string{"result"})
	o := &Orders{created: orders.WithLabelValues("created"), timedOut: orders.WithLabelValues("db_timeout")}
	m.reg.MustRegister(orders,
		gauge("waitroom_db_slots_in_use", "Simulated protected DB connections in use.", func() float64 { return float64(pool.InUse()) }),
		gauge("waitroom_db_slots_peak", "Most simulated DB connections in use at once since start.", func() float64 { return float64(pool.Peak()) }),
		gauge("waitroom_db_slots", "Size of the simulated DB pool.", func() float64 { return float64(pool.Size()) }),
	)
	return o
}
