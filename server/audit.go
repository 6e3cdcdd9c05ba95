package main

import (
	"context"
	"encoding/json"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/waitroom/waitroom/admin"
	"github.com/waitroom/waitroom/queue"
)

// audit records a change in the room's audit trail (the last
// queue.AuditKeep are kept). The change is made already: a failure to
// record it is logged, not returned.
func (s *server) audit(ctx context.Context, room, who, action string, before, after queue.RoomConfig) {
	e := admin.Entry{At: time.Now().UTC().Format(time.RFC3339Nano), Who: who, Action: action, Changes: admin.Changes(s.effective(room, before), s.effective(room, after))}
	if len(e.Changes) == 0 && action != "create" {
		return
	}
	if e.Changes == nil {
		e.Changes = []admin.FieldChange{}
	}
	b, _ := json.Marshal(e)
	if err := s.q.AppendAudit(ctx, room, b); err != nil {
		s.log.Warn("audit not recorded", "room", room, "who", who, "err", err)
	}
}

// auditEvent records an action other than a change of settings: in
// room's audit trail, or with room "" in the instance-wide one (actions
// of no room, such as minting a visitor credential). Like audit, a failure
// to record is logged.
func (s *server) auditEvent(ctx context.Context, room, who string, e admin.Entry) {
	e.At, e.Who = time.Now().UTC().Format(time.RFC3339Nano), who
	if e.Changes == nil {
		e.Changes = []admin.FieldChange{}
	}
	b, _ := json.Marshal(e)
	var err error
	if room == "" {
		err = s.q.AppendAdminAudit(ctx, b)
	} else {
		err = s.q.AppendAudit(ctx, room, b)
	}
	if err != nil {
		s.log.Warn("audit not recorded", "room", room, "who", who, "action", e.Action, "err", err)
	}
}

// adminAudit lists a room's audit trail, newest first.
func (s *server) adminAudit(c *fiber.Ctx) error {
	r, err := room(c)
	if err != nil {
		return err
	}
	ctx, cancel := s.redisCtx(c)
	defer cancel()
	raw, err := s.q.Audit(ctx, r)
	if err != nil {
		return s.storeError(c, err)
	}
	return c.JSON(fiber.Map{"room": r, "entries": auditJSON(raw)})
}

// adminAuditAll lists the instance-wide audit trail (actions of no room),
// newest first.
func (s *server) adminAuditAll(c *fiber.Ctx) error {
	ctx, cancel := s.redisCtx(c)
	defer cancel()
	raw, err := s.q.AdminAudit(ctx)
	if err != nil {
		return s.storeError(c, err)
	}
	return c.JSON(fiber.Map{"entries": auditJSON(raw)})
}

func auditJSON(raw []string) []json.RawMessage {
	out := make([]json.RawMessage, 0, len(raw))
	for _, e := range raw {
		if json.Valid([]byte(e)) {
			out = append(out, json.RawMessage(e))
		}
	}
	return out
}
