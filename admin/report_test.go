package admin

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/waitroom/waitroom/internal/httperr"
	"github.com/waitroom/waitroom/report"
	"github.com/waitroom/waitroom/schedule"
)

// fakeReports answers every range with an empty report and remembers it.
type fakeReports struct{ from, to time.Time }

func (f *fakeReports) Read(_ context.Context, room string, from, to time.Time) (report.Report, error) {
	f.from, f.to = from, to
	return report.Report{Room: room, From: from, To: to, Series: []report.Minute{}}, nil
}

// downEvents are events whose store fails for room "down".
type downEvents struct{ *memEvents }

func (d downEvents) Get(ctx context.Context, room, name string) (schedule.Event, error) {
	if room == "down" {
		return schedule.Event{}, errors.New("store down")
	}
	return d.memEvents.Get(ctx, room, name)
}

func reportAPI(reports Reports, ev Events) *fiber.App {
	keys := Keys{NewKey("root", []byte(adminSecret), Admin)}
	a := New(Options{
		Keys:       func() Keys { return keys },
		StoreError: func(_ *fiber.Ctx, err error) error { return httperr.ErrUnavailable },
		Log:        slog.New(slog.NewTextHandler(io.Discard, nil)),
		Reports:    reports,
		Events:     ev,
	})
	app := fiber.New(fiber.Config{ErrorHandler: httperr.Handler(slog.New(slog.NewTextHandler(io.Discard, nil)))})
	a.Mount(app.Group("/api/v1"))
	return app
}

func TestEventReport(t *testing.T) {
	from := time.Date(2026, 12, 1, 18, 0, 0, 0, time.UTC)
	// launch has a pre-queue, where its report starts; sale has none.
	launch := schedule.Event{Name: "launch", PrequeueAt: from, StartsAt: from.Add(10 * time.Minute), EndsAt: from.Add(90 * time.Minute)}
	sale := schedule.Event{Name: "sale", StartsAt: from.Add(2 * time.Hour), EndsAt: from.Add(3 * time.Hour)}
	ev := downEvents{&memEvents{evs: map[string]schedule.Event{"drop/launch": launch, "drop/sale": sale}}}
	fr := &fakeReports{}
	app := reportAPI(fr, ev)
	r := call(t, app, adminSecret, "GET", "/rooms/drop/events/launch/report", "")
	if r.code != 200 || r.body["event"] != "launch" || !fr.from.Equal(launch.PrequeueAt) || !fr.to.Equal(launch.EndsAt) {
		t.Fatalf("event report: %d %v, read %v–%v", r.code, r.body, fr.from, fr.to)
	}
	r = call(t, app, adminSecret, "GET", "/rooms/drop/events/sale/report", "")
	if r.code != 200 || r.body["event"] != "sale" || !fr.from.Equal(sale.StartsAt) || !fr.to.Equal(sale.EndsAt) {
		t.Fatalf("sale report: %d %v, read %v–%v", r.code, r.body, fr.from, fr.to)
	}
	for _, tc := range []struct {
		path string
		code int
		want string
	}{
		{"/rooms/drop/events/other/report", 404, "event_not_found"},
		{"/rooms/down/events/launch/report", 503, "unavailable"},
		{"/rooms/drop/events/launch/report?format=pdf", 400, "invalid_format"},
		{"/rooms/drop/events/No!/report", 400, "invalid_event_name"},
	} {
		if r := call(t, app, adminSecret, "GET", tc.path, ""); r.code != tc.code || r.errCode() != tc.want {
			t.Errorf("%s: %d %v, want %d %s", tc.path, r.code, r.body, tc.code, tc.want)
		}
	}
	// Without events or reports wired, the routes say so.
	if r := call(t, reportAPI(fr, nil), adminSecret, "GET", "/rooms/drop/events/launch/report", ""); r.code != 503 || r.errCode() != "events_unavailable" {
		t.Errorf("no events: %d %v", r.code, r.body)
	}
	if r := call(t, reportAPI(nil, ev), adminSecret, "GET", "/rooms/drop/report", ""); r.code != 404 || r.errCode() != "reports_off" {
		t.Errorf("no reports: %d %v", r.code, r.body)
	}
	if got := RouteRole("GET", "/api/v1/admin/rooms/drop/events/launch/report"); got != ReadOnly {
		t.Errorf("event report role %v", got)
	}
}

func TestReportRange(t *testing.T) {
	now := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
	from, to, err := reportRange("", "", now)
	if err != nil || !to.Equal(now) || !from.Equal(now.Add(-24*time.Hour)) {
		t.Fatalf("defaults: %v %v %v", from, to, err)
	}
	from, to, err = reportRange("", "2026-12-01T10:00:00+01:00", now)
	if err != nil || !to.Equal(time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)) || to.Sub(from) != 24*time.Hour {
		t.Fatalf("to only: %v %v %v", from, to, err)
	}
	for _, tc := range []struct {
		from, to string
		want     error
	}{
		{"2026-12-01", "", errReportFrom},
		{"", "noon", errReportTo},
		{"2026-12-02T12:00:00Z", "2026-12-02T12:00:00Z", errReportRange},
		{"2026-10-01T00:00:00Z", "", errReportLong},
	} {
		if _, _, err := reportRange(tc.from, tc.to, now); err != tc.want {
			t.Errorf("%q–%q: %v, want %v", tc.from, tc.to, err, tc.want)
		}
	}
}
