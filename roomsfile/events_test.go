package roomsfile

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/waitroom/waitroom/schedule"
)

func TestParseEvents(t *testing.T) {
	f, err := Parse("rooms.yaml", []byte(`rooms:
  drop:
    batch: 10
    events:
      - name: launch
        prequeueAt: 2026-12-01T08:30:00Z
        startsAt: 2026-12-01T09:00:00Z
        endsAt: 2026-12-01T11:00:00Z
        shuffleAtStart: true
        settings: {batch: 60, message: "Launch day."}
        atEnd: close
      - name: encore
        startsAt: "2026-12-02T09:00:00Z"
        endsAt: "2026-12-02T10:00:00Z"
`))
	if err != nil {
		t.Fatal(err)
	}
	r, _ := f.Room("drop")
	if len(r.Events) != 2 || r.Events[0].Name != "launch" || !r.Events[0].ShuffleAtStart || r.Events[0].AtEnd != schedule.AtEndClose ||
		strings.Join(r.Events[0].Fields(), ",") != "batch,message,opensAt" || r.Events[1].AtEnd != schedule.AtEndKeep {
		t.Fatalf("events %+v", r.Events)
	}
	if r.Sets("events") || r.Config.Batch != 10 {
		t.Fatalf("events are no setting: %+v", r)
	}
}

func TestParseEventsRefuses(t *testing.T) {
	cases := []struct{ name, events, want string }{
		{"not a list", `events: {name: a}`, "rooms.yaml:3: rooms.drop.events: must be a list of events"},
		{"bad time", "events:\n      - name: a\n        startsAt: soon\n        endsAt: 2026-12-01T10:00:00Z",
			"rooms.yaml:4: rooms.drop.events[0]: startsAt must be an RFC 3339 time"},
		{"bad setting", "events:\n      - {name: a, startsAt: 2026-12-01T09:00:00Z, endsAt: 2026-12-01T10:00:00Z, settings: {batch: -2}}",
			"rooms.yaml:4: rooms.drop.events[0].settings.batch: must be between 0"},
		{"overlap", "events:\n      - {name: a, startsAt: 2026-12-01T09:00:00Z, endsAt: 2026-12-01T10:00:00Z}\n      - {name: b, startsAt: 2026-12-01T09:30:00Z, endsAt: 2026-12-01T11:00:00Z}",
			"rooms.yaml:5: rooms.drop.events[1]: event a (2026-12-01T09:00:00Z to 2026-12-01T10:00:00Z) overlaps event b"},
		{"twice", "events:\n      - {name: a, startsAt: 2026-12-01T09:00:00Z, endsAt: 2026-12-01T10:00:00Z}\n      - {name: a, startsAt: 2026-12-02T09:30:00Z, endsAt: 2026-12-02T11:00:00Z}",
			"rooms.yaml:5: rooms.drop.events[1]: names event a again"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Parse("rooms.yaml", []byte("rooms:\n  drop:\n    "+c.events+"\n"))
			if err == nil || !strings.HasPrefix(err.Error(), c.want) {
				t.Fatalf("err = %v\nwant %s…", err, c.want)
			}
		})
	}
}

// memEvents is an Events in memory.
type memEvents struct {
	mu   sync.Mutex
	evs  map[string]schedule.Event
	puts int
}

func (m *memEvents) Get(_ context.Context, room, name string) (schedule.Event, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	e, ok := m.evs[room+"/"+name]
	if !ok {
		return schedule.Event{}, notFound
	}
	return e, nil
}

func (m *memEvents) Put(_ context.Context, room string, e schedule.Event, create bool) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.evs[room+"/"+e.Name]; ok == create {
		return errors.New("wrong create")
	}
	m.evs[room+"/"+e.Name] = e
	m.puts++
	return nil
}

var notFound = &schedule.Error{Status: 404, Code: "event_not_found", Msg: "no such event"}

func TestApplyWritesEvents(t *testing.T) {
	soon := time.Now().Add(time.Hour).UTC().Format(time.RFC3339)
	later := time.Now().Add(2 * time.Hour).UTC().Format(time.RFC3339)
	f, err := Parse("rooms.yaml", []byte("rooms:\n  drop:\n    events:\n      - {name: a, startsAt: "+soon+", endsAt: "+later+"}\n      - {name: old, startsAt: 2020-01-01T09:00:00Z, endsAt: 2020-01-01T10:00:00Z}\n"))
	if err != nil {
		t.Fatal(err)
	}
	evs := &memEvents{evs: map[string]schedule.Event{}}
	store := newMemStore()
	for range 2 {
		if _, err := Apply(context.Background(), f, store, &ApplyOptions{Events: evs}); err != nil {
			t.Fatal(err)
		}
	}
	if _, ok := evs.evs["drop/a"]; !ok || evs.puts != 1 {
		t.Fatalf("events written %d times: %v", evs.puts, evs.evs)
	}
}
