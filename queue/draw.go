package queue

import (
	"context"
	"crypto/rand"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/waitroom/waitroom/wire"
)

// The auditable draw (commit-reveal). When a room gets opensAt, the queue
// stores a secret seed (32 random bytes, written as 64 hex digits) and
// publishes its commitment, the SHA-256 of those 64 characters. At opening
// the visitors of the pre-queue are placed in the order DrawOrder gives
// for the seed and their ids; after opening the seed and the ids are
// revealed, so anyone can check the commitment and recompute the order.

// DrawKey is the key a visitor id is ordered by in a draw with seed: the
// hex SHA-1 of seed + ":" + id.
func DrawKey(seed, id string) string {
	sum := sha1.Sum([]byte(seed + ":" + id))
	return hex.EncodeToString(sum[:])
}

// DrawOrder returns ids in the order a draw with seed places them: by
// DrawKey ascending, then by id. The order of ids given does not matter.
func DrawOrder(seed string, ids []string) []string {
	type keyed struct{ key, id string }
	ks := make([]keyed, len(ids))
	for i, id := range ids {
		ks[i] = keyed{DrawKey(seed, id), id}
	}
	slices.SortFunc(ks, func(a, b keyed) int {
		if c := strings.Compare(a.key, b.key); c != 0 {
			return c
		}
		return strings.Compare(a.id, b.id)
	})
	out := make([]string, len(ks))
	for i, k := range ks {
		out[i] = k.id
	}
	return out
}

// Commitment is the published commitment to seed: hex SHA-256 of it.
func Commitment(seed string) string {
	sum := sha256.Sum256([]byte(seed))
	return hex.EncodeToString(sum[:])
}

// commitDraw makes room's secret seed unless an unrevealed one exists.
func (q *Queue) commitDraw(ctx context.Context, room string) error {
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		return err
	}
	seed := hex.EncodeToString(b[:])
	_, err := q.r.Eval(ctx, commitScript.Script, roomKeys(room), prefix(room), seed, Commitment(seed))
	if err != nil {
		return fmt.Errorf("queue: commit draw: %w", err)
	}
	return nil
}

// Draw is what the public draw endpoint shows of a room's draw.
type Draw struct {
	Commitment  string    // hex SHA-256 of the seed; "" when the room opened without one
	CommittedAt time.Time // when the seed was picked
	Opened      bool      // the draw has run: Seed and IDs are revealed
	OpenedAt    time.Time // the moment of opening
	Seed        string    // only once opened
	Count       int64     // visitors in the draw (once opened)
	IDs         []string  // the ids, sorted, from offset (once opened)
	Placing     bool      // the draw is still placing visitors
}

// ErrNoDraw is returned by Draw for a room that has no draw.
var ErrNoDraw = errors.New("queue: room has no draw")

// Draw reads room's draw. Before opening it holds the commitment only;
// after, the seed and up to limit ids of the sorted list from offset.
func (q *Queue) Draw(ctx context.Context, room string, offset, limit int) (Draw, error) {
	if !wire.ValidRoom(room) {
		return Draw{}, wire.ErrInvalidRoom
	}
	v, err := q.r.Eval(ctx, revealScript.Script, roomKeys(room), prefix(room),
		strconv.Itoa(offset), strconv.Itoa(limit))
	if err != nil {
		return Draw{}, fmt.Errorf("queue: draw: %w", err)
	}
	r, err := decodeReveal(v)
	if err != nil {
		return Draw{}, fmt.Errorf("queue: draw: %w", err)
	}
	if r.Seed == "" {
		return Draw{}, ErrNoDraw
	}
	d := Draw{Commitment: r.Commitment, CommittedAt: r.CommittedAt, OpenedAt: r.OpenedAt}
	if d.OpenedAt.IsZero() {
		return d, nil
	}
	d.Opened, d.Seed = true, r.Seed
	d.Count = r.Count
	d.Placing = r.DoneAt == ""
	d.IDs = r.IDs
	return d, nil
}
