package main

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/waitroom/waitroom/internal/redistest"
	"github.com/waitroom/waitroom/internal/waitfor"
	"github.com/waitroom/waitroom/settings"
)

// poller polls a visitor's status (past the poll cache) until stopped and
// records each change of what the page would show: status and message.
type poller struct {
	mu   sync.Mutex
	seen []string
	stop chan struct{}
	done chan struct{}
}

func startPoller(t *testing.T, ts *testServer, v *visitor, room string) *poller {
	p := &poller{stop: make(chan struct{}), done: make(chan struct{})}
	id := strings.SplitN(v.cred, ".", 2)[0]
	go func() {
		defer close(p.done)
		tick := time.NewTicker(30 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-p.stop:
				return
			case <-tick.C:
			}
			ts.visit.Polls().Forget(room, id)
			r := v.do("GET", "/api/v1/rooms/"+room+"/status", "")
			now := r.str("status") + ":" + r.str("message")
			p.mu.Lock()
			if len(p.seen) == 0 || p.seen[len(p.seen)-1] != now {
				p.seen = append(p.seen, now)
			}
			p.mu.Unlock()
		}
	}()
	t.Cleanup(p.Stop)
	return p
}

func (p *poller) Stop() {
	select {
	case <-p.stop:
	default:
		close(p.stop)
	}
	<-p.done
}

func (p *poller) changes() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.seen...)
}

// Three events over a few seconds, three instances, visitors on
// WebSocket, SSE and polling: each sees each transition once, the audit
// trail shows each as done by schedule, and the settings are back at the
// end.
func TestScheduledEventsAcrossInstances(t *testing.T) {
	for _, client := range clientKinds {
		t.Run(client, func(t *testing.T) {
			srv := redistest.StartReal(t)
			a := startServerOpts(t, srv, client, &serverOptions{}, withAdmin)
			b := startServerOpts(t, srv, client, &serverOptions{}, withAdmin)
			c := startServerOpts(t, srv, client, &serverOptions{}, withAdmin)
			op := newVisitor(t, a.URL)
			// Paused, so the visitors wait through all three events.
			if r := op.admin("PUT", "/rooms/drop", `{"paused":true,"batch":5}`); r.Code != 200 {
				t.Fatalf("base: %s", r.Raw)
			}
			base := op.admin("GET", "/rooms/drop", "")
			wsV, sseV, pollV := newVisitor(t, a.URL), newVisitor(t, b.URL), newVisitor(t, c.URL)
			for _, v := range []*visitor{wsV, sseV, pollV} {
				v.join("drop")
			}
			ws, sse := dial(t, "ws", a.URL, "drop", wsV.cred), dial(t, "sse", b.URL, "drop", sseV.cred)
			waitfor.Until(t, 5*time.Second, "first states", func() bool { return ws.count("waiting") > 0 && sse.count("waiting") > 0 })
			polls := startPoller(t, c, pollV, "drop")

			t0 := time.Now().Add(800 * time.Millisecond)
			step := 600 * time.Millisecond
			span := func(i int) (string, string) {
				return t0.Add(time.Duration(2*i) * step).UTC().Format(time.RFC3339Nano), t0.Add(time.Duration(2*i+1) * step).UTC().Format(time.RFC3339Nano)
			}
			for i, e := range []struct{ name, extra string }{{"one", `"settings":{"message":"One.","batch":9}`}, {"two", `"settings":{"message":"Two."}`}, {"three", `"settings":{"message":"Three."},"atEnd":"close"`}} {
				from, to := span(i)
				body := fmt.Sprintf(`{"name":%q,"startsAt":%q,"endsAt":%q,%s}`, e.name, from, to, e.extra)
				if r := op.admin("POST", "/rooms/drop/events", body); r.Code != 201 {
					t.Fatalf("create %s: %d %s", e.name, r.Code, r.Raw)
				}
			}
			if r := op.admin("GET", "/rooms/drop", ""); len(r.Body["events"].([]any)) != 3 || r.Body["effective"] == nil {
				t.Fatalf("room GET: %s", r.Raw)
			}

			waitfor.Until(t, 15*time.Second, "closed everywhere", func() bool {
				ch := polls.changes()
				return ws.count("closed") > 0 && sse.count("closed") > 0 && len(ch) > 0 && strings.HasPrefix(ch[len(ch)-1], "closed:")
			})
			wantTexts := "One.||Two.||Three.|"
			for _, p := range []*pushClient{ws, sse} {
				if got := strings.Join(p.texts(), "|"); got != wantTexts || p.count("closed") != 1 {
					t.Errorf("%s saw messages %q (want %q) and %d closed", p.kind, got, wantTexts, p.count("closed"))
				}
			}
			polls.Stop()
			wantPolls := "waiting:|waiting:One.|waiting:|waiting:Two.|waiting:|waiting:Three.|closed:Three."
			if got := strings.Join(polls.changes(), "|"); got != wantPolls {
				t.Errorf("polls saw\n%s\nwant\n%s", got, wantPolls)
			}

			after := op.admin("GET", "/rooms/drop", "")
			for _, f := range settings.Names() {
				if fmt.Sprint(after.Body[f]) != fmt.Sprint(base.Body[f]) {
					t.Errorf("%s is %v after the events, was %v", f, after.Body[f], base.Body[f])
				}
			}
			audit := op.admin("GET", "/rooms/drop/audit", "")
			var got []string
			for _, raw := range audit.Body["entries"].([]any) {
				e := raw.(map[string]any)
				if e["who"] == "schedule" {
					got = append([]string{fmt.Sprint(e["event"], "/", e["action"])}, got...) // oldest first
				}
			}
			want := "one/event-start one/event-end two/event-start two/event-end three/event-start three/event-end"
			if strings.Join(got, " ") != want {
				t.Errorf("audit by schedule:\n%s\nwant\n%s", strings.Join(got, " "), want)
			}
		})
	}
}

// The rooms file's events are written at start, and written back when
// Redis comes back empty.
func TestRoomsFileEvents(t *testing.T) {
	srv := redistest.StartReal(t)
	from, to := time.Now().Add(time.Hour).UTC().Format(time.RFC3339), time.Now().Add(2*time.Hour).UTC().Format(time.RFC3339)
	rooms := filepath.Join(t.TempDir(), "rooms.yaml")
	writeFile(t, rooms, "rooms:\n  drop:\n    seats: 50\n    events:\n      - {name: launch, startsAt: "+from+", endsAt: "+to+", settings: {message: \"Launch.\"}}\n")
	ts := startServer(t, srv, "rueidis", func(c *config) { withAdmin(c); c.RoomsFile = rooms })
	v := newVisitor(t, ts.URL)
	listed := func() bool {
		r := v.admin("GET", "/rooms/drop/events", "")
		evs, _ := r.Body["events"].([]any)
		return r.Code == 200 && len(evs) == 1 && strings.Contains(r.Raw, `"message":"Launch."`)
	}
	if !listed() {
		t.Fatalf("the file's event: %s", v.admin("GET", "/rooms/drop/events", "").Raw)
	}
	if _, err := ts.redis.Do(context.Background(), "FLUSHALL"); err != nil {
		t.Fatal(err)
	}
	waitfor.Until(t, 5*time.Second, "the event written back", listed)
}
