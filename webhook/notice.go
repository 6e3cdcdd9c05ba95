package webhook

import (
	"context"
	"errors"
	"strconv"
	"time"
)

// RoomState is what Notice reads of a room.
type RoomState struct {
	OpensAt   time.Time // zero: no scheduled opening
	Seats     int64     // 0: no limit
	SeatsHeld int64     // live entry tokens and tokens used
}

// Recent is how long after opensAt Notice still announces the opening: a
// deployment started (or a room noticed) later does not send old news.
const Recent = 10 * time.Minute

// Notice sends what room's state st says has happened by now:
// room.opened once opensAt has passed (within Recent), and room.sold_out
// once every seat is held. Each goes out once per opensAt, and once per
// number of seats, however many instances notice it (EmitOnce); calling
// it for every room on every refresh costs a script only the first time
// this instance sees each.
func (h *Hooks) Notice(ctx context.Context, room string, st RoomState, now time.Time) error {
	var errs []error
	if !st.OpensAt.IsZero() && !now.Before(st.OpensAt) && now.Sub(st.OpensAt) <= Recent {
		at := st.OpensAt.UTC()
		errs = append(errs, h.EmitOnce(ctx, room, RoomOpened, strconv.FormatInt(at.UnixMilli(), 10),
			map[string]any{"opensAt": at.Format(time.RFC3339Nano)}))
	}
	if st.Seats > 0 && st.SeatsHeld >= st.Seats {
		errs = append(errs, h.EmitOnce(ctx, room, RoomSoldOut, strconv.FormatInt(st.Seats, 10),
			map[string]any{"seats": st.Seats}))
	}
	return errors.Join(errs...)
}
