package admin

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/waitroom/waitroom/schedule"
)

// memEvents is an Events in memory, refusing overlaps as the schedule does.
type memEvents struct {
	mu  sync.Mutex
	evs map[string]schedule.Event // room/name
}

func (m *memEvents) List(_ context.Context, room string) ([]schedule.Event, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []schedule.Event
	for k, e := range m.evs {
		if strings.HasPrefix(k, room+"/") {
			out = append(out, e)
		}
	}
	return out, nil
}

var errNoEvent = &schedule.Error{Status: 404, Code: "event_not_found", Msg: "no such event in this room"}

func (m *memEvents) Get(_ context.Context, room, name string) (schedule.Event, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	e, ok := m.evs[room+"/"+name]
	if !ok {
		return e, errNoEvent
	}
	return e, nil
}

func (m *memEvents) PutIf(_ context.Context, room string, e schedule.Event, create bool, may func(schedule.Event) error) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	old, ok := m.evs[room+"/"+e.Name]
	if ok == create {
		return errNoEvent
	}
	if ok && may != nil {
		if err := may(old); err != nil {
			return err
		}
	}
	for k, o := range m.evs {
		if strings.HasPrefix(k, room+"/") && o.Name != e.Name {
			if err := schedule.Overlap(e, o); err != nil {
				return err
			}
		}
	}
	m.evs[room+"/"+e.Name] = e
	return nil
}

func (m *memEvents) DeleteIf(_ context.Context, room, name string, may func(schedule.Event) error) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	old, ok := m.evs[room+"/"+name]
	if !ok {
		return errNoEvent
	}
	if may != nil {
		if err := may(old); err != nil {
			return err
		}
	}
	delete(m.evs, room+"/"+name)
	return nil
}

func TestEventRoutes(t *testing.T) {
	store := newMemStore()
	app := newTestAPIEvents(t, store, &memEvents{evs: map[string]schedule.Event{}})
	from := time.Now().Add(time.Hour).UTC().Format(time.RFC3339)
	to := time.Now().Add(2 * time.Hour).UTC().Format(time.RFC3339)
	ev := func(name, settings string) string {
		return `{"name":"` + name + `","startsAt":"` + from + `","endsAt":"` + to + `","settings":` + settings + `}`
	}
	if r := call(t, app, adminSecret, "POST", "/rooms", `{"room":"drop"}`); r.code != 201 {
		t.Fatalf("create: %+v", r)
	}
	if r := call(t, app, opsSecret, "POST", "/rooms/drop/events", ev("sale", `{"message":"On."}`)); r.code != 201 || r.body["state"] != "scheduled" || r.body["by"] != "operator" {
		t.Fatalf("operator create: %+v", r)
	}
	cases := []struct {
		name, key, method, path, body, code string
		status                              int
	}{
		{"operator overriding batch", opsSecret, "POST", "/rooms/drop/events", ev("b", `{"batch":50}`), "forbidden", 403},
		{"pinned setting", adminSecret, "POST", "/rooms/pinned/events", ev("b", `{"batch":50}`), "set_by_rooms_file", 409},
		{"bad time", adminSecret, "POST", "/rooms/drop/events", `{"name":"b","startsAt":"9am","endsAt":"` + to + `"}`, "invalid_event_time", 400},
		{"bad setting", adminSecret, "POST", "/rooms/drop/events", ev("b", `{"batch":"many"}`), "invalid_field", 400},
		{"overlap", adminSecret, "POST", "/rooms/drop/events", ev("other", `{}`), "event_overlap", 409},
		{"name not the path's", adminSecret, "PUT", "/rooms/drop/events/sale", ev("other", `{}`), "invalid_event_name", 400},
		{"bad name in path", adminSecret, "GET", "/rooms/drop/events/No!", "", "invalid_event_name", 400},
		{"no such event", adminSecret, "GET", "/rooms/drop/events/none", "", "event_not_found", 404},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if r := call(t, app, c.key, c.method, c.path, c.body); r.code != c.status || r.errCode() != c.code {
				t.Fatalf("%d %s, want %d %s: %+v", r.code, r.errCode(), c.status, c.code, r.body)
			}
		})
	}
	r := call(t, app, adminSecret, "GET", "/rooms/drop", "")
	evs, _ := r.body["events"].([]any)
	eff, _ := r.body["effective"].(map[string]any)
	if r.code != 200 || len(evs) != 1 || eff["batch"] != 14.0 || r.body["activeEvent"] != nil || r.body["batch"] != 14.0 {
		t.Fatalf("room: %+v", r)
	}
	if r := call(t, app, adminSecret, "PUT", "/rooms/drop/events/sale", ev("sale", `{"message":"Later."}`)); r.code != 200 {
		t.Fatalf("update: %+v", r)
	}
	if r := call(t, app, opsSecret, "DELETE", "/rooms/drop/events/sale", ""); r.code != 403 || r.errCode() != "forbidden" {
		t.Fatalf("operator deleting the admin's change: %+v", r)
	}
	if r := call(t, app, adminSecret, "DELETE", "/rooms/drop/events/sale", ""); r.code != 204 {
		t.Fatalf("delete: %+v", r)
	}
	audit := strings.Join(append(store.audit["drop"], store.audit["drop/operator"]...), "\n")
	for _, want := range []string{`"who":"desk","action":"event-create"`, `"who":"root","action":"event-update"`, `"action":"event-delete","changes":[],"event":"sale"`} {
		if !strings.Contains(audit, want) {
			t.Errorf("audit has no %s:\n%s", want, audit)
		}
	}
	without := newTestAPI(t, newMemStore())
	if r := call(t, without, adminSecret, "GET", "/rooms/drop/events", ""); r.code != 503 || r.errCode() != "events_unavailable" {
		t.Fatalf("without events: %+v", r)
	}
}

// A failed event shows its state and why, and is no room's active event.
func TestFailedEventView(t *testing.T) {
	evs := &memEvents{evs: map[string]schedule.Event{}}
	app := newTestAPIEvents(t, newMemStore(), evs)
	e, err := schedule.Parse([]byte(`{"name":"sale","startsAt":"` + time.Now().Add(-time.Minute).UTC().Format(time.RFC3339) + `","endsAt":"` + time.Now().Add(time.Hour).UTC().Format(time.RFC3339) + `"}`))
	if err != nil {
		t.Fatal(err)
	}
	e.Failed = &schedule.Failure{Transition: "start", At: time.Now(), Tries: schedule.MaxTries, Reason: "maxActive: is required with strategy max-active"}
	evs.evs["drop/sale"] = e
	r := call(t, app, viewSecret, "GET", "/rooms/drop/events/sale", "")
	f, _ := r.body["failure"].(map[string]any)
	if r.code != 200 || r.body["state"] != "failed" || f["transition"] != "start" || f["tries"] != float64(schedule.MaxTries) || !strings.Contains(f["reason"].(string), "maxActive") {
		t.Fatalf("failed event: %+v", r)
	}
	if r := call(t, app, viewSecret, "GET", "/rooms/drop", ""); r.body["activeEvent"] != nil {
		t.Fatalf("a failed event is active: %+v", r)
	}
}
