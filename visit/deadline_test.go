package visit

import (
	"testing"
	"time"
)

// TestSharedDeadline: requests of one step share a context, every request
// gets at least storeTimeout and at most a step more, and a request after
// the step gets a new context.
func TestSharedDeadline(t *testing.T) {
	var s sharedDeadline
	t0 := time.Unix(1_800_000_000, 0)
	first := s.get(t0)
	seen := map[any]int{}
	for ms := 0; ms <= 400; ms += 7 {
		now := t0.Add(time.Duration(ms) * time.Millisecond)
		ctx := s.get(now)
		seen[ctx]++
		d, ok := ctx.Deadline()
		if !ok {
			t.Fatalf("at +%dms: no deadline", ms)
		}
		if left := d.Sub(now); left < storeTimeout || left > storeTimeout+deadlineStep {
			t.Fatalf("at +%dms: %v left, want %v to %v", ms, left, storeTimeout, storeTimeout+deadlineStep)
		}
		if ms <= int(deadlineStep/time.Millisecond) && ctx != first {
			t.Fatalf("at +%dms, within the first step: a new context", ms)
		}
	}
	if len(seen) < 2 || len(seen) > 400/int(deadlineStep/time.Millisecond)+1 {
		t.Fatalf("%d contexts over 400 ms of requests, want one per step of %v", len(seen), deadlineStep)
	}
}
