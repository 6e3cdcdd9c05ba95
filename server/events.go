package main

import (
	"context"

	"github.com/waitroom/waitroom/queue"
	"github.com/waitroom/waitroom/schedule"
	"github.com/waitroom/waitroom/settings"
	"github.com/waitroom/waitroom/wire"
)

// newSchedule makes the rooms' scheduled events on the server's Redis,
// changing settings through the queue as the admin API does.
func (s *server) newSchedule() {
	s.events = schedule.New(s.metrics.Redis(s.redis.Redis()), s.q, &schedule.Options{
		Audit: scheduleAudit{s}, Declared: s.declaredEvents, Logger: s.log,
	})
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

func (a scheduleAudit) AuditTransition(ctx context.Context, room, event, action string, before, after settings.Room) {
	a.s.admin.AuditTransition(ctx, room, event, action, before, after)
}

// closingQueue is the queue as polls and push connections read it: a
// visitor an event's end closed out is told closed, with the event's
// message, instead of not_in_queue. It asks Redis only in a room whose
// event closed out its waiting (schedule.MayClose).
type closingQueue struct {
	*queue.Queue
	events *schedule.Schedule
}

// Status is queue.Queue.Status with the closed-out visitors told so.
func (q closingQueue) Status(ctx context.Context, room, visitor string) (wire.State, error) {
	st, err := q.Queue.Status(ctx, room, visitor)
	if err != nil || st.Status != wire.StatusNotInQueue {
		return st, err
	}
	return q.closed(ctx, room, visitor, st)
}

// States is queue.Queue.States (the hub's source) with the closed-out
// visitors told so.
func (q closingQueue) States(ctx context.Context, room string, visitors []string, claims []wire.Claim) ([]wire.State, error) {
	out, err := q.Queue.States(ctx, room, visitors, claims)
	if err != nil || !q.events.MayClose(room) {
		return out, err
	}
	for i, st := range out {
		if st.Status != wire.StatusNotInQueue {
			continue
		}
		if out[i], err = q.closed(ctx, room, visitors[i], st); err != nil {
			return nil, err
		}
	}
	return out, nil
}

func (q closingQueue) closed(ctx context.Context, room, visitor string, st wire.State) (wire.State, error) {
	msg, ok, err := q.events.Closed(ctx, room, visitor)
	if err != nil || !ok {
		return st, err
	}
	return wire.State{Room: room, Status: wire.StatusClosed, Message: msg}, nil
}
