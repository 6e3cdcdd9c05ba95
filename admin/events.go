package admin

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/waitroom/waitroom/internal/httperr"
	"github.com/waitroom/waitroom/schedule"
	"github.com/waitroom/waitroom/settings"
)

// Events is the store of the rooms' scheduled events (a
// *schedule.Schedule); its refusals are *schedule.Error.
type Events interface {
	List(ctx context.Context, room string) ([]schedule.Event, error)
	Get(ctx context.Context, room, name string) (schedule.Event, error)
	Put(ctx context.Context, room string, e schedule.Event, create bool) error
	Delete(ctx context.Context, room, name string) error
}

// errNoEvents answers the event routes of an API built without Events.
var errNoEvents = httperr.New(503, "events_unavailable", "scheduled events are not available on this instance")

// scheduleWho is who the audit trail names for a transition of an event.
const scheduleWho = "schedule"

// AuditTransition records a transition of room's event (the schedule's
// Auditor): who is "schedule", and the entry is kept even when no setting
// changed (a start whose pre-queue opens by itself).
func (a *API) AuditTransition(ctx context.Context, room, event, action string, before, after settings.Room) {
	a.auditEvent(ctx, room, scheduleWho, Entry{Action: action, Event: event, Changes: Changes(a.View(room, before), a.View(room, after))})
}

// eventView is an event as the API shows it: with its state now.
type eventView struct {
	schedule.Event
	State string // scheduled, prequeue, running or ended
}

func (v eventView) MarshalJSON() ([]byte, error) {
	b, err := v.Event.MarshalJSON()
	if err != nil {
		return nil, err
	}
	st, _ := json.Marshal(v.State)
	return append(append(b[:len(b)-1], `,"state":`...), append(st, '}')...), nil
}

func viewEvent(e schedule.Event, now time.Time) eventView {
	st := "scheduled"
	switch {
	case !now.Before(e.EndsAt):
		st = "ended"
	case !now.Before(e.StartsAt):
		st = "running"
	case !now.Before(e.Begins()):
		st = "prequeue"
	}
	return eventView{e, st}
}

func (a *API) eventsError(c *fiber.Ctx, err error) error {
	var se *schedule.Error
	if errors.As(err, &se) {
		e := httperr.New(se.Status, se.Code, se.Msg)
		e.Field = se.Field
		return e
	}
	return a.storeError(c, err)
}

// roomEvents reads room's events as the API shows them (none without
// Events).
func (a *API) roomEvents(ctx context.Context, room string) ([]eventView, error) {
	out := []eventView{}
	if a.opts.Events == nil {
		return out, nil
	}
	list, err := a.opts.Events.List(ctx, room)
	if err != nil {
		return nil, err
	}
	now := time.Now()
	for _, e := range list {
		out = append(out, viewEvent(e, now))
	}
	return out, nil
}

// roomJSON is a room's GET: its view, the settings in force under
// effective, its events and the one running, if any.
func (a *API) roomJSON(c *fiber.Ctx, r string, v View) error {
	ctx, cancel := a.ctx(c)
	defer cancel()
	evs, err := a.roomEvents(ctx, r)
	if err != nil {
		return a.eventsError(c, err)
	}
	var active *string
	for _, e := range evs {
		if e.State == "running" || e.State == "prequeue" {
			active = &e.Name
		}
	}
	b, err := v.MarshalJSON()
	if err != nil {
		return err
	}
	extra, err := json.Marshal(map[string]any{"effective": v.Values(), "events": evs, "activeEvent": active})
	if err != nil {
		return err
	}
	c.Set(fiber.HeaderContentType, fiber.MIMEApplicationJSON)
	return c.Send(append(append(b[:len(b)-1], ','), extra[1:]...))
}

func (a *API) listEvents(c *fiber.Ctx) error {
	r, err := roomParam(c)
	if err != nil {
		return err
	}
	if a.opts.Events == nil {
		return errNoEvents
	}
	ctx, cancel := a.ctx(c)
	defer cancel()
	evs, err := a.roomEvents(ctx, r)
	if err != nil {
		return a.eventsError(c, err)
	}
	return c.JSON(fiber.Map{"room": r, "events": evs})
}

// eventParams are the route's :room and :event, validated.
func (a *API) eventParams(c *fiber.Ctx) (string, string, error) {
	r, err := roomParam(c)
	if err != nil {
		return "", "", err
	}
	if a.opts.Events == nil {
		return "", "", errNoEvents
	}
	name := c.Params("event")
	if !schedule.ValidName(name) {
		return "", "", httperr.New(400, "invalid_event_name", "event names match ^[a-z0-9][a-z0-9-]{0,63}$")
	}
	return r, name, nil
}

func (a *API) getEvent(c *fiber.Ctx) error {
	r, name, err := a.eventParams(c)
	if err != nil {
		return err
	}
	ctx, cancel := a.ctx(c)
	defer cancel()
	e, err := a.opts.Events.Get(ctx, r, name)
	if err != nil {
		return a.eventsError(c, err)
	}
	return c.JSON(viewEvent(e, time.Now()))
}

// readEvent parses the body into an event and checks what the key may
// do: settings other than an operator's (settings.Field.Steer) need the
// admin role, and none the rooms file sets may be overridden.
func (a *API) readEvent(c *fiber.Ctx, r string) (schedule.Event, error) {
	e, err := schedule.Parse(c.Body())
	if err != nil {
		return e, a.eventsError(c, err)
	}
	if !e.Patch().SteerOnly() {
		if err := needRole(c, Admin); err != nil {
			return e, err
		}
	}
	if fr, ok := a.pins(r); ok {
		for _, f := range e.Patch().Names() {
			if fr.Sets(f) {
				he := httperr.New(409, "set_by_rooms_file", "settings."+f+" is "+a.fileLocks(r)[f]+"; an event cannot override it")
				he.Field = "settings." + f
				return e, he
			}
		}
	}
	return e, nil
}

func (a *API) createEvent(c *fiber.Ctx) error {
	r, err := roomParam(c)
	if err != nil {
		return err
	}
	if a.opts.Events == nil {
		return errNoEvents
	}
	e, err := a.readEvent(c, r)
	if err != nil {
		return err
	}
	ctx, cancel := a.ctx(c)
	defer cancel()
	if err := a.opts.Events.Put(ctx, r, e, true); err != nil {
		return a.eventsError(c, err)
	}
	a.auditEvent(ctx, r, label(c), Entry{Action: "event-create", Event: e.Name})
	return c.Status(fiber.StatusCreated).JSON(viewEvent(e, time.Now()))
}

func (a *API) putEvent(c *fiber.Ctx) error {
	r, name, err := a.eventParams(c)
	if err != nil {
		return err
	}
	e, err := a.readEvent(c, r)
	if err != nil {
		return err
	}
	if e.Name != name {
		return httperr.New(400, "invalid_event_name", "the body's name ("+e.Name+") must be the path's ("+name+"); to rename, delete and create")
	}
	ctx, cancel := a.ctx(c)
	defer cancel()
	if err := a.opts.Events.Put(ctx, r, e, false); err != nil {
		return a.eventsError(c, err)
	}
	a.auditEvent(ctx, r, label(c), Entry{Action: "event-update", Event: e.Name})
	return c.JSON(viewEvent(e, time.Now()))
}

func (a *API) deleteEvent(c *fiber.Ctx) error {
	r, name, err := a.eventParams(c)
	if err != nil {
		return err
	}
	ctx, cancel := a.ctx(c)
	defer cancel()
	if err := a.opts.Events.Delete(ctx, r, name); err != nil {
		return a.eventsError(c, err)
	}
	a.auditEvent(ctx, r, label(c), Entry{Action: "event-delete", Event: name})
	return c.SendStatus(fiber.StatusNoContent)
}
