package metrics

import (
	"context"
	"errors"
	"io"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/waitroom/waitroom/hub"
	"github.com/waitroom/waitroom/internal/rediscall"
	"github.com/waitroom/waitroom/queue"
)

type fakeHub struct {
	stats hub.Stats
	ready bool
}

func (h *fakeHub) Stats() hub.Stats { return h.stats }
func (h *fakeHub) Ready() bool      { return h.ready }

type fakeRooms map[string]Room

func (r fakeRooms) Snapshot() map[string]Room { return r }

type fakePolls int64

func (p fakePolls) Len() int64 { return int64(p) }

// scrape returns the text exposition of m.
func scrape(t *testing.T, m *Metrics) string {
	t.Helper()
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	if rec.Code != 200 {
		t.Fatalf("scrape: %d", rec.Code)
	}
	b, _ := io.ReadAll(rec.Body)
	return string(b)
}

func wantLines(t *testing.T, body string, lines ...string) {
	t.Helper()
	for _, l := range lines {
		if !strings.Contains(body, l+"\n") {
			t.Errorf("no %q in\n%s", l, body)
		}
	}
}

// TestSeriesAtStart: before any event, every series with known labels
// reads 0, and the gauges read their sources.
func TestSeriesAtStart(t *testing.T) {
	m := New(Build{Version: "v1.2.3", Revision: "abc", GoVersion: "go1.26"})
	h := &fakeHub{stats: hub.Stats{Conns: map[string]int64{"ws": 3, "sse": 2}, Sent: 7, DroppedSlow: 1}, ready: true}
	m.Watch(Sources{Hub: h, Rooms: fakeRooms{
		"shop": {RoomStats: queue.RoomStats{Waiting: 4, PreQueue: 1, ActiveTokens: 2, Rate: 1.5}},
		"drop": {RoomStats: queue.RoomStats{Waiting: 7}, Paused: true},
	}, Polls: fakePolls(9), MaxConns: 100})
	body := scrape(t, m)
	wantLines(t, body,
		`waitroom_build_info{goversion="go1.26",revision="abc",version="v1.2.3"} 1`,
		`# HELP waitroom_polls_total Status polls by how they were answered (redis or memory).`,
		`waitroom_polls_total{answer="memory"} 0`,
		`waitroom_polls_total{answer="redis"} 0`,
		`waitroom_redis_errors_total 0`,
		`waitroom_fail_open_total{outcome="closed"} 0`,
		`waitroom_fail_open_total{outcome="admitted"} 0`,
		`waitroom_redis_state_restored_total{what="tokens"} 0`,
		`waitroom_redis_state_restored_total{what="webhooks"} 0`,
		`waitroom_redis_state_restored_total{what="webhook_deliveries"} 0`,
		`waitroom_webhook_dropped_total{scope="deployment"} 0`,
		`waitroom_webhook_dropped_total{scope="room"} 0`,
		`waitroom_redis_call_errors_total{op="join"} 0`,
		`waitroom_delivery_lag_seconds_count{transport="ws"} 0`,
		`waitroom_delivery_lag_seconds_count{transport="sse"} 0`,
		`waitroom_max_connections 100`,
		`waitroom_pubsub_up 1`,
		`waitroom_poll_cache_entries 9`,
		`waitroom_connections{transport="ws"} 3`,
		`waitroom_connections{transport="sse"} 2`,
		`waitroom_push_messages_total 7`,
		`waitroom_push_dropped_slow_total 1`,
		`waitroom_ws_heartbeats_total 0`,
		`waitroom_waiting{room="shop"} 5`,
		`waitroom_active_tokens{room="shop"} 2`,
		`waitroom_admission_rate{room="shop"} 1.5`,
		`waitroom_room_paused{room="shop"} 0`,
		`waitroom_room_paused{room="drop"} 1`,
		`waitroom_waiting{room="drop"} 7`,
	)
	if strings.Contains(body, "waitroom_db_slots") || strings.Contains(body, "waitroom_orders_total") {
		t.Error("the demo's series, which only the demo registers")
	}
	h.ready = false
	wantLines(t, scrape(t, m), `waitroom_pubsub_up 0`)
}

// TestCounters: each event method moves its own series only.
func TestCounters(t *testing.T) {
	m := New(Build{})
	m.StoreError()
	m.Poll(true)
	m.Poll(false)
	m.Poll(false)
	m.FailOpen("used")
	m.FailOpenAdmitted()
	m.Admitted("shop", 3)
	m.Admitted("shop", 2)
	m.Delivered("ws", 3*time.Millisecond)
	m.Delivered("sse", time.Second)
	m.WSHeartbeat()
	m.Restored(queue.Restored{Settings: true, Tickets: 4, Tokens: 2})
	m.WebhooksRestored(2, 0)
	m.WebhooksRestored(0, 5)
	m.WebhookDropped("room", 3)
	m.WebhookDropped("room", 1)
	m.Watch(Sources{Hub: &fakeHub{}, Rooms: fakeRooms{}, Polls: fakePolls(0)})
	wantLines(t, scrape(t, m),
		`waitroom_redis_errors_total 1`,
		`waitroom_polls_total{answer="memory"} 1`,
		`waitroom_polls_total{answer="redis"} 2`,
		`waitroom_fail_open_total{outcome="used"} 1`,
		`waitroom_fail_open_total{outcome="admitted"} 1`,
		`waitroom_fail_open_total{outcome="closed"} 0`,
		`waitroom_admissions_total{room="shop"} 5`,
		`waitroom_delivery_lag_seconds_bucket{transport="ws",le="0.005"} 1`,
		`waitroom_delivery_lag_seconds_bucket{transport="sse",le="0.5"} 0`,
		`waitroom_delivery_lag_seconds_count{transport="sse"} 1`,
		`waitroom_ws_heartbeats_total 1`,
		`waitroom_redis_state_restored_total{what="settings"} 1`,
		`waitroom_redis_state_restored_total{what="tickets"} 4`,
		`waitroom_redis_state_restored_total{what="removed"} 0`,
		`waitroom_redis_state_restored_total{what="tokens"} 2`,
		`waitroom_redis_state_restored_total{what="webhooks"} 2`,
		`waitroom_redis_state_restored_total{what="webhook_deliveries"} 5`,
		`waitroom_webhook_dropped_total{scope="room"} 4`,
		`waitroom_webhook_dropped_total{scope="deployment"} 0`,
	)
}

// fakeRedis answers every call with err.
type fakeRedis struct{ err error }

func (r fakeRedis) Eval(context.Context, *rediscall.Script, []string, ...string) (any, error) {
	return "ok", r.err
}
func (r fakeRedis) Do(context.Context, ...string) (any, error) { return "ok", r.err }

func TestRedis(t *testing.T) {
	m := New(Build{})
	ok, failing := m.Redis(fakeRedis{}), m.Redis(fakeRedis{err: errors.New("down")})
	ctx := context.Background()
	s := &rediscall.Script{Name: "join"}
	if v, err := ok.Eval(ctx, s, nil); v != "ok" || err != nil {
		t.Fatalf("Eval = %v, %v", v, err)
	}
	if _, err := failing.Eval(ctx, s, nil); err == nil {
		t.Fatal("the error is lost")
	}
	_, _ = ok.Do(ctx, "GET", "k")
	_, _ = failing.Do(ctx, "SET", "k", "v")
	_, _ = ok.Do(ctx)
	wantLines(t, scrape(t, m),
		`waitroom_redis_seconds_count{op="join"} 2`,
		`waitroom_redis_call_errors_total{op="join"} 1`,
		`waitroom_redis_seconds_count{op="get"} 1`,
		`waitroom_redis_call_errors_total{op="get"} 0`,
		`waitroom_redis_call_errors_total{op="set"} 1`,
		`waitroom_redis_seconds_count{op="unknown"} 1`,
	)
}
