package hub

import (
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/waitroom/waitroom/wire"
)

// nopTransport accepts every write.
type nopTransport struct{}

func (nopTransport) Write(time.Time, string, []byte) error { return nil }
func (nopTransport) Close(string)                          {}
func (nopTransport) Kind() string                          { return "ws" }

// benchHub returns a hub (not running) with n waiting visitors in room drop.
func benchHub(b *testing.B, n int) *Hub {
	b.Helper()
	src := newSource()
	h := New(newBroker(), src, nil, &Options{MaxConns: n + 1, SendQueue: 1 << 20})
	for i := range n {
		v := fmt.Sprint("v", i)
		src.set("drop", v, wire.State{Status: wire.StatusWaiting, Position: int64(i + 1)})
		mustAttach(b, h, "drop", v, nopTransport{})
	}
	b.Cleanup(func() {
		for _, c := range h.allConns() {
			c.Close()
		}
		h.wg.Wait()
	})
	return h
}

// BenchmarkFlushPositions is one admission event that moves 10,000 waiting
// connections and one run of the position flush after it: what the hub
// does for positions each tick.
func BenchmarkFlushPositions(b *testing.B) {
	h := benchHub(b, 10000)
	ev := []byte(admitJSON("drop", 1))
	b.ReportAllocs()
	for b.Loop() {
		h.handleMessage(wire.Channel("drop"), ev)
		h.flushPositions()
	}
}

// BenchmarkAdmitEvent is one admission event of 14 visitors in a room of
// 10,000 local visitors.
func BenchmarkAdmitEvent(b *testing.B) {
	h := benchHub(b, 10000)
	var entries []entry
	nb := time.Now().Add(time.Hour).UnixMilli()
	for i := range 14 {
		entries = append(entries, entry{fmt.Sprint("v", i*500), nb, nb + 300000})
	}
	ev := []byte(admitJSON("drop", 14, entries...))
	b.ReportAllocs()
	for b.Loop() {
		h.handleMessage(wire.Channel("drop"), ev)
	}
}

// BenchmarkConnMemory reports the live heap one waiting visitor with one
// connection costs the hub (B/conn), over rooms of 10,000 such visitors.
// The transport's own memory is not counted (a zero-size one).
func BenchmarkConnMemory(b *testing.B) {
	const n = 10000
	var per float64
	for b.Loop() {
		b.StopTimer()
		src := newSource()
		ids := make([]string, n)
		for i := range n {
			ids[i] = fmt.Sprint("visitor-", i)
			src.set("drop", ids[i], wire.State{Status: wire.StatusWaiting, Position: int64(i + 1)})
		}
		h := New(newBroker(), src, nil, &Options{MaxConns: n + 1})
		before := heapAlloc()
		b.StartTimer()
		for _, id := range ids {
			mustAttach(b, h, "drop", id, nopTransport{})
		}
		b.StopTimer()
		h.wg.Wait()
		after := heapAlloc()
		per = float64(after-before) / n
		for _, c := range h.allConns() {
			c.Close()
		}
		h.wg.Wait()
		b.StartTimer()
	}
	b.ReportMetric(per, "B/conn")
}

// heapAlloc returns the live heap after a collection.
func heapAlloc() uint64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}
