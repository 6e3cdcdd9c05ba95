package limit

import (
	"fmt"
	"sync"
	"testing"
	"time"
)

var t0 = time.Unix(1_700_000_000, 0)

func TestBurstThenRate(t *testing.T) {
	tb := NewTable(20, 300, 1024)
	for i := range 300 {
		if ok, _ := tb.Allow("10.0.0.1", t0); !ok {
			t.Fatalf("event %d of the burst refused", i+1)
		}
	}
	ok, wait := tb.Allow("10.0.0.1", t0)
	if ok || wait <= 0 || wait > 50*time.Millisecond {
		t.Fatalf("over the burst: ok=%v wait=%v, want refused with a wait ≤ 50ms", ok, wait)
	}
	// Another client is not affected.
	if ok, _ := tb.Allow("10.0.0.2", t0); !ok {
		t.Fatal("other client refused")
	}
	// After the wait it was told, exactly one more; then 20 per second.
	if ok, _ := tb.Allow("10.0.0.1", t0.Add(wait)); !ok {
		t.Fatal("refused after the wait it was given")
	}
	n := 0
	for ms := 0; ms < 1000; ms++ {
		if ok, _ := tb.Allow("10.0.0.1", t0.Add(wait+time.Duration(ms)*time.Millisecond)); ok {
			n++
		}
	}
	if n < 19 || n > 21 {
		t.Fatalf("%d events in the next second, want about 20", n)
	}
	// A full refill gives the whole burst back.
	later := t0.Add(time.Minute)
	for i := range 300 {
		if ok, _ := tb.Allow("10.0.0.1", later); !ok {
			t.Fatalf("after refill, event %d refused", i+1)
		}
	}
}

func TestNilAndOff(t *testing.T) {
	var tb *Table
	if ok, _ := tb.Allow("x", t0); !ok || tb.Size() != 0 {
		t.Fatal("nil table limits")
	}
	if NewTable(0, 10, 10) != nil || NewTable(1, 0, 10) != nil {
		t.Fatal("rate 0 or burst 0 is not off")
	}
}

// TestFullTable: far more clients than slots cost no memory and never make
// the table stricter than the rate: a key that was pushed out comes back
// with a fresh bucket, and a key that stays is still limited.
func TestFullTable(t *testing.T) {
	tb := NewTable(1, 3, 4) // one set of 4 slots: every key collides
	if tb.Size() != 4 || len(tb.sets) != 1 {
		t.Fatalf("size %d sets %d", tb.Size(), len(tb.sets))
	}
	for i := range 3 {
		if ok, _ := tb.Allow("a", t0); !ok {
			t.Fatalf("a %d refused", i)
		}
	}
	if ok, _ := tb.Allow("a", t0); ok {
		t.Fatal("a over its burst allowed")
	}
	// Three other clients fill the set; a keeps its (empty) bucket.
	for _, k := range []string{"b", "c", "d"} {
		if ok, _ := tb.Allow(k, t0); !ok {
			t.Fatalf("%s refused", k)
		}
	}
	if ok, _ := tb.Allow("a", t0); ok {
		t.Fatal("a allowed while the set still had room for it")
	}
	// A thousand fresh keys in one instant: each gets its first event, the
	// table does not grow, and a, the most limited client of the set, is
	// the one kept: a flood cannot free it.
	for i := range 1000 {
		if ok, _ := tb.Allow(fmt.Sprint("flood-", i), t0); !ok {
			t.Fatalf("fresh key %d refused", i)
		}
	}
	if len(tb.sets) != 1 {
		t.Fatal("table grew")
	}
	if ok, _ := tb.Allow("a", t0); ok {
		t.Fatal("a freed by a flood of light keys")
	}
	// Keys more limited than a push it out: it comes back with a fresh
	// burst, no more.
	for _, k := range []string{"w", "x", "y", "z"} {
		for range 3 {
			tb.Allow(k, t0.Add(time.Second))
		}
	}
	for i := range 3 {
		if ok, _ := tb.Allow("a", t0.Add(time.Second)); !ok {
			t.Fatalf("a after eviction, event %d refused", i)
		}
	}
	if ok, _ := tb.Allow("a", t0.Add(time.Second)); ok {
		t.Fatal("a over its fresh burst allowed")
	}
}

// TestRefilledSlotReused: a key whose bucket has refilled is the one a new
// key replaces, not one that is still being limited.
func TestRefilledSlotReused(t *testing.T) {
	tb := NewTable(1, 2, 4)
	for _, k := range []string{"busy1", "busy2", "busy3"} {
		tb.Allow(k, t0.Add(10*time.Second))
		tb.Allow(k, t0.Add(10*time.Second))
	}
	tb.Allow("idle", t0) // refilled by t0+10s
	if ok, _ := tb.Allow("new", t0.Add(10*time.Second)); !ok {
		t.Fatal("new key refused")
	}
	for _, k := range []string{"busy1", "busy2", "busy3"} {
		if ok, _ := tb.Allow(k, t0.Add(10*time.Second)); ok {
			t.Fatalf("%s lost its bucket to a new key while an idle one was there", k)
		}
	}
}

func TestConcurrent(t *testing.T) {
	tb := NewTable(1, 100, 64)
	var wg sync.WaitGroup
	var mu sync.Mutex
	allowed := 0
	for g := range 8 {
		wg.Go(func() {
			n := 0
			for range 50 {
				if ok, _ := tb.Allow("shared", t0); ok {
					n++
				}
				tb.Allow(fmt.Sprint("own-", g), t0)
			}
			mu.Lock()
			allowed += n
			mu.Unlock()
		})
	}
	wg.Wait()
	if allowed != 100 {
		t.Fatalf("%d of 400 allowed at one instant, want the burst of 100", allowed)
	}
}
