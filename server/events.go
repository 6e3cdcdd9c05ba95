package main

import (
	"context"
	"strconv"
	"time"

	"github.com/waitroom/waitroom/queue"
	"github.com/waitroom/waitroom/report"
	"github.com/waitroom/waitroom/schedule"
	"github.com/waitroom/waitroom/settings"
	"github.com/waitroom/waitroom/webhook"
	"github.com/waitroom/waitroom/wire"
)

// newSchedule makes the rooms' scheduled events on the server's Redis,
// changing settings through the queue as the admin API does.
func (s *server) newSchedule() {
	s.events = schedule.New(s.metrics.Redis(s.redis.Redis()), s.q, &schedule.Options{
		Audit: scheduleAudit{s}, OnTransition: s.eventTransition, Declared: s.declaredEvents, Logger: s.log,
	})
}

// eventJSON is a scheduled event as the webhooks tell it.
type eventJSON struct {
	Name       string     `json:"name"`
	PrequeueAt *time.Time `json:"prequeueAt,omitempty"`
	StartsAt   time.Time  `json:"startsAt"`
	EndsAt     time.Time  `json:"endsAt"`
	AtEnd      string     `json:"atEnd"`
}

// eventRange is the span an event's report covers: from its pre-queue,
// when it has one, to its end.
func eventRange(e schedule.Event) (from, to time.Time) {
	from = e.StartsAt
	if !e.PrequeueAt.IsZero() {
		from = e.PrequeueAt
	}
	return from, e.EndsAt
}

// eventTransition is told each transition this instance applied: a start
// or an end goes to the webhooks (once across instances, should a
// transition run twice), and an end has the reports finish the event's
// report, which reportReady sends.
func (s *server) eventTransition(ctx context.Context, room string, e schedule.Event, action string) {
	var t string
	switch action {
	case schedule.ActionStart:
		t = webhook.EventStarted
	case schedule.ActionEnd:
		t = webhook.EventEnded
		from, to := eventRange(e)
		s.report.FinishLater(room, e.Name, from, to)
	default:
		return
	}
	ev := eventJSON{Name: e.Name, StartsAt: e.StartsAt.UTC(), EndsAt: e.EndsAt.UTC(), AtEnd: e.AtEnd}
	if !e.PrequeueAt.IsZero() {
		p := e.PrequeueAt.UTC()
		ev.PrequeueAt = &p
	}
	occurrence := e.Name + "@" + strconv.FormatInt(e.StartsAt.UnixMilli(), 10) + "-" + strconv.FormatInt(e.EndsAt.UnixMilli(), 10)
	if err := s.hooks.EmitOnce(ctx, room, t, occurrence, map[string]any{"event": ev}); err != nil && ctx.Err() == nil {
		s.log.Warn("webhook event not sent", "room", room, "type", t, "err", err)
	}
}

// reportReady sends report.ready for an event's finished report: where
// to read it, its range and its totals.
func (s *server) reportReady(ctx context.Context, r report.Report) {
	occurrence := r.Event + "@" + strconv.FormatInt(r.From.UnixMilli(), 10) + "-" + strconv.FormatInt(r.To.UnixMilli(), 10)
	data := map[string]any{
		"event":  r.Event,
		"from":   r.From,
		"to":     r.To,
		"path":   "/api/v1/admin/rooms/" + r.Room + "/events/" + r.Event + "/report",
		"totals": r.Totals,
	}
	if err := s.hooks.EmitOnce(ctx, r.Room, webhook.ReportReady, occurrence, data); err != nil && ctx.Err() == nil {
		s.log.Warn("webhook event not sent", "room", r.Room, "type", webhook.ReportReady, "err", err)
	}
}

// declaredEvents are the events the rooms file in force lists, by room.
func (s *server) declaredEvents() map[string][]schedule.Event {
	out := map[string][]schedule.Event{}
	o := s.opsNow()
	if o == nil {
		return out
	}
	for _, r := range o.Rooms.Rooms() {
		if len(r.Events) > 0 {
			out[r.Name] = r.Events
		}
	}
	return out
}

// scheduleAudit records the schedule's transitions in the rooms' audit
// trails (s.admin is made after the schedule, before anything runs).
type scheduleAudit struct{ s *server }

func (a scheduleAudit) AuditTransition(ctx context.Context, room string, e schedule.Event, action string, before, after settings.Room) {
	a.s.admin.AuditTransition(ctx, room, e, action, before, after)
}

// closingQueue is the queue as polls and push connections read it: a
// visitor an event's end closed out is told closed, with the event's
// message, instead of not_in_queue. It asks Redis only in a room whose
// event closed out its waiting (schedule.MayClose). In a room with
// activation busy, every state also says whether the room is queueing and
// since when (activations).
type closingQueue struct {
	*queue.Queue
	events *schedule.Schedule
	acts   *activations
}

// JoinAt is queue.Queue.JoinAt with the room's activation.
func (q closingQueue) JoinAt(ctx context.Context, room, visitor string, inv queue.Invite, settings int64) (wire.State, wire.Ticket, error) {
	st, t, err := q.Queue.JoinAt(ctx, room, visitor, inv, settings)
	if err != nil {
		return st, t, err
	}
	return q.acts.with(ctx, room, st), t, nil
}

// Status is queue.Queue.Status with the closed-out visitors told so.
func (q closingQueue) Status(ctx context.Context, room, visitor string) (wire.State, error) {
	st, err := q.Queue.Status(ctx, room, visitor)
	if err != nil {
		return st, err
	}
	if st.Status == wire.StatusNotInQueue {
		if st, err = q.closed(ctx, room, visitor, st); err != nil {
			return st, err
		}
	}
	return q.acts.with(ctx, room, st), nil
}

// States is queue.Queue.States (the hub's source) with the closed-out
// visitors told so. Like it, it only reads.
func (q closingQueue) States(ctx context.Context, room string, visitors []string) ([]wire.State, error) {
	out, err := q.Queue.States(ctx, room, visitors)
	if err != nil {
		return out, err
	}
	return q.told(ctx, room, visitors, out)
}

// Reclaim is queue.Queue.Reclaim, the write-back the hub asks for after a
// read, with the states read again told as States tells them: a visitor
// still not_in_queue in a room whose event closed it out is told closed.
func (q closingQueue) Reclaim(ctx context.Context, room string, visitors []string, claims []wire.Claim, states []wire.State) error {
	if err := q.Queue.Reclaim(ctx, room, visitors, claims, states); err != nil {
		return err
	}
	_, err := q.told(ctx, room, visitors, states)
	return err
}

// told turns the states of visitors of room, in place, into what they are
// told: closed for a visitor an event's end closed out, and the room's
// activation.
func (q closingQueue) told(ctx context.Context, room string, visitors []string, out []wire.State) ([]wire.State, error) {
	var err error
	for i, st := range out {
		if st.Status == wire.StatusNotInQueue && q.events.MayClose(room) {
			if out[i], err = q.closed(ctx, room, visitors[i], st); err != nil {
				return nil, err
			}
		}
		out[i] = q.acts.with(ctx, room, out[i])
	}
	return out, nil
}

// Admitted is queue.Queue.Admitted with the room's activation (as noted:
// an admitted visitor's state asks the store nothing).
func (q closingQueue) Admitted(room, visitor string, notBefore, expiresAt time.Time) wire.State {
	return q.acts.with(context.Background(), room, q.Queue.Admitted(room, visitor, notBefore, expiresAt))
}

func (q closingQueue) closed(ctx context.Context, room, visitor string, st wire.State) (wire.State, error) {
	msg, ok, err := q.events.Closed(ctx, room, visitor)
	if err != nil || !ok {
		return st, err
	}
	return wire.State{Room: room, Status: wire.StatusClosed, Message: msg}, nil
}
