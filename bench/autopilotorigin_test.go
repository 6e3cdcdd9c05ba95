package main

import (
	"math"
	"testing"
	"testing/synctest"
	"time"
)

// TestSlotPool checks the origin's pool: slots go to waiters oldest
// first, a waiter gives up at its bound, and a smaller pool hands out no
// slot until fewer than its size are in use.
func TestSlotPool(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := &slotPool{size: 2}
		for range 2 {
			if !p.acquire(time.Second) {
				t.Fatal("a free slot was not given at once")
			}
		}
		got := make(chan int, 2)
		for i := range 2 {
			go func() {
				if p.acquire(time.Second) {
					got <- i
				} else {
					got <- -1 - i
				}
			}()
			synctest.Wait() // the first waiter queues before the second
		}
		time.Sleep(500 * time.Millisecond) // fake time: half the bound
		p.release()
		if first := <-got; first != 0 {
			t.Errorf("the slot went to waiter %d, want the oldest (0)", first)
		}
		if second := <-got; second != -2 {
			t.Errorf("the second waiter got %d, want to give up at its bound (-2)", second)
		}

		// Two in use; the pool shrinks to 1: the first release frees
		// nothing for a waiter, the second does.
		p.resize(1)
		go func() { got <- map[bool]int{true: 1, false: 0}[p.acquire(10*time.Second)] }()
		synctest.Wait()
		p.release()
		synctest.Wait()
		select {
		case v := <-got:
			t.Fatalf("a waiter got an answer (%d) with the shrunk pool still full", v)
		default:
		}
		p.release()
		if v := <-got; v != 1 {
			t.Errorf("the waiter did not get the slot freed under the new size")
		}
	})
}

// TestAPSummarise checks the figures of an autopilot run made up second
// by second: reached at 90% of the optimum over three seconds, held, and
// back under the latency target after the halving.
func TestAPSummarise(t *testing.T) {
	o := autopilotOptions{Target: 500 * time.Millisecond}
	const optimum = 100.0
	t0 := time.UnixMilli(1_000_000)
	res := apRun{Kind: "autopilot", HalvingAt: 10, Seconds: 20, ReachSeconds: math.NaN(), HoldShare: math.NaN(),
		P95AfterReachMs: math.NaN(), RecoverSeconds: math.NaN(), RateMin: math.NaN(), RateMax: math.NaN()}
	var rep originReport
	// Orders answered in second i: 20, 40, 60, 80, then 100 a second
	// (so three seconds average 90% from second 5 on: 80+100+100 ≥ 270),
	// each taking 200 ms; after the halving seconds 10 to 12 are slow
	// (900 ms, with 10 refused each) and 13 on are fast again.
	for i := range 20 {
		n, lat := 100, float32(200)
		if i < 4 {
			n = 20 * (i + 1)
		}
		if i >= 10 && i <= 12 {
			n, lat = 50, 900
			for range 10 {
				rep.Samples = append(rep.Samples, originSample{AtMs: t0.UnixMilli() + int64(i)*1000 + 50, Ms: lat})
			}
		}
		for range n {
			// Answered within second i: arrived lat ms before its middle.
			at := t0.UnixMilli() + int64(i)*1000 + 500 - int64(lat)/2
			rep.Samples = append(rep.Samples, originSample{AtMs: at, Ms: lat, OK: true})
		}
		res.PerSecond = append(res.PerSecond, apSecond{T: float64(i + 1), Rate: float64(10 * (i + 1))})
	}
	apSummarise(&res, o, optimum, t0, nil, rep)
	if res.ReachSeconds != 6 {
		t.Errorf("reached at %v s, want 6 (the end of second 5, whose three seconds average 93)", res.ReachSeconds)
	}
	if res.HoldShare != 1 {
		t.Errorf("held %v, want 1", res.HoldShare)
	}
	if res.P95AfterReachMs != 200 {
		t.Errorf("p95 after reaching %v ms, want 200", res.P95AfterReachMs)
	}
	// Seconds 10, 11, 12 over the target: recovered at the end of 12,
	// 13 s into the run, 3 s after the halving at 10 s.
	if res.RecoverSeconds != 3 || res.SecondsOverAfter != 3 {
		t.Errorf("recovered %v s after the halving with %d seconds over, want 3 and 3", res.RecoverSeconds, res.SecondsOverAfter)
	}
	if res.ErrorsUntilRecover != 30 || res.OrdersUntilRecover != 150 {
		t.Errorf("%d errors and %d orders until recovered, want 30 and 150", res.ErrorsUntilRecover, res.OrdersUntilRecover)
	}
	if res.Before.Orders != 20+40+60+80+6*100 || res.After.Pool503 != 30 {
		t.Errorf("before the halving %d orders, after %d refused", res.Before.Orders, res.After.Pool503)
	}
	if want := 30.0 / (30 + 150 + 700); math.Abs(res.After.ErrorShare-want) > 1e-9 {
		t.Errorf("error share after the halving %v, want %v", res.After.ErrorShare, want)
	}
	if res.RateMin != 10 || res.RateMax != 200 || res.RateAtHalving != 100 {
		t.Errorf("rates %v to %v, %v at the halving", res.RateMin, res.RateMax, res.RateAtHalving)
	}
}
