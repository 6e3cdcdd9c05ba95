package webhook

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/waitroom/waitroom/internal/rediscall"
)

// What Redis loses, webhooks put back as far as an instance remembers it,
// as every instance does for a room's settings.
//
// Each instance keeps the endpoints of each room as it last read or set
// them, and writes them back (SET NX) when the room's key is missing,
// which it never is otherwise (none is an empty list). That happens on
// the first read of the room's endpoints after the loss (an event, the
// admin API), and for every room the instance remembers as soon as its
// delivery loop sees the outbox's marker gone or changed.
//
// Each instance also keeps the deliveries it put in the outbox (its
// events, its retries, its redeliveries) until it sees them done: its own
// attempts say so, and every pruneEvery polls one script asks Redis which
// of the rest are still there, provided the marker is the one it knows
// (another instance's attempt, a drop). When the marker is gone or
// changed, it writes them back (HSETNX: a delivery two instances
// remember goes back once), each due when it was due before (a retry
// keeps its wait). Deliveries only an instance that is gone too
// remembered, and the dead-letter list, are lost.

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
		h.o.OnRestored(1, 0)
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
		h.log.Warn("webhook outbox lost with Redis's data: each instance puts back the rooms' endpoints and the deliveries it remembers; the dead-letter list and deliveries only a stopped instance knew are gone")
	}
	for _, r := range rooms {
		if _, err := h.RoomEndpoints(ctx, r); err != nil && ctx.Err() == nil {
			h.log.Warn("webhook endpoints not restored", "room", r, "err", err)
		}
	}
	n, err := h.restoreDeliveries(ctx)
	if err != nil && ctx.Err() == nil {
		h.log.Warn("webhook deliveries not restored", "err", err)
	}
	if n > 0 {
		h.log.Warn("webhook deliveries restored after Redis lost them", "deliveries", n)
		if h.o.OnRestored != nil {
			h.o.OnRestored(0, n)
		}
	}
}

// maxKept bounds the deliveries an instance keeps to put back: past it,
// a new one is not kept (and is lost if Redis loses it).
const maxKept = 10000

// pruneEvery is how many polls of the delivery loop pass between two
// looks at which kept deliveries Redis still has.
const pruneEvery = 10

// kept is a delivery an instance keeps: the job as last written, and
// when it is due (ms, this instance's clock).
type kept struct {
	j     job
	dueMs int64
}

// keep remembers j as waiting in the outbox, due at dueMs.
func (h *Hooks) keep(j job, dueMs int64) {
	h.kmu.Lock()
	defer h.kmu.Unlock()
	if _, ok := h.kept[j.ID]; !ok && len(h.kept) >= maxKept {
		if !h.keptFull {
			h.keptFull = true
			h.log.Warn("webhook deliveries beyond what this instance keeps to put back after a Redis loss", "kept", maxKept)
		}
		return
	}
	h.kept[j.ID] = kept{j, dueMs}
}

// forget drops the deliveries ids from what this instance keeps.
func (h *Hooks) forget(ids ...string) {
	h.kmu.Lock()
	defer h.kmu.Unlock()
	for _, id := range ids {
		delete(h.kept, id)
	}
	if len(h.kept) < maxKept {
		h.keptFull = false
	}
}

// stillThere: KEYS epoch, jobs; ARGV the epoch known, id1, id2, … Returns
// -1 when the epoch is another (Redis lost the outbox: nothing is
// forgotten), else 1 or 0 for each id: whether it still waits.
var stillThereScript = rediscall.NewScript("webhook_still_there", nowLua+`
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return -1 end
local out = {}
for i = 2, #ARGV do out[#out+1] = redis.call('HEXISTS', KEYS[2], ARGV[i]) end
return out`)

// prune forgets the kept deliveries Redis no longer has, unless the
// outbox's marker is not the one this instance saw last.
func (h *Hooks) prune(ctx context.Context) error {
	h.mu.Lock()
	epoch := h.epoch
	h.mu.Unlock()
	if epoch == "" {
		return nil
	}
	h.kmu.Lock()
	ids := make([]string, 0, len(h.kept))
	for id := range h.kept {
		ids = append(ids, id)
	}
	h.kmu.Unlock()
	const page = 500
	for len(ids) > 0 {
		batch := ids[:min(page, len(ids))]
		ids = ids[len(batch):]
		v, err := h.r.Eval(ctx, stillThereScript, []string{epochKey, jobsKey}, append([]string{epoch}, batch...)...)
		if err != nil {
			return fmt.Errorf("webhook: kept deliveries: %w", err)
		}
		flags, ok := v.([]any)
		if !ok {
			return nil // another epoch: the next claim notices
		}
		var gone []string
		for i, f := range flags {
			if n, _ := f.(int64); n == 0 && i < len(batch) {
				gone = append(gone, batch[i])
			}
		}
		h.forget(gone...)
	}
	return nil
}

// restoreScript: KEYS ready, jobs; ARGV id, endpoint, job, due ms for
// each delivery. Puts back each delivery Redis does not have, due at its
// time or now. Returns how many it put back.
var restoreScript = rediscall.NewScript("webhook_restore", nowLua+`
local n = 0
for i = 1, #ARGV, 4 do
  local id, ep = ARGV[i], ARGV[i+1]
  if redis.call('HSETNX', KEYS[2], id, ARGV[i+2]) == 1 then
    redis.call('ZADD', P .. 'q:' .. ep, 'NX', math.max(now, tonumber(ARGV[i+3])), id)
    redis.call('ZADD', P .. 'n:' .. ep, 'NX', redis.call('INCR', P .. 'seq'), id)
    ready(ep)
    n = n + 1
  end
end
return n`)

// restoreDeliveries writes back the deliveries this instance keeps that
// Redis does not have, oldest first, and returns how many.
func (h *Hooks) restoreDeliveries(ctx context.Context) (int, error) {
	h.kmu.Lock()
	all := make([]kept, 0, len(h.kept))
	for _, k := range h.kept {
		all = append(all, k)
	}
	h.kmu.Unlock()
	slices.SortFunc(all, func(a, b kept) int { return cmp.Compare(a.j.CreatedMs, b.j.CreatedMs) })
	total := 0
	const page = 200
	for len(all) > 0 {
		batch := all[:min(page, len(all))]
		all = all[len(batch):]
		args := make([]string, 0, 4*len(batch))
		for _, k := range batch {
			b, _ := json.Marshal(k.j)
			args = append(args, k.j.ID, k.j.endpoint(), string(b), strconv.FormatInt(k.dueMs, 10))
		}
		v, err := h.r.Eval(ctx, restoreScript, []string{readyKey, jobsKey}, args...)
		if err != nil {
			return total, fmt.Errorf("webhook: restore deliveries: %w", err)
		}
		n, _ := v.(int64)
		total += int(n)
	}
	return total, nil
}
