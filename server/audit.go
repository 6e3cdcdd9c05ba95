package main

import (
	"context"
	"encoding/json"
	"reflect"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/waitroom/waitroom/queue"
	"github.com/waitroom/waitroom/settings"
)

// auditEntry is one admin action: who (the admin key's label, or
// "rooms-file"), what, when. A change of a room's settings lists its
// changes; the actions that hand out access say what they handed out,
// never the secret itself (no invite code, no credential).
type auditEntry struct {
	At      string        `json:"at"`
	Who     string        `json:"who"`
	Action  string        `json:"action"` // create, update, pause, resume, mint-invites, mint-visitor, end-session
	Changes []fieldChange `json:"changes"`
	// Visitor is the visitor id a credential was minted for, a session
	// ended of, or an invite code bound to.
	Visitor string       `json:"visitor,omitempty"`
	Invites *inviteAudit `json:"invites,omitempty"`
}

// inviteAudit is what a mint of invite codes made (not the codes).
type inviteAudit struct {
	Count     int    `json:"count"`
	Uses      int    `json:"uses"`
	Priority  bool   `json:"priority"`
	ExpiresAt string `json:"expiresAt"`
}

// fieldChange is one setting's effective value before and after.
type fieldChange struct {
	Field string `json:"field"`
	From  any    `json:"from"`
	To    any    `json:"to"`
}

// changes lists the settings whose effective value differs between before
// and after, in the order the dashboard shows them.
func (s *server) changes(room string, before, after queue.RoomConfig) []fieldChange {
	a, b := s.effective(room, before).values(), s.effective(room, after).values()
	var out []fieldChange
	for _, f := range settings.Names() {
		if !reflect.DeepEqual(a[f], b[f]) {
			out = append(out, fieldChange{Field: f, From: a[f], To: b[f]})
		}
	}
	return out
}

// audit records a change in the room's audit trail (the last
// queue.AuditKeep are kept). The change is made already: a failure to
// record it is logged, not returned.
func (s *server) audit(ctx context.Context, room, who, action string, before, after queue.RoomConfig) {
	e := auditEntry{At: time.Now().UTC().Format(time.RFC3339Nano), Who: who, Action: action, Changes: s.changes(room, before, after)}
	if len(e.Changes) == 0 && action != "create" {
		return
	}
	if e.Changes == nil {
		e.Changes = []fieldChange{}
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
func (s *server) auditEvent(ctx context.Context, room, who string, e auditEntry) {
	e.At, e.Who = time.Now().UTC().Format(time.RFC3339Nano), who
	if e.Changes == nil {
		e.Changes = []fieldChange{}
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
