package demo

import (
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/goleak"

	"github.com/waitroom/waitroom/internal/httperr"
	"github.com/waitroom/waitroom/internal/waitfor"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m,
		// fasthttp's process-wide date updater, started once.
		goleak.IgnoreAnyFunction("github.com/valyala/fasthttp.updateServerDate.func1"),
	)
}

// newApp mounts d behind a guard that lets through only requests with an
// X-Holder header, whose value the holder reports as the visitor.
func newApp(d *Demo) *fiber.App {
	app := fiber.New(fiber.Config{ErrorHandler: httperr.Handler(slog.New(slog.DiscardHandler)), DisableStartupMessage: true})
	guard := func(c *fiber.Ctx) error {
		if c.Get("X-Holder") == "" {
			return httperr.New(401, "missing_token", "no entry token")
		}
		return c.Next()
	}
	d.Mount(app, guard, func(c *fiber.Ctx) (string, string) { return c.Params("room"), c.Get("X-Holder") })
	return app
}

type answer struct {
	code  int
	retry string
	body  map[string]map[string]any
}

func order(t *testing.T, app *fiber.App, room, holder string) answer {
	t.Helper()
	req := httptest.NewRequest("POST", "/api/v1/rooms/"+room+"/orders", nil)
	if holder != "" {
		req.Header.Set("X-Holder", holder)
	}
	resp, err := app.Test(req, -1)
	if err != nil {
		t.Error(err)
		return answer{}
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	a := answer{code: resp.StatusCode, retry: resp.Header.Get("Retry-After")}
	if err := json.Unmarshal(raw, &a.body); err != nil {
		t.Errorf("not JSON: %q", raw)
	}
	return a
}

func TestOrder(t *testing.T) {
	d := New(&Options{Slots: 2, ServiceTime: time.Millisecond})
	read := series(t, d)
	app := newApp(d)
	if a := order(t, app, "shop", ""); a.code != 401 || a.body["error"]["code"] != "missing_token" {
		t.Fatalf("refused by the guard: %d %v", a.code, a.body)
	}
	if n := read()["waitroom_orders_total/created"]; n != 0 {
		t.Fatalf("a refused request counted as %v orders", n)
	}
	a := order(t, app, "shop", "v1")
	if a.code != 201 || a.body["order"]["room"] != "shop" || a.body["order"]["visitor"] != "v1" {
		t.Fatalf("order: %d %v", a.code, a.body)
	}
	if _, ok := a.body["order"]["dbMs"].(float64); !ok {
		t.Fatalf("order without dbMs: %v", a.body)
	}
	if n := read()["waitroom_orders_total/created"]; n != 1 {
		t.Fatalf("created = %v, want 1", n)
	}
	if d.InUse() != 0 {
		t.Fatalf("%d slots held after the order", d.InUse())
	}
	if a := order(t, app, "shop", ""); a.code != 401 {
		t.Fatal(a.code)
	}
	resp, err := app.Test(httptest.NewRequest("GET", "/api/v1/rooms/shop/orders", nil), -1)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode == http.StatusCreated {
		t.Fatal("GET placed an order")
	}
}

// TestBusyPool: an order that finds every slot taken waits up to Wait,
// then gets 503 db_timeout with Retry-After; with a negative Wait it does
// not wait at all.
func TestBusyPool(t *testing.T) {
	for _, wait := range []time.Duration{30 * time.Millisecond, -1} {
		d := New(&Options{Slots: 1, ServiceTime: 400 * time.Millisecond, Wait: wait})
		read := series(t, d)
		app := newApp(d)
		first := make(chan answer, 1)
		go func() { first <- order(t, app, "shop", "a") }()
		waitfor.Until(t, 5*time.Second, "the first order holds the slot", func() bool { return d.InUse() == 1 })
		start := time.Now()
		a := order(t, app, "shop", "b")
		if a.code != 503 || a.body["error"]["code"] != "db_timeout" || a.retry != "1" {
			t.Fatalf("wait %v: busy pool: %d %v Retry-After %q", wait, a.code, a.body, a.retry)
		}
		if took := time.Since(start); wait > 0 && took < wait {
			t.Fatalf("gave up after %v, before its wait %v", took, wait)
		}
		if a := <-first; a.code != 201 {
			t.Fatalf("first order: %d %v", a.code, a.body)
		}
		if m := read(); m["waitroom_orders_total/created"] != 1 || m["waitroom_orders_total/db_timeout"] != 1 || m["waitroom_db_slots_peak"] != 1 {
			t.Fatalf("wait %v: series %v, want 1 created, 1 db_timeout, peak 1", wait, m)
		}
		if a := order(t, app, "shop", "b"); a.code != 201 {
			t.Fatalf("after the slot came free: %d %v", a.code, a.body)
		}
	}
}

// series registers d on a registry of its own and returns a function
// that reads every series there, by name and label values.
func series(t *testing.T, d *Demo) func() map[string]float64 {
	t.Helper()
	reg := prometheus.NewRegistry()
	if err := d.Register(reg); err != nil {
		t.Fatal(err)
	}
	if err := d.Register(reg); err == nil {
		t.Fatal("registering twice on one registry did not fail")
	}
	return func() map[string]float64 {
		t.Helper()
		got := map[string]float64{}
		mfs, err := reg.Gather()
		if err != nil {
			t.Fatal(err)
		}
		for _, mf := range mfs {
			for _, m := range mf.GetMetric() {
				key := mf.GetName()
				for _, l := range m.GetLabel() {
					key += "/" + l.GetValue()
				}
				got[key] = m.GetGauge().GetValue() + m.GetCounter().GetValue()
			}
		}
		return got
	}
}

func TestRegister(t *testing.T) {
	got := series(t, New(nil))()
	want := map[string]float64{"waitroom_orders_total/created": 0, "waitroom_orders_total/db_timeout": 0,
		"waitroom_db_slots_in_use": 0, "waitroom_db_slots_peak": 0, "waitroom_db_slots": 40}
	if len(got) != len(want) {
		t.Fatalf("series %v, want %v", got, want)
	}
	for k, v := range want {
		if g, ok := got[k]; !ok || g != v {
			t.Fatalf("series %v, want %v", got, want)
		}
	}
}
