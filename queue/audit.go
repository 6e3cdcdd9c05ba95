package queue

import (
	"context"
	"fmt"
	"strconv"
)

// AuditKeep is how many audit entries are kept per room.
const AuditKeep = 100

// AppendAudit records entry (an encoded audit record) as room's newest,
// keeping the last AuditKeep.
func (q *Queue) AppendAudit(ctx context.Context, room string, entry []byte) error {
	if !ValidRoom(room) {
		return ErrInvalidRoom
	}
	key := prefix(room) + "audit"
	if _, err := q.r.Do(ctx, "LPUSH", key, string(entry)); err != nil {
		return fmt.Errorf("queue: audit: %w", err)
	}
	if _, err := q.r.Do(ctx, "LTRIM", key, "0", strconv.Itoa(AuditKeep-1)); err != nil {
		return fmt.Errorf("queue: audit: %w", err)
	}
	return nil
}

// Audit returns room's audit entries, newest first.
func (q *Queue) Audit(ctx context.Context, room string) ([]string, error) {
	if !ValidRoom(room) {
		return nil, ErrInvalidRoom
	}
	v, err := q.r.Do(ctx, "LRANGE", prefix(room)+"audit", "0", strconv.Itoa(AuditKeep-1))
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
