package main

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/waitroom/waitroom/internal/redistest"
	"github.com/waitroom/waitroom/internal/waitfor"
	"github.com/waitroom/waitroom/report"
	"github.com/waitroom/waitroom/webhook"
)

// hookReceiver records the webhook deliveries it gets, after checking
// their signature with secret.
type hookReceiver struct {
	*httptest.Server
	secret string
	mu     sync.Mutex
	byID   map[string]int
	got    []hookEvent
	bad    int
}

type hookEvent struct {
	Type string `json:"type"`
	Data struct {
		Room   string        `json:"room"`
		Event  any           `json:"event"` // the event's object, or report.ready's event name
		Path   string        `json:"path"`
		Totals report.Totals `json:"totals"`
		Audit  struct {
			Action  string `json:"action"`
			Who     string `json:"who"`
			Changes []struct {
				Field string `json:"field"`
			} `json:"changes"`
		} `json:"audit"`
	} `json:"data"`
}

func newHookReceiver(t *testing.T, secret string) *hookReceiver {
	h := &hookReceiver{secret: secret, byID: map[string]int{}}
	h.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		ok := h.verify(r.Header, body)
		h.mu.Lock()
		defer h.mu.Unlock()
		if !ok {
			h.bad++
			w.WriteHeader(401)
			return
		}
		var e hookEvent
		_ = json.Unmarshal(body, &e)
		h.byID[r.Header.Get("webhook-id")]++
		h.got = append(h.got, e)
	}))
	t.Cleanup(h.Close)
	return h
}

func (h *hookReceiver) verify(hdr http.Header, body []byte) bool {
	key, _ := base64.StdEncoding.DecodeString(strings.TrimPrefix(h.secretNow(), "whsec_"))
	m := hmac.New(sha256.New, key)
	m.Write([]byte(hdr.Get("webhook-id") + "." + hdr.Get("webhook-timestamp") + "." + string(body)))
	want := "v1," + base64.StdEncoding.EncodeToString(m.Sum(nil))
	return hdr.Get("webhook-id") != "" && hmac.Equal([]byte(hdr.Get("webhook-signature")), []byte(want))
}

func (h *hookReceiver) secretNow() string { h.mu.Lock(); defer h.mu.Unlock(); return h.secret }

func (h *hookReceiver) setSecret(s string) { h.mu.Lock(); defer h.mu.Unlock(); h.secret = s }

func (h *hookReceiver) events() ([]hookEvent, map[string]int, int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	ids := make(map[string]int, len(h.byID))
	for k, v := range h.byID {
		ids[k] = v
	}
	return append([]hookEvent(nil), h.got...), ids, h.bad
}

// loopbackHooks lets webhooks reach the tests' receivers on 127.0.0.1,
// as -webhook-allow-cidrs would.
var loopbackHooks, _ = webhook.ParseAllowList("127.0.0.0/8,::1")

// fastHooks runs the webhook delivery with quick polls and retries.
func fastHooks() *serverOptions {
	return &serverOptions{NoTick: true, Webhooks: webhook.Options{Poll: 20 * time.Millisecond, Backoff: []time.Duration{50 * time.Millisecond}, Allow: loopbackHooks}}
}

func outboxDrained(t *testing.T, ts *testServer) {
	t.Helper()
	waitfor.Until(t, 10*time.Second, "an empty webhook outbox", func() bool {
		v, err := ts.redis.Do(context.Background(), "HLEN", "wr:{webhooks!}:jobs")
		n, _ := v.(int64)
		return err == nil && n == 0
	})
}

// Three instances on one Redis, each delivering webhooks: a room created,
// paused, resumed and changed through the admin API of different
// instances reaches the -webhooks file's endpoint once per event, signed,
// with the audit entry.
func TestWebhooksFromAdminActions(t *testing.T) {
	for _, kind := range redistest.Kinds {
		t.Run(kind, func(t *testing.T) {
			srv := redistest.Start(t, kind)
			rc := newHookReceiver(t, webhook.NewSecret())
			file := filepath.Join(t.TempDir(), "webhooks.yaml")
			text := "webhooks:\n  - url: " + rc.URL + "/in\n    secret: " + rc.secret + "\n"
			if err := os.WriteFile(file, []byte(text), 0o600); err != nil {
				t.Fatal(err)
			}
			var vs []*visitor
			var first *testServer
			for i := range 3 {
				ts := startServerOpts(t, srv, clientKinds[i%len(clientKinds)], fastHooks(), func(c *config) {
					withAdmin(c)
					c.Webhooks = file
				})
				if first == nil {
					first = ts
				}
				vs = append(vs, newVisitor(t, ts.URL))
			}
			for i, step := range []struct{ method, path, body string }{
				{"POST", "/rooms", `{"room":"hooked"}`},
				{"POST", "/rooms/hooked/pause", ""},
				{"POST", "/rooms/hooked/resume", ""},
				{"PUT", "/rooms/hooked", `{"batch":7}`},
			} {
				if r := vs[i%3].admin(step.method, step.path, step.body); r.Code/100 != 2 {
					t.Fatalf("%s %s: %d %s", step.method, step.path, r.Code, r.Raw)
				}
			}
			waitfor.Until(t, 10*time.Second, "four webhook events", func() bool {
				got, _, _ := rc.events()
				return len(got) >= 4
			})
			outboxDrained(t, first)
			got, ids, bad := rc.events()
			if bad != 0 || len(got) != 4 || len(ids) != 4 {
				t.Fatalf("got %+v (ids %v), %d refused", got, ids, bad)
			}
			want := map[string]string{"room.created": "create", "room.paused": "pause", "room.resumed": "resume", "settings.changed": "update"}
			for _, e := range got {
				if want[e.Type] != e.Data.Audit.Action || e.Data.Room != "hooked" || e.Data.Audit.Who == "" {
					t.Errorf("event %+v", e)
				}
				delete(want, e.Type)
				if e.Type == "settings.changed" && (len(e.Data.Audit.Changes) != 1 || e.Data.Audit.Changes[0].Field != "batch") {
					t.Errorf("settings.changed without the change: %+v", e)
				}
			}
			if len(want) != 0 {
				t.Errorf("missing %v", want)
			}
		})
	}
}

// A room's webhooks through the admin API: bad input answers its code,
// a secret left out is made and shown once, never again in full, and
// kept on a later change; the room's events reach the endpoint signed
// with it.
func TestRoomWebhooksAPI(t *testing.T) {
	ts := startServerOpts(t, redistest.StartMini(t), "go-redis", fastHooks(), withAdmin)
	v := newVisitor(t, ts.URL)
	rc := newHookReceiver(t, "")
	if r := v.admin("PUT", "/rooms/nothere/webhooks", `{"webhooks":[]}`); r.Code != 404 || r.errCode() != "room_not_found" {
		t.Fatalf("missing room: %d %s", r.Code, r.Raw)
	}
	if r := v.admin("POST", "/rooms", `{"room":"shop"}`); r.Code != 201 {
		t.Fatalf("create: %d %s", r.Code, r.Raw)
	}
	for body, code := range map[string]string{
		`{"webhooks":[{"url":"ftp://x.example/"}]}`:                                "invalid_webhook_url",
		`{"webhooks":[{"url":"not a url"}]}`:                                       "invalid_webhook_url",
		`{"webhooks":[{"url":"https://x.example/","events":["room.melted"]}]}`:     "unknown_event",
		`{"webhooks":[{"url":"https://x.example/","secret":"plain"}]}`:             "invalid_webhook_secret",
		`{"webhooks":[{"url":"https://x.example/"},{"url":"https://x.example/"}]}`: "invalid_webhook_url",
		`{"webhooks":[{"url":"https://x.example/","colour":"red"}]}`:               "invalid_field",
		`{"webhooks":[{"url":"http://169.254.169.254/latest/meta-data/"}]}`:        "webhook_target_not_allowed",
		`{"webhooks":[{"url":"http://[::ffff:10.0.0.1]:6379/"}]}`:                  "webhook_target_not_allowed",
		`[1]`: "invalid_json",
	} {
		if r := v.admin("PUT", "/rooms/shop/webhooks", body); r.Code != 400 || r.errCode() != code {
			t.Errorf("%s: %d %s, want 400 %s", body, r.Code, r.Raw, code)
		}
	}
	url := rc.URL + "/shop?token=receiver-credential"
	r := v.admin("PUT", "/rooms/shop/webhooks", `{"webhooks":[{"url":"`+url+`","events":["room.paused"]}]}`)
	fresh, _ := r.Body["newSecrets"].(map[string]any)
	secret, _ := fresh[url].(string)
	if r.Code != 200 || !strings.HasPrefix(secret, "whsec_") || strings.Contains(strings.Replace(r.Raw, secret, "", 1), secret) {
		t.Fatalf("put: %d %s", r.Code, r.Raw)
	}
	rc.setSecret(secret)
	// Changed again without the secret: it is kept.
	if r := v.admin("PUT", "/rooms/shop/webhooks", `{"webhooks":[{"url":"`+url+`","events":["room.paused","room.resumed"]}]}`); r.Code != 200 || strings.Contains(r.Raw, secret) || len(r.Body["newSecrets"].(map[string]any)) != 0 {
		t.Fatalf("second put: %d %s", r.Code, r.Raw)
	}
	g := v.admin("GET", "/rooms/shop/webhooks", "")
	if g.Code != 200 || strings.Contains(g.Raw, secret) || !strings.Contains(g.Raw, secret[:10]+"…") || !strings.Contains(g.Raw, `"room.resumed"`) {
		t.Fatalf("get: %d %s", g.Code, g.Raw)
	}
	v.admin("POST", "/rooms/shop/pause", "")
	v.admin("PUT", "/rooms/shop", `{"batch":4}`) // settings.changed: not subscribed
	v.admin("POST", "/rooms/shop/resume", "")
	waitfor.Until(t, 10*time.Second, "the room's events", func() bool {
		got, _, _ := rc.events()
		return len(got) >= 2
	})
	outboxDrained(t, ts)
	got, _, bad := rc.events()
	if bad != 0 || len(got) != 2 || got[0].Type+got[1].Type != "room.pausedroom.resumed" && got[1].Type+got[0].Type != "room.pausedroom.resumed" {
		t.Fatalf("got %+v, %d refused", got, bad)
	}
	if r := v.admin("GET", "/webhooks/dead", ""); r.Code != 200 || r.Raw != `{"dead":[]}` {
		t.Fatalf("dead: %d %s", r.Code, r.Raw)
	}
	if r := v.admin("POST", "/webhooks/dead/msg_nope.0/redeliver", ""); r.Code != 404 || r.errCode() != "dead_letter_not_found" {
		t.Fatalf("redeliver: %d %s", r.Code, r.Raw)
	}
	// The audit trail, which every role reads, names the receiver's host
	// but neither its secret nor the credentials of its URL.
	a, _ := ts.q.Audit(context.Background(), "shop")
	trail := strings.Join(a, "\n")
	if !strings.Contains(trail, `"action":"set-webhooks"`) || !strings.Contains(trail, `"webhooks":["`+rc.URL+`/…"]`) ||
		strings.Contains(trail, "whsec_") || strings.Contains(trail, "receiver-credential") {
		t.Fatalf("audit: %v", a)
	}
}

// A dead delivery is listed with what went wrong and sent again on
// request, under its webhook-id.
func TestDeadWebhookRedeliveredFromAPI(t *testing.T) {
	ts := startServerOpts(t, redistest.StartMini(t), "rueidis", fastHooks(), withAdmin)
	v := newVisitor(t, ts.URL)
	var down sync.Mutex
	failing := true
	rc := newHookReceiver(t, webhook.NewSecret())
	flaky := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		down.Lock()
		f := failing
		down.Unlock()
		if f {
			w.WriteHeader(502)
			return
		}
		rc.Config.Handler.ServeHTTP(w, r)
	}))
	t.Cleanup(flaky.Close)
	v.admin("POST", "/rooms", `{"room":"shop"}`)
	if r := v.admin("PUT", "/rooms/shop/webhooks", `{"webhooks":[{"url":"`+flaky.URL+`","secret":"`+rc.secret+`"}]}`); r.Code != 200 {
		t.Fatalf("put: %d %s", r.Code, r.Raw)
	}
	v.admin("POST", "/rooms/shop/pause", "")
	var dead []any
	waitfor.Until(t, 10*time.Second, "a dead delivery", func() bool {
		r := v.admin("GET", "/webhooks/dead", "")
		dead, _ = r.Body["dead"].([]any)
		return len(dead) == 1
	})
	d, _ := dead[0].(map[string]any)
	if d["type"] != "room.paused" || d["lastStatus"] != float64(502) || d["attempts"] != float64(2) || d["room"] != "shop" {
		t.Fatalf("dead: %v", d)
	}
	down.Lock()
	failing = false
	down.Unlock()
	if r := v.admin("POST", "/webhooks/dead/"+d["id"].(string)+"/redeliver", ""); r.Code != 202 {
		t.Fatalf("redeliver: %d %s", r.Code, r.Raw)
	}
	waitfor.Until(t, 10*time.Second, "the redelivery", func() bool {
		_, ids, _ := rc.events()
		return ids[d["msg"].(string)] == 1
	})
	if r := v.admin("GET", "/webhooks/dead", ""); r.Raw != `{"dead":[]}` {
		t.Fatalf("dead after redeliver: %s", r.Raw)
	}
}

// An opening that passes and the last seat taken reach the endpoint once
// each, from the instances' refresh of the rooms.
func TestWebhooksOpenedAndSoldOut(t *testing.T) {
	srv := redistest.StartReal(t)
	rc := newHookReceiver(t, webhook.NewSecret())
	file := filepath.Join(t.TempDir(), "webhooks.yaml")
	text := "- url: " + rc.URL + "/in\n  secret: " + rc.secret + "\n  events: [room.opened, room.sold_out]\n"
	if err := os.WriteFile(file, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	var first *testServer
	for range 2 {
		ts := startServerOpts(t, srv, "rueidis", fastHooks(), func(c *config) {
			withAdmin(c)
			c.Webhooks = file
		})
		if first == nil {
			first = ts
		}
	}
	a := newVisitor(t, first.URL)
	opens := time.Now().Add(1500 * time.Millisecond).UTC().Format(time.RFC3339Nano)
	if r := a.admin("POST", "/rooms", `{"room":"drop","seats":1,"opensAt":"`+opens+`"}`); r.Code != 201 {
		t.Fatalf("create: %d %s", r.Code, r.Raw)
	}
	v := newVisitor(t, first.URL)
	v.join("drop")
	waitfor.Until(t, 10*time.Second, "room.opened", func() bool {
		got, _, _ := rc.events()
		return len(got) == 1
	})
	first.admitUntil(t, v, "drop")
	waitfor.Until(t, 10*time.Second, "room.sold_out", func() bool {
		got, _, _ := rc.events()
		return len(got) == 2
	})
	outboxDrained(t, first)
	got, ids, bad := rc.events()
	if bad != 0 || len(got) != 2 || len(ids) != 2 || got[0].Type != "room.opened" || got[1].Type != "room.sold_out" {
		t.Fatalf("got %+v, %d refused", got, bad)
	}
}

// A scheduled event across three instances: its start and end, and then
// its report, reach the endpoint once each; report.ready says where the
// report is, which holds the event's arrivals.
func TestEventWebhooksAndReport(t *testing.T) {
	srv := redistest.StartReal(t)
	rc := newHookReceiver(t, webhook.NewSecret())
	file := filepath.Join(t.TempDir(), "webhooks.yaml")
	text := "- url: " + rc.URL + "/in\n  secret: " + rc.secret + "\n  events: [event.started, event.ended, report.ready]\n"
	if err := os.WriteFile(file, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	var ins []*testServer
	for i := range 3 {
		o := fastHooks()
		o.NoTick = false
		ins = append(ins, startServerOpts(t, srv, clientKinds[i%len(clientKinds)], o, func(c *config) {
			withAdmin(c)
			c.Webhooks = file
			c.Capacity.Batch, c.Capacity.Tick = 5, 50*time.Millisecond
		}))
	}
	op := newVisitor(t, ins[0].URL)
	if r := op.admin("POST", "/rooms", `{"room":"drop"}`); r.Code != 201 {
		t.Fatalf("create: %d %s", r.Code, r.Raw)
	}
	starts, ends := time.Now().Add(700*time.Millisecond), time.Now().Add(2500*time.Millisecond)
	body := fmt.Sprintf(`{"name":"sale","startsAt":%q,"endsAt":%q,"settings":{"message":"Sale on."}}`,
		starts.UTC().Format(time.RFC3339Nano), ends.UTC().Format(time.RFC3339Nano))
	if r := op.admin("POST", "/rooms/drop/events", body); r.Code != 201 {
		t.Fatalf("event: %d %s", r.Code, r.Raw)
	}
	waitfor.Until(t, 10*time.Second, "event.started", func() bool {
		got, _, _ := rc.events()
		return len(got) >= 1
	})
	for i := range 6 {
		newVisitor(t, ins[i%3].URL).join("drop")
	}
	waitfor.Until(t, 20*time.Second, "event.ended and report.ready", func() bool {
		got, _, _ := rc.events()
		return len(got) >= 3
	})
	outboxDrained(t, ins[0])
	got, ids, bad := rc.events()
	var types []string
	for _, e := range got {
		types = append(types, e.Type)
	}
	if bad != 0 || len(ids) != 3 || strings.Join(types, " ") != "event.started event.ended report.ready" {
		t.Fatalf("got %v (ids %v), %d refused", types, ids, bad)
	}
	for _, e := range got[:2] {
		if ev, _ := e.Data.Event.(map[string]any); e.Data.Room != "drop" || ev["name"] != "sale" || ev["endsAt"] == nil {
			t.Errorf("%s data %+v", e.Type, e.Data)
		}
	}
	ready := got[2].Data
	if ready.Room != "drop" || ready.Event != "sale" || ready.Path != "/api/v1/admin/rooms/drop/events/sale/report" {
		t.Fatalf("report.ready data %+v", ready)
	}
	if ready.Totals.Arrivals != 6 {
		t.Errorf("report.ready totals %+v, want 6 arrivals", ready.Totals)
	}
	r := op.do("GET", ready.Path, "", "Authorization", "Bearer "+testAdminKey)
	if r.Code != 200 || r.Body["event"] != "sale" || r.Body["totals"].(map[string]any)["arrivals"] != float64(6) {
		t.Fatalf("GET %s: %d %s", ready.Path, r.Code, r.Raw)
	}
}
