package queue

import (
	"runtime"
	"strconv"
	"testing"
	"unsafe"
)

// TestRoomMemSize: what an instance holds of a room, its memo's bitmaps
// aside, is a fixed size, measured on the heap with its entry in the map
// and its name: the bound docs/operations.md states per room.
func TestRoomMemSize(t *testing.T) {
	if size := unsafe.Sizeof(roomMem{}); size > 384 {
		t.Fatalf("roomMem is %d bytes, over the 384 the docs state", size)
	}
	q := newQueue(t, nil, nil)
	const n = 20000
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	for i := range n {
		q.roomMemFor("room-" + strconv.Itoa(100000+i))
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	per := float64(after.HeapAlloc-before.HeapAlloc) / n
	t.Logf("%.0f bytes a room on the heap, with its map entry and name (struct %d)", per, unsafe.Sizeof(roomMem{}))
	if per > 640 {
		t.Fatalf("a room's memory takes %.0f bytes on the heap, over the 640 the docs state", per)
	}
	runtime.KeepAlive(q)
}

// TestDoneBitsWindow: a band's bitmap of tickets done with holds the
// newest maxDoneBytes bytes' tickets and no more: it moves on past its
// end, widens back for an earlier ticket while there is room, and
// forgets a ticket further behind.
func TestDoneBitsWindow(t *testing.T) {
	var d doneBits
	const window = 8 * maxDoneBytes // tickets
	first := int64(5_000_000_000 % maxDoneTicket)
	d.set(first)
	if len(d.bits) != 1 || !d.has(first) || d.has(first+1) {
		t.Fatalf("a first ticket far out: %d bytes from %d", len(d.bits), d.at)
	}
	d.set(first - 100) // a lottery admits out of order
	if !d.has(first-100) || !d.has(first) || len(d.bits) > 14 {
		t.Fatalf("an earlier ticket: %d bytes from %d", len(d.bits), d.at)
	}
	last := first + window + 64
	d.set(last)
	if len(d.bits) > maxDoneBytes || !d.has(last) || d.has(first) || d.has(first-100) {
		t.Fatalf("past the window: %d bytes from byte %d; first kept %v", len(d.bits), d.at, d.has(first))
	}
	d.set(first) // behind the window: forgotten
	if d.has(first) || len(d.bits) > maxDoneBytes {
		t.Fatalf("a ticket behind the window was kept: %d bytes", len(d.bits))
	}
	for n := last - window + 8; n <= last; n += 4096 {
		d.set(n)
		if !d.has(n) {
			t.Fatalf("ticket %d in the window not kept", n)
		}
	}
	if len(d.bits) > maxDoneBytes {
		t.Fatalf("%d bytes, over %d", len(d.bits), maxDoneBytes)
	}
	d.set(0)
	d.set(maxDoneTicket + 1)
	if d.has(0) || d.has(maxDoneTicket+1) {
		t.Fatal("a ticket out of range was kept")
	}
}
