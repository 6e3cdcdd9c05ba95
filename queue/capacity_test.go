package queue

import (
	"testing"
	"time"
)

func TestCapacity(t *testing.T) {
	c := Capacity{DBPool: 40, ServiceTime: 200 * time.Millisecond, Safety: 0.7, Tick: 100 * time.Millisecond}
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	if b := c.BatchSize(); b != 14 {
		t.Fatalf("batch = %d, want 14", b)
	}
	if tps := c.TPS(); tps < 139.99 || tps > 140.01 {
		t.Fatalf("tps = %v", tps)
	}
	for _, tc := range []struct{ pos, eta int64 }{{1, 1}, {140, 1}, {141, 2}, {700, 5}, {701, 6}} {
		if got := c.ETA(tc.pos); got != tc.eta {
			t.Errorf("ETA(%d) = %d, want %d", tc.pos, got, tc.eta)
		}
	}
	over := c
	over.Batch = 500
	if over.BatchSize() != 500 || over.TPS() != 5000 {
		t.Fatalf("override: %d %v", over.BatchSize(), over.TPS())
	}
	for _, bad := range []Capacity{
		{DBPool: 0, ServiceTime: time.Second, Safety: 0.5, Tick: time.Second},
		{DBPool: 1, ServiceTime: time.Second, Safety: 1.5, Tick: time.Second},
		{DBPool: 1, ServiceTime: time.Second, Safety: 0.5, Tick: 0},
		{Batch: -1, Tick: time.Second},
	} {
		if bad.Validate() == nil {
			t.Errorf("%+v accepted", bad)
		}
	}
}

func TestNextPoll(t *testing.T) {
	c := Capacity{DBPool: 40, ServiceTime: 200 * time.Millisecond, Safety: 0.7, Tick: 100 * time.Millisecond}
	within := func(d, base time.Duration) bool {
		return d >= base*9/10-time.Millisecond && d <= base*11/10+time.Millisecond
	}
	for range 200 {
		if d := c.NextPoll(1); !within(d, 500*time.Millisecond) {
			t.Fatalf("front: %v", d)
		}
		if d := c.NextPoll(14); !within(d, 500*time.Millisecond) {
			t.Fatalf("position = batch: %v", d)
		}
		if d := c.NextPoll(700); !within(d, 2500*time.Millisecond) {
			t.Fatalf("eta 5 s: %v", d)
		}
		if d := c.NextPoll(1_000_000); !within(d, 5*time.Second) {
			t.Fatalf("cap: %v", d)
		}
	}
	// The spread is real: not every answer is the same.
	seen := map[time.Duration]bool{}
	for range 50 {
		seen[c.NextPoll(700)] = true
	}
	if len(seen) < 5 {
		t.Fatalf("no spread: %v", seen)
	}
}
