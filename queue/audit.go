package queue

import (
	"context"
	"fmt"
	"strconv"

	"github.com/waitroom/waitroom/wire"
)

// AuditKeep is how many audit entries are kept per room.
const AuditKeep = 100

// adminAuditKey holds the audit entries of no room (a credential minted
// for a user id, say).
const adminAuditKey = "wr:{admin}:audit"

// AppendAudit records entry (an encoded audit record) as room's newest,
// keeping the last AuditKeep.
func (q *Queue) AppendAudit(ctx context.Context, room string, entry []byte) error {
	if !wire.ValidRoom(room) {
		return wire.ErrInvalidRoom
	}
	return q.appendAudit(ctx, prefix(room)+"audit", entry)
}

// AppendAdminAudit records entry as the newest of the instance-wide audit
// trail, keeping the last AdminAuditKeep.
func (q *Queue) AppendAdminAudit(ctx context.Context, entry []byte) error {
	return q.appendAudit(ctx, adminAuditKey, entry)
}

// AdminAuditKeep is how many entries the instance-wide audit trail keeps.
const AdminAuditKeep = 1000

func (q *Queue) appendAudit(ctx context.Context, key string, entry []byte) error {
	keep := AuditKeep
	if key == adminAuditKey {
		keep = AdminAuditKeep
	}
	if _, err := q.r.Do(ctx, "LPUSH", key, string(entry)); err != nil {
		return fmt.Errorf("queue: audit: %w", err)
	}
	if _, err := q.r.Do(ctx, "LTRIM", key, "0", strconv.Itoa(keep-1)); err != nil {
		return fmt.Errorf("queue: audit: %w", err)
	}
	return nil
}

// Audit returns room's audit entries, newest first.
func (q *Queue) Audit(ctx context.Context, room string) ([]string, error) {
	if !wire.ValidRoom(room) {
		return nil, wire.ErrInvalidRoom
	}
	return q.readAudit(ctx, prefix(room)+"audit", AuditKeep)
}

// AppendAuditOf records entry as the newest of room's audit trail named
// trail (a-z), keeping its last AuditKeep apart from the room's own: the
// admin API keeps what each role's keys did in a trail of its own, so
// that many entries of one cannot push out another's.
func (q *Queue) AppendAuditOf(ctx context.Context, room, trail string, entry []byte) error {
	if !wire.ValidRoom(room) {
		return wire.ErrInvalidRoom
	}
	if !validTrail(trail) {
		return fmt.Errorf("queue: audit trail %q: not a-z", trail)
	}
	return q.appendAudit(ctx, prefix(room)+"audit:"+trail, entry)
}

// AuditOf returns the entries of room's audit trail named trail, newest
// first.
func (q *Queue) AuditOf(ctx context.Context, room, trail string) ([]string, error) {
	if !wire.ValidRoom(room) {
		return nil, wire.ErrInvalidRoom
	}
	if !validTrail(trail) {
		return nil, fmt.Errorf("queue: audit trail %q: not a-z", trail)
	}
	return q.readAudit(ctx, prefix(room)+"audit:"+trail, AuditKeep)
}

func validTrail(t string) bool {
	for _, c := range t {
		if c < 'a' || c > 'z' {
			return false
		}
	}
	return t != "" && len(t) <= 16
}

// AdminAudit returns the instance-wide audit entries, newest first.
func (q *Queue) AdminAudit(ctx context.Context) ([]string, error) {
	return q.readAudit(ctx, adminAuditKey, AdminAuditKeep)
}

func (q *Queue) readAudit(ctx context.Context, key string, keep int) ([]string, error) {
	v, err := q.r.Do(ctx, "LRANGE", key, "0", strconv.Itoa(keep-1))
	if err != nil {
		return nil, fmt.Errorf("queue: audit: %w", err)
	}
	arr, _ := v.([]any)
	out := make([]string, 0, len(arr))
	for _, e := range arr {
		if s, ok := e.(string); ok {
			out = append(out, s)
		}
	}
	return out, nil
}
