package admin

import (
	"context"
	"testing"

	"github.com/waitroom/waitroom/queue"
)

// countingStore is a memStore whose rooms have admitted some visitors.
type countingStore struct{ *memStore }

func (countingStore) Stats(context.Context, string) (queue.RoomStats, error) {
	return queue.RoomStats{Waiting: 100, AdmittedTotal: 4200, Rate: 14}, nil
}

// TestListRoomsAdmittedTotal: the rooms list carries each room's
// admittedTotal beside its admittedPerSecond, so the dashboard measures
// the rate between two lists.
func TestListRoomsAdmittedTotal(t *testing.T) {
	app := newTestAPI(t, countingStore{newMemStore()})
	if r := call(t, app, adminSecret, "POST", "/rooms", `{"room":"drop"}`); r.code != 201 {
		t.Fatalf("create: %+v", r)
	}
	r := call(t, app, adminSecret, "GET", "/rooms", "")
	list, _ := r.body["rooms"].([]any)
	if r.code != 200 || len(list) != 1 {
		t.Fatalf("list: %+v", r)
	}
	room := list[0].(map[string]any)
	if room["admittedTotal"] != 4200.0 || room["admittedPerSecond"] != 14.0 || room["waiting"] != 100.0 {
		t.Fatalf("room: %v", room)
	}
}
