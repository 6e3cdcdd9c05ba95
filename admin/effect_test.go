package admin

import (
	"strings"
	"testing"
	"time"

	"github.com/waitroom/waitroom/queue"
	"github.com/waitroom/waitroom/settings"
)

// TestEveryEffectHasASetting: each setting is spoken for by exactly one
// effect rule, or is one of the settings with nothing to say beyond the
// change; a new setting without its effect fails here.
func TestEveryEffectHasASetting(t *testing.T) {
	count := map[string]int{}
	for _, r := range effectRules {
		for _, f := range r.fields {
			count[f]++
		}
	}
	for _, f := range silentSettings {
		count[f]++
	}
	for _, f := range settings.Fields {
		if count[f.Name] != 1 {
			t.Errorf("setting %s is named by %d effect rules (with silentSettings), want 1", f.Name, count[f.Name])
		}
		delete(count, f.Name)
	}
	for f := range count {
		t.Errorf("effect rule names %q, which is no setting", f)
	}
}

func TestDurWords(t *testing.T) {
	for sec, want := range map[int64]string{0: "0 s", 59: "59 s", 60: "1 min", 240: "4 min", 241: "5 min", 3600: "1 h", 3900: "1 h 5 min", 7199: "2 h"} {
		if got := durWords(sec); got != want {
			t.Errorf("durWords(%d) = %q, want %q", sec, got, want)
		}
	}
}

func view(r settings.Room) View {
	return Effective("drop", r, Defaults{Defaults: settings.Defaults{Batch: 14, TokenTTL: 5 * time.Minute, TokenMax: 15 * time.Minute, FailMode: settings.FailOpen}, Tick: 100 * time.Millisecond})
}

// The effects of a change, in the order of effectRules, from the stats
// alone: no Redis needed.
func TestEffects(t *testing.T) {
	st := queue.RoomStats{Waiting: 3360, ActiveTokens: 4, SeatsHeld: 10}
	got := Effects(view(settings.Room{Batch: 14}), view(settings.Room{Batch: 30, Paused: true, Seats: 5}), st)
	want := []string{
		"14 per 100 ms → 30 per 100 ms: about 300 admitted/s; ETA for the last in line 24 s → 12 s",
		"admissions stop; the 3360 waiting keep their places and see the room paused",
		"seats no limit → 5 with 10 held: the room is sold out at once for the 3360 waiting",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("effects:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if got := Effects(view(settings.Room{}), view(settings.Room{BrandTitle: "Drop"}), st); len(got) != 1 || got[0] != "no change" {
		t.Errorf("a change of the look: %v", got)
	}
}

// The changes name each setting that differs, with the values the API
// shows.
func TestChanges(t *testing.T) {
	got := Changes(view(settings.Room{}), view(settings.Room{Batch: 30, NoPresence: true}))
	if len(got) != 2 || got[0] != (FieldChange{"batch", 14, 30}) || got[1] != (FieldChange{"presence", true, false}) {
		t.Errorf("changes %+v", got)
	}
}
