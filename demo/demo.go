package demo

import (
	"errors"
	"strconv"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/waitroom/waitroom/internal/httperr"
)

// Path is the route of the demo order, under which every request passes
// the entry-token check first.
const Path = "/api/v1/rooms/:room/orders"

// Options size the simulated pool. The zero value of each field means its
// default.
type Options struct {
	// Slots is the number of database connections (default 40).
	Slots int
	// ServiceTime is how long one order holds a connection (default 200ms).
	ServiceTime time.Duration
	// Wait is how long an order waits for a free connection before 503
	// db_timeout (default 10s); negative: it does not wait.
	Wait time.Duration
}

// Holder names whom the entry token of a request that passed the guard
// was issued to.
type Holder func(c *fiber.Ctx) (room, visitor string)

// Demo is the demo protected endpoint on its simulated pool. Its handler
// is safe for concurrent use.
type Demo struct {
	pool              *pool
	orders            *prometheus.CounterVec
	created, timedOut prometheus.Counter
}

// New builds the endpoint; opts may be nil and is not retained.
func New(opts *Options) *Demo {
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.Slots <= 0 {
		o.Slots = 40
	}
	if o.ServiceTime <= 0 {
		o.ServiceTime = 200 * time.Millisecond
	}
	if o.Wait == 0 {
		o.Wait = 10 * time.Second
	}
	d := &Demo{pool: newPool(o.Slots, o.ServiceTime, o.Wait)}
	d.orders = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "waitroom_orders_total", Help: "Demo orders by result."}, []string{"result"})
	d.created, d.timedOut = d.orders.WithLabelValues("created"), d.orders.WithLabelValues("db_timeout")
	return d
}

// Register registers the demo's series on r: waitroom_orders_total{result}
// (both results from the start), waitroom_db_slots_in_use,
// waitroom_db_slots_peak and waitroom_db_slots.
func (d *Demo) Register(r prometheus.Registerer) error {
	gauge := func(name, help string, f func() float64) prometheus.Collector {
		return prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: name, Help: help}, f)
	}
	for _, c := range []prometheus.Collector{
		d.orders,
		gauge("waitroom_db_slots_in_use", "Simulated protected DB connections in use.", func() float64 { return float64(d.pool.inUse.Load()) }),
		gauge("waitroom_db_slots_peak", "Most simulated DB connections in use at once since start.", func() float64 { return float64(d.pool.peak.Load()) }),
		gauge("waitroom_db_slots", "Size of the simulated DB pool.", func() float64 { return float64(cap(d.pool.slots)) }),
	} {
		if err := r.Register(c); err != nil {
			return err
		}
	}
	return nil
}

// InUse is the number of orders holding a database connection now.
func (d *Demo) InUse() int { return int(d.pool.inUse.Load()) }

// Mount adds POST Path to r behind guard, the entry-token check: guard
// answers a refused request itself and passes on (c.Next) only one whose
// token it accepted, after which holder names the token's holder.
func (d *Demo) Mount(r fiber.Router, guard fiber.Handler, holder Holder) {
	r.Group(Path, guard).Post("", func(c *fiber.Ctx) error { return d.order(c, holder) })
}

// order runs one order on the pool and answers 201 with the order, or
// 503 db_timeout (Retry-After: 1) when no connection came free in time.
func (d *Demo) order(c *fiber.Ctx, holder Holder) error {
	room, visitor := holder(c)
	start := time.Now()
	if err := d.pool.run(c.UserContext()); err != nil {
		if errors.Is(err, errNoSlot) {
			d.timedOut.Inc()
			c.Set(fiber.HeaderRetryAfter, "1")
			return httperr.New(503, "db_timeout", "the database had no free connection in time")
		}
		return err
	}
	d.created.Inc()
	c.Status(fiber.StatusCreated)
	c.Set(fiber.HeaderContentType, fiber.MIMEApplicationJSONCharsetUTF8)
	b := make([]byte, 0, 160)
	b = append(b, `{"order":{"room":`...)
	b = strconv.AppendQuote(b, room)
	b = append(b, `,"visitor":`...)
	b = strconv.AppendQuote(b, visitor)
	b = append(b, `,"dbMs":`...)
	b = strconv.AppendInt(b, time.Since(start).Milliseconds(), 10)
	b = append(b, "}}"...)
	return c.Send(b)
}
