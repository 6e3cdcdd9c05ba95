package hub

import (
	"context"
	"encoding/json"
	"testing"
	"testing/synctest"

	"github.com/waitroom/waitroom/wire"
)

// notices returns the texts of the message frames t received, in order.
func notices(t *testing.T, tr *fakeTransport) []string {
	t.Helper()
	var out []string
	for _, r := range tr.records() {
		if r.event != "message" {
			continue
		}
		var m struct {
			Type, Room string
			Text       *string
		}
		if err := json.Unmarshal(r.data, &m); err != nil || m.Type != "message" || m.Text == nil {
			t.Fatalf("bad message frame %s: %v", r.data, err)
		}
		out = append(out, *m.Text)
	}
	return out
}

func TestMessageOnConnectAndLive(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src, b := newSource(), newBroker()
		h := start(t, New(b, src, nil, quiet(Options{})))
		const first = "The sale is delayed by 10 minutes; your place is kept."
		src.set("drop", "a", wire.State{Status: wire.StatusWaiting, Position: 3, Message: first, Settings: 4})
		src.set("drop", "b", wire.State{Status: wire.StatusWaiting, Position: 4, Message: first, Settings: 4})
		a, bb, other := newTransport("ws"), newTransport("sse"), newTransport("ws")
		mustAttach(t, h.Hub, "drop", "a", a)
		mustAttach(t, h.Hub, "drop", "b", bb)
		mustAttach(t, h.Hub, "other", "c", other)
		synctest.Wait()
		for _, tr := range []*fakeTransport{a, bb} {
			if got := notices(t, tr); len(got) != 1 || got[0] != first {
				t.Fatalf("on connect: %q", got)
			}
		}
		// A change reaches every connection of the room once, and no other room.
		b.publish(t, "drop", `{"type":"message","room":"drop","text":"Back in 5 \"minutes\"","v":5}`)
		synctest.Wait()
		for _, tr := range []*fakeTransport{a, bb} {
			if got := notices(t, tr); len(got) != 2 || got[1] != `Back in 5 "minutes"` {
				t.Fatalf("after the event: %q", got)
			}
		}
		if got := notices(t, other); len(got) != 0 {
			t.Fatalf("another room got %q", got)
		}
		// A read older than the event (a reconnecting tab of b read before
		// the change) does not bring the old text back.
		b2 := newTransport("ws")
		mustAttach(t, h.Hub, "drop", "b", b2)
		synctest.Wait()
		if got := notices(t, b2); len(got) != 1 || got[0] != `Back in 5 "minutes"` {
			t.Fatalf("new tab after the event, with an older read: %q", got)
		}
		if got := notices(t, a); len(got) != 2 {
			t.Fatalf("a got the old text again: %q", got)
		}
		// Clearing goes to everyone; a repeated event is sent once.
		for range 2 {
			b.publish(t, "drop", `{"type":"message","room":"drop","text":"","v":6}`)
		}
		synctest.Wait()
		for _, tr := range []*fakeTransport{a, bb, b2} {
			got := notices(t, tr)
			if got[len(got)-1] != "" || (len(got) > 1 && got[len(got)-2] == "") {
				t.Fatalf("after clearing: %q", got)
			}
		}
		// A connection to a cleared room is told there is no message: its
		// page may show one from a join answered before the clearing.
		src.set("drop", "d", wire.State{Status: wire.StatusWaiting, Position: 5, Settings: 6})
		d := newTransport("ws")
		mustAttach(t, h.Hub, "drop", "d", d)
		synctest.Wait()
		if got := notices(t, d); len(got) != 1 || got[0] != "" {
			t.Fatalf("cleared room sent %q on connect", got)
		}
		// One to a room that never had a message here gets no frame.
		src.set("calm", "e", wire.State{Status: wire.StatusWaiting, Position: 1, Settings: 2})
		e := newTransport("sse")
		mustAttach(t, h.Hub, "calm", "e", e)
		synctest.Wait()
		if got := notices(t, e); len(got) != 0 {
			t.Fatalf("room without a message sent %q on connect", got)
		}
	})
}

// A page that shows a message (its join was answered by another instance
// before the clearing) and connects here, where the room never had one,
// is told the room has none; a page that shows none gets no frame, and a
// room whose message is set sends it, once.
func TestMessageClearedElsewhere(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src, b := newSource(), newBroker()
		h := start(t, New(b, src, nil, quiet(Options{})))
		src.set("drop", "a", wire.State{Status: wire.StatusWaiting, Position: 1, Settings: 7})
		src.set("drop", "b", wire.State{Status: wire.StatusWaiting, Position: 2, Settings: 7})
		shows, blank := newTransport("ws"), newTransport("sse")
		if _, err := h.AttachPage(context.Background(), "drop", "a", shows, Page{Message: true}); err != nil {
			t.Fatal(err)
		}
		mustAttach(t, h.Hub, "drop", "b", blank)
		synctest.Wait()
		if got := notices(t, shows); len(got) != 1 || got[0] != "" {
			t.Fatalf("a page showing a message, room without one: %q", got)
		}
		if got := notices(t, blank); len(got) != 0 {
			t.Fatalf("a page showing none: %q", got)
		}
		const text = "Doors open at noon."
		src.set("calm", "c", wire.State{Status: wire.StatusWaiting, Position: 1, Settings: 3, Message: text})
		set := newTransport("ws")
		if _, err := h.AttachPage(context.Background(), "calm", "c", set, Page{Message: true}); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		if got := notices(t, set); len(got) != 1 || got[0] != text {
			t.Fatalf("a room with a message: %q", got)
		}
	})
}

// A message event lost on the way is made good by the next reconcile.
func TestMessageReconciled(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src, b := newSource(), newBroker()
		h := start(t, New(b, src, nil, quiet(Options{})))
		src.set("drop", "a", wire.State{Status: wire.StatusWaiting, Position: 3, Settings: 1})
		a := newTransport("ws")
		mustAttach(t, h.Hub, "drop", "a", a)
		synctest.Wait()
		src.set("drop", "a", wire.State{Status: wire.StatusWaiting, Position: 3, Settings: 2, Message: "hello"})
		b.publish(t, "drop", `{"type":"config","room":"drop"}`)
		synctest.Wait()
		if got := notices(t, a); len(got) != 1 || got[0] != "hello" {
			t.Fatalf("after reconcile: %q", got)
		}
	})
}
