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
)

// fakeReports answers every range with an empty report and remembers it.
type fakeReports struct{ from, to time.Time }

func (f *fakeReports) Read(_ context.Context, room string, from, to time.Time) (report.Report, error) {
	f.from, f.to = from, to
	return report.Report{Room: room, From: from, To: to, Series: []report.Minute{}}, nil
}

// events has one event, "launch", in room "drop"; room "down" fails.
type events struct{ from, to time.Time }

func (e events) EventRange(_ context.Context, room, name string) (time.Time, time.Time, bool, error) {
	switch {
	case room == "down":
		return time.Time{}, time.Time{}, false, errors.New("store down")
	case room == "drop" && name == "launch":
		return e.from, e.to, true, nil
	}
	return time.Time{}, time.Time{}, false, nil
}

func reportAPI(reports Reports, ev EventRanges) *fiber.App {
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
	ev := events{from: from, to: from.Add(90 * time.Minute)}
	fr := &fakeReports{}
	app := reportAPI(fr, ev)
	r := call(t, app, adminSecret, "GET", "/rooms/drop/events/launch/report", "")
	if r.code != 200 || r.body["event"] != "launch" || !fr.from.Equal(ev.from) || !fr.to.Equal(ev.to) {
		t.Fatalf("event report: %d %v, read %v–%v", r.code, r.body, fr.from, fr.to)
	}
	for _, tc := range []struct {
		path string
		code int
		want string
	}{
		{"/rooms/drop/events/other/report", 404, "event_not_found"},
		{"/rooms/down/events/launch/report", 503, "unavailable"},
		{"/rooms/drop/events/launch/report?format=pdf", 400, "invalid_format"},
	} {
		if r := call(t, app, adminSecret, "GET", tc.path, ""); r.code != tc.code || r.errCode() != tc.want {
			t.Errorf("%s: %d %v, want %d %s", tc.path, r.code, r.body, tc.code, tc.want)
		}
	}
	// Without events or reports wired, the routes say so.
	if r := call(t, reportAPI(fr, nil), adminSecret, "GET", "/rooms/drop/events/launch/report", ""); r.code != 404 || r.errCode() != "event_not_found" {
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
