package admin

import (
	"context"
	"encoding/json"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/waitroom/waitroom/settings"
)

// Audit records a change in the room's audit trail (the last
// queue.AuditKeep are kept) and sends the webhook events it is (see
// Options.Webhooks). The change is made already: a failure to record it
// is logged, not returned.
func (a *API) Audit(ctx context.Context, room, who, action string, before, after settings.Room) {
	e := Entry{At: time.Now().UTC().Format(time.RFC3339Nano), Who: who, Action: action, Changes: Changes(a.View(room, before), a.View(room, after))}
	if len(e.Changes) == 0 && action != "create" {
		return
	}
	if e.Changes == nil {
		e.Changes = []FieldChange{}
	}
	b, _ := json.Marshal(e)
	if err := a.store.AppendAudit(ctx, room, b); err != nil {
		a.log.Warn("audit not recorded", "room", room, "who", who, "err", err)
	}
	a.emitAudit(ctx, room, e)
}

// auditEvent records an action other than a change of settings: in
// room's audit trail, or with room "" in the instance-wide one (actions
// of no room, such as minting a visitor credential). Like audit, a failure
// to record is logged.
func (a *API) auditEvent(ctx context.Context, room, who string, e Entry) {
	e.At, e.Who = time.Now().UTC().Format(time.RFC3339Nano), who
	if e.Changes == nil {
		e.Changes = []FieldChange{}
	}
	b, _ := json.Marshal(e)
	var err error
	if room == "" {
		err = a.store.AppendAdminAudit(ctx, b)
	} else {
		err = a.store.AppendAudit(ctx, room, b)
	}
	if err != nil {
		a.log.Warn("audit not recorded", "room", room, "who", who, "action", e.Action, "err", err)
	}
}

// roomAudit lists a room's audit trail, newest first.
func (a *API) roomAudit(c *fiber.Ctx) error {
	r, err := roomParam(c)
	if err != nil {
		return err
	}
	ctx, cancel := a.ctx(c)
	defer cancel()
	raw, err := a.store.Audit(ctx, r)
	if err != nil {
		return a.storeError(c, err)
	}
	return c.JSON(fiber.Map{"room": r, "entries": auditJSON(raw)})
}

// auditAll lists the instance-wide audit trail (actions of no room),
// newest first.
func (a *API) auditAll(c *fiber.Ctx) error {
	ctx, cancel := a.ctx(c)
	defer cancel()
	raw, err := a.store.AdminAudit(ctx)
	if err != nil {
		return a.storeError(c, err)
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
