package webhook

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
)

// What Redis loses, webhooks put back as far as an instance remembers it,
// as every instance does for a room's settings: each instance keeps the
// endpoints of each room as it last read or set them, and writes them
// back (SET NX) when the room's key is missing, which it never is
// otherwise (none is an empty list). That happens on the first read of
// the room's endpoints after the loss (an event, the admin API), and for
// every room the instance remembers as soon as its delivery loop sees the
// outbox's marker gone or changed. The outbox itself (deliveries due or
// waiting for a retry) is not remembered outside Redis: its loss is
// logged, once, by the instance that notices it.

// remember keeps eps as room's endpoints as last seen.
func (h *Hooks) remember(room string, eps []Endpoint) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if _, ok := h.known[room]; !ok && len(h.known) >= maxRemembered {
		return
	}
	h.known[strings.Clone(room)] = append([]Endpoint(nil), eps...)
}

// restoreRoom writes back room's endpoints as this instance remembers
// them, unless another write came first, and returns the key's value
// then (nil: none is known).
func (h *Hooks) restoreRoom(ctx context.Context, room string) (any, error) {
	h.mu.Lock()
	eps := h.known[room]
	h.mu.Unlock()
	if len(eps) == 0 {
		return nil, nil
	}
	b, _ := json.Marshal(eps)
	set, err := h.r.Do(ctx, "SET", roomKey(room), string(b), "NX")
	if err != nil {
		return nil, fmt.Errorf("webhook: restore room endpoints: %w", err)
	}
	if set == nil { // written meanwhile: that write stands
		v, err := h.r.Do(ctx, "GET", roomKey(room))
		if err != nil {
			return nil, fmt.Errorf("webhook: room endpoints: %w", err)
		}
		return v, nil
	}
	h.log.Warn("webhook endpoints restored after Redis lost them", "room", room, "endpoints", len(eps))
	if h.o.OnRestored != nil {
		h.o.OnRestored(1)
	}
	return string(b), nil
}

// noticeEpoch compares the outbox's marker a claim saw with the one this
// instance saw last. Gone (made anew by this claim) after this instance
// saw one, Redis lost the outbox: that is logged, and every room whose
// endpoints this instance remembers gets them back. Another value than
// the last seen: another instance noticed first; this one puts back what
// it remembers too.
func (h *Hooks) noticeEpoch(ctx context.Context, epoch string, made bool) {
	h.mu.Lock()
	last := h.epoch
	h.epoch = epoch
	rooms := make([]string, 0, len(h.known))
	for r, eps := range h.known {
		if len(eps) > 0 {
			rooms = append(rooms, r)
		}
	}
	h.mu.Unlock()
	if last == "" || last == epoch {
		return
	}
	if made {
		h.log.Warn("webhook outbox lost with Redis's data: the deliveries that waited for an attempt or a retry are gone; the rooms' endpoints are put back by the instances that remember them")
	}
	for _, r := range rooms {
		if _, err := h.RoomEndpoints(ctx, r); err != nil && ctx.Err() == nil {
			h.log.Warn("webhook endpoints not restored", "room", r, "err", err)
		}
	}
}
