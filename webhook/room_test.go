package webhook

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/waitroom/waitroom/internal/redistest"
	"github.com/waitroom/waitroom/internal/waitfor"
)

// A room's endpoints get that room's events they subscribe to, beside the
// deployment's, which get every room's.
func TestRoomEndpoints(t *testing.T) {
	each(t, func(t *testing.T, srv *redistest.Server, client string) {
		deployRC, roomRC := newReceiver(t, nil), newReceiver(t, nil)
		r := newRedis(t, srv, client)
		h := newHooks(t, r, []Endpoint{deployRC.endpoint(RoomCreated)}, fast())
		ctx := context.Background()
		if eps, err := h.RoomEndpoints(ctx, "drop"); err != nil || len(eps) != 0 {
			t.Fatalf("no endpoints yet: %v %v", eps, err)
		}
		if err := h.SetRoomEndpoints(ctx, "drop", []Endpoint{roomRC.endpoint(RoomPaused, RoomCreated)}); err != nil {
			t.Fatal(err)
		}
		run(t, h)
		for _, e := range []struct{ room, t string }{{"drop", RoomCreated}, {"drop", RoomPaused}, {"drop", RoomResumed}, {"other", RoomCreated}, {"other", RoomPaused}} {
			if err := h.Emit(ctx, e.room, e.t, nil); err != nil {
				t.Fatal(err)
			}
		}
		waitfor.Until(t, 10*time.Second, "the deliveries", func() bool {
			d, _ := deployRC.counts()
			r, _ := roomRC.counts()
			return len(d) == 2 && len(r) == 2
		})
		outboxEmpty(t, r)
		if got := len(roomRC.ofType(RoomCreated)) + len(roomRC.ofType(RoomPaused)); got != 2 {
			t.Fatalf("room receiver got %d of its events", got)
		}
		for _, p := range append(roomRC.ofType(RoomCreated), roomRC.ofType(RoomPaused)...) {
			if !strings.Contains(string(p.Data), `"room":"drop"`) {
				t.Fatalf("room receiver got %s", p.Data)
			}
		}
		if len(deployRC.ofType(RoomCreated)) != 2 {
			t.Fatal("the deployment's receiver missed a room.created")
		}
		if err := h.Emit(ctx, "drop", "room.exploded", nil); err == nil {
			t.Fatal("an unknown event was emitted")
		}
		if err := h.SetRoomEndpoints(ctx, "drop", nil); err != nil {
			t.Fatal(err)
		}
		if eps, _ := h.RoomEndpoints(ctx, "drop"); len(eps) != 0 {
			t.Fatalf("removed endpoints still there: %v", eps)
		}
	})
}

// A delivery whose endpoint was removed before its attempt goes to the
// dead-letter list saying so, not to the old URL.
func TestRemovedEndpointIsDead(t *testing.T) {
	srv := redistest.StartMini(t)
	rc := newReceiver(t, nil)
	r := newRedis(t, srv, "go-redis")
	h := newHooks(t, r, nil, fast())
	ctx := context.Background()
	if err := h.SetRoomEndpoints(ctx, "drop", []Endpoint{rc.endpoint()}); err != nil {
		t.Fatal(err)
	}
	if err := h.Emit(ctx, "drop", RoomPaused, nil); err != nil {
		t.Fatal(err)
	}
	if err := h.SetRoomEndpoints(ctx, "drop", nil); err != nil {
		t.Fatal(err)
	}
	run(t, h)
	waitfor.Until(t, 10*time.Second, "a dead delivery", func() bool {
		d, _ := h.Dead(ctx, 10)
		return len(d) == 1 && d[0].LastError == errRemoved.Error()
	})
	if seen, _ := rc.counts(); len(seen) != 0 {
		t.Fatalf("sent to a removed endpoint: %v", seen)
	}
}

func TestSetRoomEndpointsRefuses(t *testing.T) {
	h := newHooks(t, nil, nil, nil)
	ok := Endpoint{URL: "https://a.example/x", Secret: NewSecret()}
	many := make([]Endpoint, MaxRoomEndpoints+1)
	for i := range many {
		many[i] = ok
		many[i].URL += strings.Repeat("x", i)
	}
	for _, tc := range []struct {
		eps  []Endpoint
		code string
	}{
		{[]Endpoint{ok, ok}, "invalid_webhook_url"},
		{[]Endpoint{{URL: "mailto:a@b", Secret: ok.Secret}}, "invalid_webhook_url"},
		{[]Endpoint{{URL: ok.URL, Secret: ok.Secret, Events: []string{"nope"}}}, "unknown_event"},
		{many, "too_many_webhooks"},
	} {
		var ie *InvalidError
		if err := h.SetRoomEndpoints(context.Background(), "drop", tc.eps); !errors.As(err, &ie) || ie.Code != tc.code {
			t.Errorf("got %v, want %s", err, tc.code)
		}
	}
}

func TestLoadFile(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	sec := NewSecret()
	for _, text := range []string{
		"- url: https://a.example/hook\n  secret: " + sec + "\n  events: [room.paused, room.resumed]\n",
		"webhooks:\n  - url: https://a.example/hook\n    secret: " + sec + "\n    events: [room.paused, room.resumed]\n",
		`[{"url": "https://a.example/hook", "secret": "` + sec + `", "events": ["room.paused", "room.resumed"]}]`,
	} {
		eps, err := LoadFile(write("ok.yaml", text))
		if err != nil || len(eps) != 1 || eps[0].URL != "https://a.example/hook" || len(eps[0].Events) != 2 || eps[0].Secret != sec {
			t.Fatalf("%q: %v %v", text, eps, err)
		}
	}
	for _, text := range []string{
		"- url: ftp://a.example/\n  secret: " + sec + "\n",
		"- url: https://a.example/\n  secret: " + sec + "\n  event: [room.paused]\n", // misspelt
		"- url: https://a.example/\n  secret: whsec_x\n",
		"- url: https://a.example/\n  secret: " + sec + "\n- url: https://a.example/\n  secret: " + sec + "\n",
		"{not yaml",
	} {
		if _, err := LoadFile(write("bad.yaml", text)); err == nil {
			t.Errorf("%q loaded", text)
		}
	}
	if _, err := LoadFile(filepath.Join(dir, "missing")); err == nil {
		t.Error("a missing file loaded")
	}
}
