package schedule

import (
	"errors"
	"strings"
	"testing"
)

func TestParseRefuses(t *testing.T) {
	const ok = `"name":"sale","startsAt":"2026-12-01T09:00:00Z","endsAt":"2026-12-01T10:00:00Z"`
	cases := []struct {
		name, body, code, field string
	}{
		{"not an object", `[1]`, "invalid_json", ""},
		{"no name", `{"startsAt":"2026-12-01T09:00:00Z","endsAt":"2026-12-01T10:00:00Z"}`, "invalid_event_name", ""},
		{"bad name", `{"name":"Sale!","startsAt":"2026-12-01T09:00:00Z","endsAt":"2026-12-01T10:00:00Z"}`, "invalid_event_name", ""},
		{"no start", `{"name":"sale","endsAt":"2026-12-01T10:00:00Z"}`, "invalid_event_time", ""},
		{"bad start", `{"name":"sale","startsAt":"tomorrow","endsAt":"2026-12-01T10:00:00Z"}`, "invalid_event_time", ""},
		{"bad prequeue", `{` + ok + `,"prequeueAt":"2026-13-01T00:00:00Z"}`, "invalid_event_time", ""},
		{"ends before start", `{"name":"sale","startsAt":"2026-12-01T09:00:00Z","endsAt":"2026-12-01T09:00:00Z"}`, "event_ends_before_start", ""},
		{"prequeue after start", `{` + ok + `,"prequeueAt":"2026-12-01T09:00:00Z"}`, "event_prequeue_after_start", ""},
		{"bad atEnd", `{` + ok + `,"atEnd":"stop"}`, "invalid_at_end", ""},
		{"unknown field", `{` + ok + `,"color":"red"}`, "invalid_field", "color"},
		{"wrong type", `{` + ok + `,"shuffleAtStart":"yes"}`, "invalid_field", "shuffleAtStart"},
		{"unknown setting", `{` + ok + `,"settings":{"speed":3}}`, "invalid_field", "settings.speed"},
		{"bad setting value", `{` + ok + `,"settings":{"batch":-1}}`, "invalid_field", "settings.batch"},
		{"setting of the wrong type", `{` + ok + `,"settings":{"paused":"no"}}`, "invalid_field", "settings.paused"},
		{"opensAt", `{` + ok + `,"settings":{"opensAt":"2026-12-01T09:00:00Z"}}`, "invalid_field", "settings.opensAt"},
		{"settings not an object", `{` + ok + `,"settings":[1]}`, "invalid_field", "settings"},
		{"two objects", `{` + ok + `}{}`, "invalid_json", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Parse([]byte(c.body))
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("err = %v, want an *Error", err)
			}
			if e.Code != c.code || e.Field != c.field || e.Status != 400 || e.Msg == "" {
				t.Fatalf("got %+v, want code %s field %q", e, c.code, c.field)
			}
		})
	}
}

func TestParseKeeps(t *testing.T) {
	e, err := Parse([]byte(`{"name":"sale","prequeueAt":"2026-12-01T08:30:00+01:00","startsAt":"2026-12-01T09:00:00Z",
		"endsAt":"2026-12-01T10:00:00Z","shuffleAtStart":true,"atEnd":"close","settings":{"batch":50,"message":"Sale on.","awayAfterSeconds":30}}`))
	if err != nil {
		t.Fatal(err)
	}
	if e.AtEnd != AtEndClose || !e.ShuffleAtStart || !e.Begins().Equal(e.PrequeueAt) || e.Message() != "Sale on." {
		t.Fatalf("parsed %+v", e)
	}
	if got := strings.Join(e.Fields(), ","); got != "batch,message,awayAfterSeconds,opensAt" {
		t.Fatalf("fields %s", got)
	}
	b, err := e.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	again, err := Parse(b)
	if err != nil {
		t.Fatalf("reparse %s: %v", b, err)
	}
	if b2, _ := again.MarshalJSON(); string(b2) != string(b) {
		t.Fatalf("round trip:\n%s\n%s", b, b2)
	}
	want := `{"name":"sale","prequeueAt":"2026-12-01T07:30:00Z","startsAt":"2026-12-01T09:00:00Z","endsAt":"2026-12-01T10:00:00Z","shuffleAtStart":true,"settings":{"awayAfterSeconds":30,"batch":50,"message":"Sale on."},"atEnd":"close"}`
	if string(b) != want {
		t.Fatalf("json\n%s\nwant\n%s", b, want)
	}
	plain, err := Parse([]byte(`{"name":"a","startsAt":"2026-12-01T09:00:00Z","endsAt":"2026-12-01T10:00:00Z"}`))
	if err != nil || plain.AtEnd != AtEndKeep || len(plain.Fields()) != 0 || plain.Message() != DefaultClosedMessage {
		t.Fatalf("defaults: %+v %v", plain, err)
	}
}

func TestOverlapNamesBoth(t *testing.T) {
	a, _ := Parse([]byte(`{"name":"a","startsAt":"2026-12-01T09:00:00Z","endsAt":"2026-12-01T10:00:00Z"}`))
	b, _ := Parse([]byte(`{"name":"b","prequeueAt":"2026-12-01T09:30:00Z","startsAt":"2026-12-01T10:30:00Z","endsAt":"2026-12-01T11:00:00Z"}`))
	c, _ := Parse([]byte(`{"name":"c","startsAt":"2026-12-01T10:00:00Z","endsAt":"2026-12-01T10:20:00Z"}`))
	err := Overlap(a, b)
	var e *Error
	if !errors.As(err, &e) || e.Code != "event_overlap" || !strings.Contains(e.Msg, "event a") || !strings.Contains(e.Msg, "event b") {
		t.Fatalf("overlap: %v", err)
	}
	if err := Overlap(a, c); err != nil {
		t.Fatalf("back to back is no overlap: %v", err)
	}
}
