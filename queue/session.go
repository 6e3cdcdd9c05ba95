package queue

import (
	"context"
	"fmt"
	"strconv"
	"time"
)

// RevokedChannel carries the gateway sessions ended before their time, as
// "key untilUnixMs", to every instance's revocation cache.
const RevokedChannel = "wr:gateway:revoked"

var endSessionScript = loadScript("endsession")

// EndSession ends the gateway session of visitor in room whose entry token
// has notBefore: the token record goes, which frees its max-active slot and
// its seat at once, and "key until" is published on RevokedChannel (until
// is the token's cap, or fallback when the record is already gone). It
// reports whether a live session ended.
func (q *Queue) EndSession(ctx context.Context, room, visitor string, notBefore time.Time, key string, fallback time.Time) (bool, error) {
	if err := check(room, visitor); err != nil {
		return false, err
	}
	v, err := q.r.Eval(ctx, endSessionScript.Script, visitorKeys(room, visitor),
		prefix(room), visitor, strconv.FormatInt(notBefore.UnixMilli(), 10),
		RevokedChannel, key, strconv.FormatInt(fallback.UnixMilli(), 10))
	if err != nil {
		return false, fmt.Errorf("queue: end session: %w", err)
	}
	n, err := asInt(v)
	return n == 1, err
}

// Session returns the notBefore and expiry of the entry token visitor holds
// in room, read without touching it; ok is false when it holds none.
func (q *Queue) Session(ctx context.Context, room, visitor string) (notBefore, expiresAt time.Time, ok bool, err error) {
	if err := check(room, visitor); err != nil {
		return time.Time{}, time.Time{}, false, err
	}
	v, err := q.r.Do(ctx, "GET", prefix(room)+"t:"+visitor)
	if err != nil {
		return time.Time{}, time.Time{}, false, fmt.Errorf("queue: session: %w", err)
	}
	s, _ := v.(string)
	var nb, exp int64
	if _, err := fmt.Sscanf(s, "%d:%d", &nb, &exp); err != nil {
		return time.Time{}, time.Time{}, false, nil
	}
	return time.UnixMilli(nb), time.UnixMilli(exp), true, nil
}
