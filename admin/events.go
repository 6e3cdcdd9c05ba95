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
	// PutIf stores e (create: as a new event) unless may refuses the
	// event stored under its name now.
	PutIf(ctx context.Context, room string, e schedule.Event, create bool, may func(old schedule.Event) error) error
	// DeleteIf deletes room's event name unless may refuses it.
	DeleteIf(ctx context.Context, room, name string, may func(schedule.Event) error) error
}

// errNoEvents answers the event routes of an API built without Events.
var errNoEvents = httperr.New(503, "events_unavailable", "scheduled events are not available on this instance")

// scheduleWho is who the audit trail names for a transition of an event.
const scheduleWho = "schedule"

// AuditTransition records a transition of room's event e (the schedule's
// Auditor): who is "schedule", in the trail of the role that wrote e, and
// the entry is kept even when no setting changed (a start whose pre-queue
// opens by itself).
func (a *API) AuditTransition(ctx context.Context, room string, e schedule.Event, action string, before, after settings.Room) {
	a.auditIn(ctx, room, trailOf(scheduleWho, eventRole(e)), scheduleWho, Entry{Action: action, Event: e.Name, Changes: Changes(a.View(room, before), a.View(room, after))})
}

// eventRole is the role whose e is: an operator's when one wrote it last,
// else an admin's (the rooms file's, or one written before events recorded
// their writer).
func eventRole(e schedule.Event) Role {
	if e.By == Operator.String() {
		return Operator
	}
	return Admin
}

// eventView is an event as the API shows it: with its state now, and
// why it failed when it did.
type eventView struct {
	schedule.Event
	State string // scheduled, prequeue, running, ended or failed
}

func (v eventView) MarshalJSON() ([]byte, error) {
	b, err := v.Event.MarshalJSON()
	if err != nil {
		return nil, err
	}
	extra, err := json.Marshal(struct {
		State   string            `json:"state"`
		Failure *schedule.Failure `json:"failure,omitempty"`
	}{v.State, v.Failed})
	if err != nil {
		return nil, err
	}
	return append(append(b[:len(b)-1], ','), extra[1:]...), nil
}

func viewEvent(e schedule.Event, now time.Time) eventView {
	st := "scheduled"
	switch {
	case e.Failed != nil:
		st = "failed"
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
	var he *httperr.Error
	switch {
	case errors.As(err, &se):
		e := httperr.New(se.Status, se.Code, se.Msg)
		e.Field = se.Field
		return e
	case errors.As(err, &he): // a refusal of ours, through the store's check
		return he
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

// eventActs are what e does, at any of its transitions, that needs more
// than steering a room: each is one of Acts.
func eventActs(e schedule.Event) []string {
	var out []string
	if !e.Patch().SteerOnly() {
		out = append(out, ActEventSettings)
	}
	if !e.PrequeueAt.IsZero() && e.ShuffleAtStart {
		out = append(out, ActEventShuffle)
	}
	if e.AtEnd == schedule.AtEndClose {
		out = append(out, ActEventClose)
	}
	return out
}

// mayReplace is the check of an event stored already before the key
// changes or deletes it: one that an admin or the rooms file wrote, or
// that does what an operator may not, is an admin's (ActOthersEvent).
func mayReplace(c *fiber.Ctx) func(old schedule.Event) error {
	return func(old schedule.Event) error {
		if eventRole(old) != Operator || len(eventActs(old)) > 0 {
			return needAct(c, ActOthersEvent)
		}
		return nil
	}
}

// readEvent parses the body into an event and checks what the key may
// do: what the event does at its transitions is checked against the key's
// role as the same change made directly would be (eventActs), and no
// setting the rooms file sets may be overridden. The event is the key's
// role's (By).
func (a *API) readEvent(c *fiber.Ctx, r string) (schedule.Event, error) {
	e, err := schedule.Parse(c.Body())
	if err != nil {
		return e, a.eventsError(c, err)
	}
	for _, act := range eventActs(e) {
		if err := needAct(c, act); err != nil {
			return e, err
		}
	}
	e.By = roleOf(c).String()
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
	if err := a.roomMustExist(c, r); err != nil {
		return err
	}
	ctx, cancel := a.ctx(c)
	defer cancel()
	if err := a.opts.Events.PutIf(ctx, r, e, true, nil); err != nil {
		return a.eventsError(c, err)
	}
	a.auditBy(ctx, c, r, Entry{Action: "event-create", Event: e.Name})
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
	if err := a.roomMustExist(c, r); err != nil {
		return err
	}
	ctx, cancel := a.ctx(c)
	defer cancel()
	if err := a.opts.Events.PutIf(ctx, r, e, false, mayReplace(c)); err != nil {
		return a.eventsError(c, err)
	}
	a.auditBy(ctx, c, r, Entry{Action: "event-update", Event: e.Name})
	return c.JSON(viewEvent(e, time.Now()))
}

func (a *API) deleteEvent(c *fiber.Ctx) error {
	r, name, err := a.eventParams(c)
	if err != nil {
		return err
	}
	if err := a.roomMustExist(c, r); err != nil {
		return err
	}
	ctx, cancel := a.ctx(c)
	defer cancel()
	if err := a.opts.Events.DeleteIf(ctx, r, name, mayReplace(c)); err != nil {
		return a.eventsError(c, err)
	}
	a.auditBy(ctx, c, r, Entry{Action: "event-delete", Event: name})
	return c.SendStatus(fiber.StatusNoContent)
}
