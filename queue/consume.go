package queue

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/waitroom/waitroom/internal/visitorsig"
)

// Token check results.
var (
	ErrTokenUnknown = errors.New("token unknown or already used")
	ErrTokenExpired = errors.New("token expired")
)

// TooEarlyError says a token is not valid yet.
type TooEarlyError struct{ Wait time.Duration }

func (e *TooEarlyError) Error() string { return "token not valid for another " + e.Wait.String() }

// Use says what Consume does with a valid token.
type Use int

// Ways to check a token.
const (
	Check Use = iota // only check
	Spend            // use it up: a token is good once
	Touch            // check and slide its expiry (idle TTL, capped)
)

// Consume checks tok against the room's records with the Redis clock and,
// when it is valid now, does what use says. It returns the token's current
// expiry. Errors: ErrTokenUnknown, ErrTokenExpired, *TooEarlyError, or a
// Redis error.
func (q *Queue) Consume(ctx context.Context, t visitorsig.Token, use Use) (time.Time, error) {
	if err := check(t.Room, t.Visitor); err != nil {
		return time.Time{}, err
	}
	idle := q.opts.TokenTTL
	if use == Touch {
		if cfg, err := q.RoomConfig(ctx, t.Room); err == nil && cfg.TokenTTL > 0 {
			idle = cfg.TokenTTL
		}
	}
	r, err := q.consume(ctx, t, use, idle)
	if err == nil && r.Code == consumeUnknown {
		// The record may be gone with a Redis that lost it: a signed token
		// that was not used is written back once, and checked again. It
		// is checked again too when this call did not write it: another
		// may have since the first look (an instance checking the
		// admission a push connection was told of), and the record is
		// then there.
		if _, err = q.revive(ctx, t, use, idle.Milliseconds()); err == nil {
			r, err = q.consume(ctx, t, use, idle)
		}
	}
	if err != nil {
		return time.Time{}, err
	}
	switch r.Code {
	case consumeOK:
		return time.UnixMilli(r.A), nil
	case consumeTooEarly:
		return time.Time{}, &TooEarlyError{Wait: time.Duration(r.A) * time.Millisecond}
	case consumeExpired:
		return time.Time{}, ErrTokenExpired
	case consumeUnknown:
	}
	return time.Time{}, ErrTokenUnknown
}

func (q *Queue) consume(ctx context.Context, t visitorsig.Token, use Use, idle time.Duration) (consumeReply, error) {
	v, err := q.r.Eval(ctx, consumeScript.Script, consumeScript.keys(t.Room, t.Visitor),
		prefix(t.Room), t.Visitor, strconv.FormatInt(t.NotBefore.UnixMilli(), 10),
		strconv.Itoa(int(use)), strconv.FormatInt(idle.Milliseconds(), 10),
		strconv.FormatInt(q.opts.Retention.Milliseconds(), 10))
	if err != nil {
		return consumeReply{}, fmt.Errorf("queue: consume: %w", err)
	}
	return decodeConsume(v)
}

// Restore gives back a token that Spend used up when the request it
// guarded then failed on the protected side (so a retry can succeed). It
// does nothing if the token has expired or the visitor holds another
// record. expiresAt is the expiry Consume returned; the restored token
// keeps it and no longer slides.
func (q *Queue) Restore(ctx context.Context, t visitorsig.Token, expiresAt time.Time) error {
	if err := check(t.Room, t.Visitor); err != nil {
		return err
	}
	capAt := expiresAt.UnixMilli()
	_, err := q.r.Eval(ctx, restoreScript.Script, visitorKeys(t.Room, t.Visitor),
		prefix(t.Room), t.Visitor, strconv.FormatInt(t.NotBefore.UnixMilli(), 10),
		strconv.FormatInt(expiresAt.UnixMilli(), 10), strconv.FormatInt(capAt, 10),
		strconv.FormatInt(q.opts.Retention.Milliseconds(), 10))
	if err != nil {
		return fmt.Errorf("queue: restore: %w", err)
	}
	return nil
}
