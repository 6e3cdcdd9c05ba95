package queue

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/waitroom/waitroom/internal/redistest"
	"github.com/waitroom/waitroom/settings"
)

func TestCheckMessage(t *testing.T) {
	for _, tc := range []struct {
		msg string
		ok  bool
	}{
		{"", true},
		{"The sale is delayed by 10 minutes; your place is kept.", true},
		{"Zwei Zeilen,\nbitte warten – 10 €", true},
		{strings.Repeat("é", MaxMessage), true},
		{strings.Repeat("é", MaxMessage+1), false},
		{"<b>bold</b>", false},
		{"a > b", false},
		{"tab\tinside", false},
		{"   ", false},
		{"bad \xff utf-8", false},
		{"line\u2028separator", false},
	} {
		if err := CheckMessage(tc.msg); (err == nil) != tc.ok {
			t.Errorf("CheckMessage(%q) = %v, want ok=%v", tc.msg, err, tc.ok)
		}
	}
	var fe *settings.FieldError
	if err := (settings.Room{Message: "<script>"}).Validate(); !errors.As(err, &fe) || fe.Field != "message" {
		t.Fatalf("Validate: %v", err)
	}
}

// The message travels with every join and status read, with the settings
// version that orders its changes, and clearing it takes it off both.
func TestMessageInJoinAndStatus(t *testing.T) {
	each(t, func(t *testing.T, srv *redistest.Server, r Redis) {
		ctx := context.Background()
		q := newQueue(t, r, fixedBatch(10, 100*time.Millisecond))
		const msg = "The sale is delayed by 10 minutes; your place is kept."
		if err := q.SetRoomConfig(ctx, "msg", settings.Room{Paused: true, Message: msg}); err != nil {
			t.Fatal(err)
		}
		st, err := q.Join(ctx, "msg", "v1")
		if err != nil || st.Message != msg || st.Settings < 1 {
			t.Fatalf("join: %+v %v", st, err)
		}
		if got := string(st.AppendJSON(nil)); !strings.Contains(got, `"message":"The sale is delayed by 10 minutes; your place is kept."`) {
			t.Fatalf("join JSON lacks the message: %s", got)
		}
		st, err = q.Status(ctx, "msg", "v1")
		if err != nil || st.Message != msg {
			t.Fatalf("status: %+v %v", st, err)
		}
		before := st.Settings
		cfg, err := q.UpdateRoomConfig(ctx, "msg", func(c *settings.Room) error { c.Message = ""; return nil })
		if err != nil || cfg.Message != "" || !cfg.Paused {
			t.Fatalf("clear: %+v %v", cfg, err)
		}
		states, err := q.StatusMany(ctx, "msg", []string{"v1", "nobody"})
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range states {
			if s.Message != "" || s.Settings <= before {
				t.Fatalf("after clearing: %+v (settings before %d)", s, before)
			}
			if strings.Contains(string(s.AppendJSON(nil)), "message") {
				t.Fatalf("cleared message still encoded: %s", s.AppendJSON(nil))
			}
		}
	})
}
