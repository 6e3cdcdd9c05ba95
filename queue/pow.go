package queue

import (
	"context"
	"strconv"
	"time"

	"github.com/waitroom/waitroom/internal/visitorsig"
)

// SpendProof records challenge c (checked by visitorsig.Signer.CheckProof)
// as used, until it expires: a solved challenge is good for one join.
// visitorsig.ErrPowUsed if it was used before. The record lives under the
// room's hash tag.
func (q *Queue) SpendProof(ctx context.Context, c visitorsig.Challenge, now time.Time) error {
	ttl := c.Expires.Sub(now).Milliseconds()
	if ttl <= 0 {
		return visitorsig.ErrPowExpired
	}
	v, err := q.r.Do(ctx, "SET", prefix(c.Room)+"pow:"+c.ID, "1", "NX", "PX", strconv.FormatInt(ttl, 10))
	if err != nil {
		return err
	}
	if v == nil {
		return visitorsig.ErrPowUsed
	}
	return nil
}
