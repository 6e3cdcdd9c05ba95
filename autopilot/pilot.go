package autopilot

import (
	"context"
	"errors"
	"log/slog"
	"math"
	"time"

	"github.com/waitroom/waitroom/internal/rediscall"
	"github.com/waitroom/waitroom/settings"
)

// Options are what a Pilot needs of the rest of the server. Nil functions
// do nothing.
type Options struct {
	// Window is how many whole seconds before the current one a decision
	// reads (default 2, at most MaxWindow).
	Window int
	// Tick is the admission tick: a rate of r per second is a batch of
	// r·Tick under the fixed strategy.
	Tick time.Duration
	// Rooms lists the rooms to look at each second (those whose settings,
	// as the instance knows them, have autopilot on).
	Rooms func() []string
	// Settings are room's settings with the instance's defaults filled in
	// (settings.Room.Effective).
	Settings func(room string) (settings.Room, bool)
	// Waiting is how many visitors wait in room.
	Waiting func(ctx context.Context, room string) (int64, error)
	// Update changes room's stored settings (queue.UpdateRoomConfig):
	// change is applied to what is stored and written only if nobody
	// changed it in between; an error from change is returned as is.
	Update func(ctx context.Context, room string, change func(*settings.Room) error) (settings.Room, error)
	// OnChange is told of each change of a room's rate, with the settings
	// before and after (for the audit trail) and the decision.
	OnChange func(ctx context.Context, room string, before, after settings.Room, d Decision)
	// OnOverload is told when a room's origin becomes overloaded
	// (d.Entered) or stops being so (d.Left).
	OnOverload func(ctx context.Context, room string, d Decision)
	// OnStatus is told, each second, what each room's autopilot shows
	// (for the series).
	OnStatus func(room string, s Status)
	Logger   *slog.Logger
}

// Pilot runs the rooms' autopilot: every second, for each room with it on,
// it takes the room's decision unless another instance did, decides and
// writes the rate into the room's settings.
type Pilot struct {
	store *Store
	o     Options
}

// New is a Pilot on r.
func New(r rediscall.Redis, o Options) *Pilot {
	if o.Window <= 0 {
		o.Window = 2
	}
	o.Window = min(o.Window, MaxWindow)
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return &Pilot{store: NewStore(r), o: o}
}

// Store is the pilot's store (samples, state).
func (p *Pilot) Store() *Store { return p.store }

// Run steps every room once a second until ctx ends.
func (p *Pilot) Run(ctx context.Context) error {
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
		if p.o.Rooms == nil {
			continue
		}
		for _, room := range p.o.Rooms() {
			cctx, cancel := context.WithTimeout(ctx, callTimeout)
			_, _, err := p.Step(cctx, room)
			cancel()
			if err != nil && ctx.Err() == nil {
				p.o.Logger.Warn("autopilot", "room", room, "err", err)
			}
		}
	}
}

// callTimeout bounds one room's step, and one send of samples: Redis
// that does not answer costs a second's decision, not the loop.
const callTimeout = 2 * time.Second

// errOff stops a write to a room whose autopilot was turned off since.
var errOff = errors.New("autopilot: turned off")

// Step is one second of room: it reports the second (Unix, by Redis) and
// whether this call took its decision (false: another call did first, or
// the room's autopilot is off).
func (p *Pilot) Step(ctx context.Context, room string) (int64, bool, error) {
	cfg, ok := p.settings(room)
	if !ok || !cfg.Autopilot {
		return 0, false, nil
	}
	taken, now, st, w, err := p.store.take(ctx, room, p.o.Window)
	if err != nil {
		return 0, false, err
	}
	if !taken {
		if st["rate"] != "" && p.o.OnStatus != nil {
			p.o.OnStatus(room, st.status())
		}
		return now, false, nil
	}
	var waiting int64
	if p.o.Waiting != nil {
		if waiting, err = p.o.Waiting(ctx, room); err != nil {
			return now, true, err
		}
	}
	maxActive := cfg.Strategy == settings.StrategyMaxActive
	unit, current := "/s", float64(cfg.Batch)/p.o.Tick.Seconds()
	if maxActive {
		unit, current = " slots", float64(cfg.MaxActive)
	}
	d := Decide(st.state(), Input{Window: w, Limits: cfg.EffectiveAutopilot(), Demand: waiting > 0,
		Current: current, Unit: unit, Now: time.Unix(now, 0).UTC(), Delay: p.delay()})
	if err := p.store.save(ctx, room, d, w.Samples); err != nil {
		return now, true, err
	}
	if p.o.OnStatus != nil {
		p.o.OnStatus(room, statusOf(d, w.Samples))
	}
	if d.Entered || d.Left {
		if p.o.OnOverload != nil {
			p.o.OnOverload(ctx, room, d)
		}
	}
	have := cfg.Batch
	if maxActive {
		have = cfg.MaxActive
	}
	if err := p.apply(ctx, room, maxActive, have, d); err != nil {
		return now, true, err
	}
	return now, true, nil
}

// apply writes d's rate into room's batch (or maxActive) if it changes
// what the room admits: have is the value in force as the instance last
// read it, and an unchanged one costs no call.
func (p *Pilot) apply(ctx context.Context, room string, maxActive bool, have int, d Decision) error {
	want := p.units(d.State.Rate, maxActive)
	if p.o.Update == nil || want == have {
		return nil
	}
	var before settings.Room
	changed := false
	after, err := p.o.Update(ctx, room, func(c *settings.Room) error {
		if !c.Autopilot {
			return errOff
		}
		before, changed = *c, false
		if maxActive {
			changed = c.MaxActive != want
			c.MaxActive = want
		} else {
			changed = c.Batch != want
			c.Batch = want
		}
		if !changed {
			return errUnchanged
		}
		return nil
	})
	switch {
	case errors.Is(err, errOff), errors.Is(err, errUnchanged):
		return nil
	case err != nil:
		return err
	}
	if p.o.OnChange != nil {
		p.o.OnChange(ctx, room, before, after, d)
	}
	return nil
}

var errUnchanged = errors.New("autopilot: unchanged")

// units is rate as the room's setting: slots under max-active, else the
// batch of one tick; at least 1 (0 would mean the instance's default).
func (p *Pilot) units(rate float64, maxActive bool) int {
	if !maxActive {
		rate *= p.o.Tick.Seconds()
	}
	return max(1, int(math.Round(rate)))
}

// delay is how long a change of the rate takes to show fully in a
// decision's window, apart from the origin's latency: a tick (the spread
// of a batch), the window's seconds, and the second being counted.
func (p *Pilot) delay() time.Duration {
	return p.o.Tick + time.Duration(p.o.Window+1)*time.Second
}

func (p *Pilot) settings(room string) (settings.Room, bool) {
	if p.o.Settings == nil {
		return settings.Room{}, false
	}
	return p.o.Settings(room)
}

func statusOf(d Decision, samples int64) Status {
	return stored{}.with(d, samples).status()
}

// with is the stored form of d (as save writes it).
func (s stored) with(d Decision, samples int64) stored {
	st := d.State
	out := stored{"rate": f(st.Rate), "best": f(st.Best), "smooth": f(st.Smooth), "dev": f(st.Dev), "ceil": f(st.Ceiling),
		"over": "false", "reason": st.Reason, "p50": f(d.P50), "p95": f(d.P95), "err": f(d.ErrorRate), "n": f(float64(samples))}
	if st.Overloaded {
		out["over"] = "true"
	}
	if !st.ChangedAt.IsZero() {
		out["at"] = f(float64(st.ChangedAt.UnixMilli()))
	}
	if !st.HoldUntil.IsZero() {
		out["hold"], out["cutat"] = f(float64(st.HoldUntil.UnixMilli())), f(float64(st.CutAt.UnixMilli()))
		out["cutp95"], out["cuterr"] = f(st.CutP95), f(st.CutErrors)
	}
	return out
}
