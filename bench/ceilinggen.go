package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"time"
)

// The ceiling scenario's load generator: an open-loop stream of joins of
// new visitors. Arrival i is due at start + i/rate whatever the replies
// do, so a slow server gets a queue, not a slower client; a join's latency
// is counted from when it was due, not from when it was sent, so a late
// generator shows up in the figures instead of hiding them.

// ceilingGenConfig is one generator process's share of a rate step.
type ceilingGenConfig struct {
	URLs        []string      `json:"urls"` // arrival i joins at URLs[i % len]
	Room        string        `json:"room"`
	Rate        float64       `json:"rate"`        // arrivals per second
	Count       int           `json:"count"`       // arrivals in all
	Conns       int           `json:"conns"`       // keep-alive connections per instance at most
	MaxInFlight int           `json:"maxInFlight"` // an arrival past this many unanswered joins is dropped (an error)
	Timeout     time.Duration `json:"timeout"`     // per join
	IPBase      int           `json:"ipBase"`      // source addresses 127.0.0.IPBase…+IPs-1
	IPs         int           `json:"ips"`
}

// ceilingGenReport is what one generator process saw in its step.
type ceilingGenReport struct {
	OK         int     `json:"ok"`
	Failed     int     `json:"failed"`  // an error answer or none within the timeout
	Dropped    int     `json:"dropped"` // not sent: MaxInFlight joins were unanswered
	FirstError string  `json:"firstError,omitempty"`
	LatencyUS  []int64 `json:"latencyUs"`     // of each join answered 2xx, from when it was due
	ServeP99Ms float64 `json:"fromSendP99Ms"` // join latency p99 counted from when it was sent
	LagP99Ms   float64 `json:"sendLagP99Ms"`
	LagMaxMs   float64 `json:"sendLagMaxMs"`
	CPUSeconds float64 `json:"cpuSeconds"` // of the whole process, from the first arrival to the last answer
	StartNano  int64   `json:"startUnixNano"`
	EndNano    int64   `json:"endUnixNano"` // the last answer
}

// ceilingFleets run the generator in this process, or in `bench
// ceiling-worker` children when a step uses several processes. Its one
// step, "go", sends the arrivals and returns when the last is answered.
var ceilingFleets = fleetKind[ceilingGenConfig, ceilingGenReport]{
	worker: "ceiling-worker",
	start:  startCeilingGen,
	steps:  []string{"go"},
}

func ceilingWorkerMain(ctx context.Context, cfgJSON string) error {
	return ceilingFleets.workerMain(ctx, cfgJSON)
}

// startCeilingGen opens the generator's connections (a few joins on each
// instance, before the step's measured window) and returns it ready.
func startCeilingGen(ctx context.Context, cfg ceilingGenConfig) (localFleet[ceilingGenReport], error) {
	if len(cfg.URLs) == 0 || cfg.Rate <= 0 || cfg.Count <= 0 {
		return localFleet[ceilingGenReport]{}, errors.New("ceiling generator: no instances, rate or count")
	}
	var w wire
	d := newDialer(&w, cfg.IPBase, cfg.IPs)
	apis := make([]*api, len(cfg.URLs))
	for i, u := range cfg.URLs {
		apis[i] = newAPI(u, cfg.Room, &w, d, max(cfg.Conns, 1))
	}
	warm := min(max(cfg.Conns, 1), 16)
	if _, err := hammer(ctx, warm*len(apis), warm*len(apis), func(i int) error {
		_, err := apis[i%len(apis)].join(ctx, "")
		return err
	}); err != nil {
		closeAPIs(apis)
		return localFleet[ceilingGenReport]{}, fmt.Errorf("ceiling generator warm-up: %w", err)
	}
	rctx, cancel := context.WithCancel(ctx)
	stop := func() {
		cancel()
		closeAPIs(apis)
	}
	var rep ceilingGenReport
	return localFleet[ceilingGenReport]{
		steps:  map[string]func(){"go": func() { rep = runCeilingGen(rctx, cfg, apis) }},
		report: func() ceilingGenReport { stop(); return rep },
		stop:   stop,
	}, nil
}

// runCeilingGen sends cfg.Count joins at cfg.Rate and waits for their
// answers (each bounded by cfg.Timeout).
func runCeilingGen(ctx context.Context, cfg ceilingGenConfig, apis []*api) ceilingGenReport {
	var (
		rep      ceilingGenReport
		mu       sync.Mutex
		wg       sync.WaitGroup
		inFlight atomic.Int64
		lastNano int64 // under mu
	)
	lat := make([]int64, 0, cfg.Count)
	var served []float64
	lags := make([]float64, 0, cfg.Count)
	done := func(due, sent, at time.Time, err error) {
		mu.Lock()
		defer mu.Unlock()
		lastNano = max(lastNano, at.UnixNano())
		if err == nil {
			lat = append(lat, at.Sub(due).Microseconds())
			served = append(served, float64(at.Sub(sent))/float64(time.Millisecond))
			return
		}
		rep.Failed++
		if rep.FirstError == "" {
			rep.FirstError = err.Error()
		}
	}
	interval := float64(time.Second) / cfg.Rate
	cpu0, _ := readProc(os.Getpid())
	t0 := time.Now()
	rep.StartNano = t0.UnixNano()
	for i := 0; i < cfg.Count && ctx.Err() == nil; i++ {
		due := t0.Add(time.Duration(float64(i) * interval))
		if d := time.Until(due); d > 0 {
			time.Sleep(d) // pacing the arrivals, not waiting for anything
		}
		lags = append(lags, float64(time.Since(due))/float64(time.Millisecond))
		if inFlight.Load() >= int64(cfg.MaxInFlight) {
			rep.Dropped++
			continue
		}
		inFlight.Add(1)
		a := apis[i%len(apis)]
		wg.Go(func() {
			defer inFlight.Add(-1)
			sent := time.Now()
			jctx, cancel := context.WithTimeout(ctx, cfg.Timeout)
			_, err := a.join(jctx, "")
			cancel()
			done(due, sent, time.Now(), err)
		})
	}
	wg.Wait()
	cpu1, _ := readProc(os.Getpid())
	rep.CPUSeconds = (cpu1.CPU - cpu0.CPU).Seconds()
	rep.OK, rep.LatencyUS = len(lat), lat
	rep.EndNano = max(lastNano, rep.StartNano)
	rep.LagP99Ms, rep.LagMaxMs = quantile(lags, .99), quantile(lags, 1)
	rep.ServeP99Ms = quantile(served, .99)
	return rep
}
