package admin

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/waitroom/waitroom/settings"
	"github.com/waitroom/waitroom/webhook"
)

// The trails of a room's audit beside its own (""), which holds what
// admin keys, the rooms file and the schedule of an admin's event did:
// what keys of a lesser role did is kept apart, each trail its last
// queue.AuditKeep, so that no number of an operator's pauses can push an
// admin's change out. A room's audit shows them all, newest first.
const (
	trailOperator = "operator" // operator keys, and the schedule of their events
	trailService  = "service"  // service keys (ending gateway sessions)
	// trailAutopilot holds the autopilot's changes of the rate, up to one
	// a second: kept apart, they cannot push anyone's change out.
	trailAutopilot = "autopilot"
)

// trails are the trails a room's audit reads, its own first.
var trails = []string{"", trailOperator, trailService, trailAutopilot}

// trailOf is the trail of what who, with role, did: a service key's label
// is "service:…".
func trailOf(who string, role Role) string {
	switch {
	case strings.HasPrefix(who, "service:"):
		return trailService
	case role == Operator:
		return trailOperator
	}
	return ""
}

// Audit records a change in the room's audit trail (the last
// queue.AuditKeep are kept) and sends the webhook events it is (see
// Options.Webhooks). The change is made already: a failure to record it
// is logged, not returned. It is what the rooms file did (roomsfile.Auditor):
// the room's own trail.
func (a *API) Audit(ctx context.Context, room, who, action string, before, after settings.Room) {
	a.auditChange(ctx, room, "", who, action, before, after)
}

// AuditAutopilot records a change of room's rate by its autopilot, with
// its reason, in a trail of its own. It sends no settings.changed: up to
// one a second per room would flood the receivers; origin.overloaded and
// origin.recovered say what they need to know.
func (a *API) AuditAutopilot(ctx context.Context, room, reason string, before, after settings.Room) {
	a.auditEntry(ctx, room, trailAutopilot, Entry{Who: "autopilot", Action: "autopilot", Reason: reason}, before, after)
}

// auditChange is Audit in trail.
func (a *API) auditChange(ctx context.Context, room, trail, who, action string, before, after settings.Room) {
	a.auditEntry(ctx, room, trail, Entry{Who: who, Action: action}, before, after)
}

// auditEntry records e, with the changes from before to after, in trail.
func (a *API) auditEntry(ctx context.Context, room, trail string, e Entry, before, after settings.Room) {
	who, action := e.Who, e.Action
	e.At, e.Changes = time.Now().UTC().Format(time.RFC3339Nano), Changes(a.View(room, before), a.View(room, after))
	if len(e.Changes) == 0 && action != "create" {
		return
	}
	if e.Changes == nil {
		e.Changes = []FieldChange{}
	}
	a.logAction(room, e)
	b, _ := json.Marshal(e)
	if err := a.appendAudit(ctx, room, trail, b); err != nil {
		a.log.Warn("audit not recorded", "room", room, "who", who, "err", err)
	}
	a.emitAudit(ctx, room, e)
}

// appendAudit appends entry b to room's trail.
func (a *API) appendAudit(ctx context.Context, room, trail string, b []byte) error {
	if trail == "" {
		return a.store.AppendAudit(ctx, room, b)
	}
	return a.store.AppendAuditOf(ctx, room, trail, b)
}

// auditEvent records an action other than a change of settings: in
// room's audit trail, or with room "" in the instance-wide one (actions
// of no room, such as minting a visitor credential). Like audit, a failure
// to record is logged. A service key's goes to the room's service trail;
// for an operator's, see auditBy.
func (a *API) auditEvent(ctx context.Context, room, who string, e Entry) {
	a.auditIn(ctx, room, trailOf(who, Admin), who, e)
}

// auditBy is auditEvent of an action by the request's key, in the trail
// of its role.
func (a *API) auditBy(ctx context.Context, c *fiber.Ctx, room string, e Entry) {
	a.auditIn(ctx, room, trailOf(label(c), roleOf(c)), label(c), e)
}

func (a *API) auditIn(ctx context.Context, room, trail, who string, e Entry) {
	e.At, e.Who = time.Now().UTC().Format(time.RFC3339Nano), who
	if e.Changes == nil {
		e.Changes = []FieldChange{}
	}
	a.logAction(room, e)
	b, _ := json.Marshal(e)
	var err error
	if room == "" {
		err = a.store.AppendAdminAudit(ctx, b)
	} else {
		err = a.appendAudit(ctx, room, trail, b)
	}
	if err != nil {
		a.log.Warn("audit not recorded", "room", room, "who", who, "action", e.Action, "err", err)
	}
}

// logAction writes what the audit trail records of e at info, so that the
// log says who paused a room, changed its batch or minted codes, by the
// key's label (never the key). Like the trail it names no secret: a
// webhook change gives the number of endpoints, not their URLs, which may
// hold credentials.
func (a *API) logAction(room string, e Entry) {
	args := []any{"action", e.Action, "who", e.Who}
	if room != "" {
		args = append(args, "room", room)
	}
	if len(e.Changes) > 0 {
		parts := make([]string, len(e.Changes))
		for i, c := range e.Changes {
			parts[i] = fmt.Sprintf("%s: %v → %v", c.Field, logValue(c.From), logValue(c.To))
		}
		args = append(args, "changes", strings.Join(parts, "; "))
	}
	if e.Event != "" {
		args = append(args, "event", e.Event)
	}
	if e.Visitor != "" {
		args = append(args, "visitor", e.Visitor)
	}
	if e.Invites != nil {
		args = append(args, "invites", e.Invites.Count, "uses", e.Invites.Uses, "priority", e.Invites.Priority)
	}
	if e.Action == "set-webhooks" {
		args = append(args, "webhooks", len(e.Webhooks))
	}
	if e.Delivery != "" {
		args = append(args, "delivery", e.Delivery)
	}
	a.log.Info("admin action", args...)
}

// logValue is a setting's value as the log line shows it: a string
// quoted, so that an empty one (a message cleared) is seen, nil as none.
func logValue(v any) string {
	switch v := v.(type) {
	case nil:
		return "none"
	case string:
		return strconv.Quote(v)
	}
	return fmt.Sprint(v)
}

// roomAudit lists a room's audit trails together, newest first.
func (a *API) roomAudit(c *fiber.Ctx) error {
	r, err := roomParam(c)
	if err != nil {
		return err
	}
	ctx, cancel := a.ctx(c)
	defer cancel()
	var raw []string
	for _, trail := range trails {
		var got []string
		if trail == "" {
			got, err = a.store.Audit(ctx, r)
		} else {
			got, err = a.store.AuditOf(ctx, r, trail)
		}
		if err != nil {
			return a.storeError(c, err)
		}
		raw = append(raw, got...)
	}
	return c.JSON(fiber.Map{"room": r, "entries": newestFirst(auditJSON(raw))})
}

// newestFirst orders entries by their at, newest first; each trail is in
// that order already, so entries of one moment keep their trail's order.
func newestFirst(entries []json.RawMessage) []json.RawMessage {
	at := make(map[int]time.Time, len(entries))
	idx := make([]int, len(entries))
	for i, e := range entries {
		var v struct{ At time.Time }
		_ = json.Unmarshal(e, &v)
		at[i], idx[i] = v.At, i
	}
	slices.SortStableFunc(idx, func(x, y int) int { return at[y].Compare(at[x]) })
	out := make([]json.RawMessage, len(entries))
	for i, j := range idx {
		out[i] = entries[j]
	}
	return out
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
			out = append(out, redactWebhooks(json.RawMessage(e)))
		}
	}
	return out
}

// redactWebhooks cuts the webhook URLs of a set-webhooks entry to scheme
// and host as it is read: entries written before the trail stored them so
// still hold whole URLs, whose paths and queries may carry the receiver's
// credentials, and every key that may read the trail reads them.
func redactWebhooks(e json.RawMessage) json.RawMessage {
	if !bytes.Contains(e, []byte(`"webhooks"`)) {
		return e
	}
	var m map[string]json.RawMessage
	var urls []string
	if json.Unmarshal(e, &m) != nil || json.Unmarshal(m["webhooks"], &urls) != nil {
		return e
	}
	for i, u := range urls {
		urls[i] = webhook.RedactURL(u)
	}
	m["webhooks"], _ = json.Marshal(urls)
	b, err := json.Marshal(m)
	if err != nil {
		return e
	}
	return b
}
