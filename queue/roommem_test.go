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
