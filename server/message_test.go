package main

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/waitroom/waitroom/internal/redistest"
	"github.com/waitroom/waitroom/internal/waitfor"
)

// texts returns the texts of the message frames p received.
func (p *pushClient) texts() []string {
	var out []string
	for _, m := range p.messages() {
		if m.Type != "message" {
			continue
		}
		var f struct {
			Text *string `json:"text"`
		}
		if err := json.Unmarshal([]byte(m.raw), &f); err == nil && f.Text != nil {
			out = append(out, *f.Text)
		}
	}
	return out
}

func (p *pushClient) lastText() (string, bool) {
	t := p.texts()
	if len(t) == 0 {
		return "", false
	}
	return t[len(t)-1], true
}

const delayed = "The sale is delayed by 10 minutes; your place is kept. «Ünïcödé» & \"quotes\""

// The message set from the API reaches WebSocket and SSE at once, the next
// poll and every later connection; clearing it removes it everywhere.
func TestMessageAPIPushAndPoll(t *testing.T) {
	eachServer(t, withAdmin, func(t *testing.T, ts *testServer) {
		ws, sse, poller := newVisitor(t, ts.URL), newVisitor(t, ts.URL), newVisitor(t, ts.URL)
		ws.join("drop")
		sse.join("drop")
		if r := poller.join("drop"); strings.Contains(r.Raw, "message") {
			t.Fatalf("join before any message: %s", r.Raw)
		}
		wc, sc := dial(t, "ws", ts.URL, "drop", ws.cred), dial(t, "sse", ts.URL, "drop", sse.cred)
		waitfor.Until(t, 5*time.Second, "first states", func() bool { return wc.count("waiting") > 0 && sc.count("waiting") > 0 })

		if r := ws.admin("PUT", "/rooms/drop/message", `{"text":`+jsonString(delayed)+`}`); r.Code != 200 || r.str("message") != delayed {
			t.Fatalf("set: %d %s", r.Code, r.Raw)
		}
		for _, p := range []*pushClient{wc, sc} {
			waitfor.Until(t, 5*time.Second, p.kind+" message", func() bool { got, _ := p.lastText(); return got == delayed })
		}
		if r := poller.status("drop"); r.str("message") != delayed || r.str("status") != "waiting" {
			t.Fatalf("poll: %s", r.Raw)
		}
		late := newVisitor(t, ts.URL)
		if r := late.join("drop"); r.str("message") != delayed {
			t.Fatalf("join after the message: %s", r.Raw)
		}
		lc := dial(t, "ws", ts.URL, "drop", late.cred)
		waitfor.Until(t, 5*time.Second, "message on connect", func() bool { got, _ := lc.lastText(); return got == delayed })
		if r := ws.admin("GET", "/rooms/drop", ""); r.str("message") != delayed {
			t.Fatalf("settings: %s", r.Raw)
		}

		// A page that joined before the clearing and connects after it
		// is told the message is gone: its join answer still had it.
		tardy := newVisitor(t, ts.URL)
		if r := tardy.join("drop"); r.str("message") != delayed {
			t.Fatalf("join before clearing: %s", r.Raw)
		}

		if r := ws.admin("DELETE", "/rooms/drop/message", ""); r.Code != 200 || r.str("message") != "" {
			t.Fatalf("clear: %d %s", r.Code, r.Raw)
		}
		for _, p := range []*pushClient{wc, sc, lc} {
			waitfor.Until(t, 5*time.Second, p.kind+" cleared", func() bool { got, ok := p.lastText(); return ok && got == "" })
		}
		for _, kind := range []string{"ws", "sse"} {
			p := dial(t, kind, ts.URL, "drop", tardy.cred)
			waitfor.Until(t, 5*time.Second, kind+" cleared on connect", func() bool { got, ok := p.lastText(); return ok && got == "" })
		}
		other := newVisitor(t, ts.URL)
		if r := other.join("drop"); strings.Contains(r.Raw, "message") {
			t.Fatalf("join after clearing: %s", r.Raw)
		}
		// The settings PUT sets it too.
		if r := ws.admin("PUT", "/rooms/drop", `{"message":"Back soon."}`); r.Code != 200 || r.str("message") != "Back soon." {
			t.Fatalf("put settings: %s", r.Raw)
		}
		waitfor.Until(t, 5*time.Second, "message from settings", func() bool { got, _ := wc.lastText(); return got == "Back soon." })

		for body, want := range map[string]string{
			`{"text":"<b>Sale</b>"}`:                      "plain text",
			`{"text":"` + strings.Repeat("x", 501) + `"}`: "500",
			`{}`:                       "required",
			`{"text":"a","html":true}`: "html",
			`{"text":"tab\there"}`:     "control",
		} {
			r := ws.admin("PUT", "/rooms/drop/message", body)
			if r.Code != 400 || r.errCode() != "invalid_field" || !strings.Contains(r.Raw, want) {
				t.Fatalf("%.40s: %d %s", body, r.Code, r.Raw)
			}
		}
		if got, _ := wc.lastText(); got != "Back soon." {
			t.Fatalf("a refused message changed it: %q", got)
		}
	})
}

// A message set through one instance reaches connections on another.
func TestMessageAcrossInstances(t *testing.T) {
	for _, client := range clientKinds {
		t.Run(client, func(t *testing.T) {
			srv := redistest.StartReal(t)
			a, b := startServer(t, srv, client, withAdmin), startServer(t, srv, client, withAdmin)
			v := newVisitor(t, a.URL)
			v.join("drop")
			p := dial(t, "sse", b.URL, "drop", v.cred)
			waitfor.Until(t, 5*time.Second, "first state", func() bool { return p.count("waiting") > 0 })
			if r := newVisitor(t, a.URL).admin("PUT", "/rooms/drop/message", `{"text":"From A."}`); r.Code != 200 {
				t.Fatalf("set: %s", r.Raw)
			}
			waitfor.Until(t, 5*time.Second, "message on B", func() bool { got, _ := p.lastText(); return got == "From A." })

			// A page whose join on A carried a message, connecting to B after
			// the clearing, where the room has had no connection, is told
			// the message is gone: it says it shows one (msg=1, after the
			// credential in the URL the helpers build).
			admin := newVisitor(t, a.URL)
			if r := admin.admin("PUT", "/rooms/quiet/message", `{"text":"Later."}`); r.Code != 200 {
				t.Fatalf("set: %s", r.Raw)
			}
			tardy := newVisitor(t, a.URL)
			if r := tardy.join("quiet"); r.str("message") != "Later." {
				t.Fatalf("join: %s", r.Raw)
			}
			if r := admin.admin("DELETE", "/rooms/quiet/message", ""); r.Code != 200 {
				t.Fatalf("clear: %s", r.Raw)
			}
			for _, kind := range []string{"ws", "sse"} {
				c := dial(t, kind, b.URL, "quiet", tardy.cred+"&msg=1")
				waitfor.Until(t, 5*time.Second, kind+" cleared on B", func() bool { got, ok := c.lastText(); return ok && got == "" })
			}
		})
	}
}

func jsonString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}
