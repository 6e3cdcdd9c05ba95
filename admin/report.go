package admin

import (
	"context"
	"errors"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/waitroom/waitroom/internal/httperr"
	"github.com/waitroom/waitroom/report"
)

// Reports reads a room's report over a time range (a *report.Recorder).
type Reports interface {
	Read(ctx context.Context, room string, from, to time.Time) (report.Report, error)
}

// maxReportRange is the longest range one report covers: the default
// retention, and a day more for a range that starts at its edge.
const maxReportRange = 31 * 24 * time.Hour

var (
	errReportFrom   = httperr.New(400, "invalid_from", "from must be an RFC 3339 time, e.g. 2026-12-01T18:00:00Z")
	errReportTo     = httperr.New(400, "invalid_to", "to must be an RFC 3339 time, e.g. 2026-12-01T20:00:00Z")
	errReportRange  = httperr.New(400, "invalid_range", "to must be after from")
	errReportLong   = httperr.New(400, "range_too_long", "a report covers at most 31 days")
	errReportFormat = httperr.New(400, "invalid_format", "format must be json or csv")
	errNoReports    = httperr.New(404, "reports_off", "this deployment keeps no reports")
)

// roomReport answers a room's report over ?from and ?to (RFC 3339; the
// last 24 hours by default), in JSON or with ?format=csv in CSV.
func (a *API) roomReport(c *fiber.Ctx) error {
	room, err := roomParam(c)
	if err != nil {
		return err
	}
	from, to, err := reportRange(c.Query("from"), c.Query("to"), time.Now())
	if err != nil {
		return err
	}
	return a.sendReport(c, room, "", from, to)
}

// eventReport answers the report of a room's scheduled event, over the
// event's range.
func (a *API) eventReport(c *fiber.Ctx) error {
	room, name, err := a.eventParams(c)
	if err != nil {
		return err
	}
	ctx, cancel := a.ctx(c)
	e, err := a.opts.Events.Get(ctx, room, name)
	cancel()
	if err != nil {
		return a.eventsError(c, err) // 404 event_not_found among them
	}
	// The event's range: from its pre-queue, when it has one.
	from, to := e.StartsAt, e.EndsAt
	if !e.PrequeueAt.IsZero() {
		from = e.PrequeueAt
	}
	return a.sendReport(c, room, e.Name, from, to)
}

func (a *API) sendReport(c *fiber.Ctx, room, event string, from, to time.Time) error {
	format := c.Query("format", "json")
	if format != "json" && format != "csv" {
		return errReportFormat
	}
	if a.opts.Reports == nil {
		return errNoReports
	}
	ctx, cancel := context.WithTimeout(c.UserContext(), 10*time.Second)
	defer cancel()
	r, err := a.opts.Reports.Read(ctx, room, from, to)
	switch {
	case errors.Is(err, report.ErrRange):
		return errReportRange
	case err != nil:
		return a.storeError(c, err)
	}
	r.Event = event
	c.Set(fiber.HeaderCacheControl, "no-store")
	if format == "csv" {
		c.Set(fiber.HeaderContentType, "text/csv; charset=utf-8")
		c.Set(fiber.HeaderContentDisposition, `attachment; filename="`+reportFile(r)+`"`)
		return r.WriteCSV(c)
	}
	return c.JSON(r)
}

// reportFile names a report's CSV download.
func reportFile(r report.Report) string {
	name := r.Room
	if r.Event != "" {
		name += "-" + r.Event
	}
	return name + "-" + r.From.UTC().Format("20060102T1504Z") + ".csv"
}

// reportRange parses a report's from and to ("" for the defaults: to is
// now, from 24 hours before to).
func reportRange(fromQ, toQ string, now time.Time) (from, to time.Time, err error) {
	to = now
	if toQ != "" {
		if to, err = time.Parse(time.RFC3339, toQ); err != nil {
			return from, to, errReportTo
		}
	}
	from = to.Add(-24 * time.Hour)
	if fromQ != "" {
		if from, err = time.Parse(time.RFC3339, fromQ); err != nil {
			return from, to, errReportFrom
		}
	}
	switch {
	case !to.After(from):
		return from, to, errReportRange
	case to.Sub(from) > maxReportRange:
		return from, to, errReportLong
	}
	return from, to, nil
}
