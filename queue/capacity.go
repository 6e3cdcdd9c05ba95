package queue

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"time"
)

// Capacity derives the admission rate from what the protected system can
// absorb: tps = DBPool / ServiceTime * Safety, batch = tps * Tick.
type Capacity struct {
	DBPool      int
	ServiceTime time.Duration
	Safety      float64
	Tick        time.Duration
	Batch       int // when > 0, overrides the derived batch
}

// Validate reports the first invalid field.
func (c Capacity) Validate() error {
	switch {
	case c.Tick < time.Millisecond || c.Tick > time.Minute:
		return errors.New("tick must be between 1ms and 1m")
	case c.Batch < 0 || c.Batch > 100000:
		return errors.New("batch must be between 0 (derive) and 100000")
	case c.Batch > 0:
		return nil
	case c.DBPool < 1 || c.DBPool > 1000000:
		return errors.New("db-pool must be between 1 and 1000000")
	case c.ServiceTime < time.Microsecond || c.ServiceTime > time.Hour:
		return errors.New("service-time must be between 1µs and 1h")
	case !(c.Safety > 0 && c.Safety <= 1):
		return errors.New("safety must be in (0, 1]")
	}
	if c.BatchSize() > 100000 {
		return fmt.Errorf("derived batch %d is too large", c.BatchSize())
	}
	return nil
}

// TPS is the admission rate in visitors per second.
func (c Capacity) TPS() float64 {
	if c.Batch > 0 {
		return float64(c.Batch) / c.Tick.Seconds()
	}
	return float64(c.DBPool) / c.ServiceTime.Seconds() * c.Safety
}

// BatchSize is how many visitors one tick admits (at least 1).
func (c Capacity) BatchSize() int {
	if c.Batch > 0 {
		return c.Batch
	}
	// The epsilon keeps 140 TPS * 0.1 s at 14, not 13.999….
	b := int(math.Floor(c.TPS()*c.Tick.Seconds() + 1e-9))
	return max(b, 1)
}

// ETA is the estimated wait in whole seconds for a 1-based position:
// ceil(position / tps).
func (c Capacity) ETA(position int64) int64 {
	return etaAt(position, c.TPS())
}

// NextPoll tells a polling client when to ask again: 500 ms at the front
// (position <= batch), else min(eta*500 ms, 5 s), spread ±10% so clients do
// not synchronise.
func (c Capacity) NextPoll(position int64) time.Duration {
	return c.nextPoll(position, c.ETA(position))
}

func (c Capacity) nextPoll(position, eta int64) time.Duration {
	base := 500 * time.Millisecond
	if position > int64(c.BatchSize()) {
		base = min(time.Duration(eta)*500*time.Millisecond, 5*time.Second)
		base = max(base, 500*time.Millisecond)
	}
	spread := 0.9 + 0.2*rand.Float64()
	return time.Duration(float64(base) * spread).Round(time.Millisecond)
}
