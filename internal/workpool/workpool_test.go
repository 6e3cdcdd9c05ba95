package workpool

import (
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestWorkersAreReusedAndLeave(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := New()
		var ran atomic.Int32
		p.Do(func() { ran.Add(1) })
		synctest.Wait() // the worker now waits for more
		p.Do(func() { ran.Add(1) })
		if ran.Load() != 2 {
			t.Fatalf("ran %d", ran.Load())
		}
		var wg sync.WaitGroup
		for range 50 {
			wg.Go(func() { p.Do(func() { ran.Add(1) }) })
		}
		wg.Wait()
		time.Sleep(Idle + time.Second) // on the bubble's fake clock: idle workers exit on their own
		synctest.Wait()
		p.Stop()
		if p.Go(func() { t.Error("ran after Stop") }) {
			t.Fatal("Go accepted a job after Stop")
		}
		p.Do(func() { ran.Add(1) }) // inline after Stop
		if ran.Load() != 53 {
			t.Fatalf("ran %d, want 53", ran.Load())
		}
	})
}
