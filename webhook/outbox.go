package webhook

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/waitroom/waitroom/internal/rediscall"
)

// Redis is what the outbox and the rooms' endpoint lists need of Redis (a
// rediscall.Redis).
type Redis interface {
	Eval(ctx context.Context, s *rediscall.Script, keys []string, args ...string) (any, error)
	Do(ctx context.Context, args ...string) (any, error)
}

// The outbox's keys share one hash tag (which no room name can be), so
// every script touching them runs in one cluster slot. Each endpoint has
// a queue of its own (its deliveries by due time, and by age for the
// bound on what may wait); the ready set says which endpoints have a
// delivery due, and from when, so a claim goes from endpoint to endpoint
// instead of through every delivery of one that is slow.
const (
	prefix      = "wr:{webhooks!}:"
	readyKey    = prefix + "ready"    // sorted set: endpoint by its queue's first due time (ms)
	jobsKey     = prefix + "jobs"     // hash: delivery id to its job
	claimsKey   = prefix + "claims"   // hash: delivery id to the claim that holds it
	deadKey     = prefix + "dead"     // sorted set: dead delivery id by when it died (ms)
	deadJobsKey = prefix + "deadjobs" // hash: dead delivery id to its job
	onceKey     = prefix + "once"     // hash: room and type to the occurrence EmitOnce sent last
	epochKey    = prefix + "epoch"    // the outbox's marker: gone when Redis lost its data
	// An endpoint's queue is prefix + "q:" + its name (sorted set:
	// delivery id by due time, ms), its deliveries by age prefix + "n:" +
	// its name (sorted set: delivery id by the count of prefix + "seq",
	// a counter of the deliveries put in the queues, when it was put
	// there).
	// legacyDueKey is the one queue of every endpoint of earlier builds:
	// what it still holds moves to the endpoints' queues.
	legacyDueKey = prefix + "due"
)

// roomKey holds room's endpoints (JSON), beside the room's other keys.
func roomKey(room string) string { return "wr:{" + room + "}:webhooks" }

// endpointOf names the endpoint of a delivery of scope to url for room's
// event: a deployment's endpoint is one for every room, a room's is that
// room's alone. A room's name stands in its endpoints' names, so a claim
// can count a room's attempts.
func endpointOf(scope, room, url string) string {
	sum := sha256.Sum256([]byte(url))
	h := hex.EncodeToString(sum[:8])
	if scope == "room" {
		return "r:" + room + ":" + h
	}
	return "d:" + h
}

// job is one delivery: one event to one endpoint, with what its attempts
// so far found.
type job struct {
	ID   string `json:"id"`   // the delivery: Msg and the endpoint's place
	Msg  string `json:"msg"`  // webhook-id, the same on every attempt
	Room string `json:"room"` // the event's room
	// Scope says where the endpoint is configured: "deployment" (the
	// webhooks file) or "room"; the secret is looked up there at each
	// attempt, so a rotated secret signs the retries.
	Scope      string `json:"scope"`
	URL        string `json:"url"`
	Type       string `json:"type"`
	Body       string `json:"body"`
	CreatedMs  int64  `json:"createdMs"`
	Attempts   int    `json:"attempts"`
	LastStatus int    `json:"lastStatus,omitempty"`
	LastError  string `json:"lastError,omitempty"`
	DiedMs     int64  `json:"diedMs,omitempty"` // when it went to the dead-letter list
}

func (j job) endpoint() string { return endpointOf(j.Scope, j.Room, j.URL) }

// nowLua is Redis TIME in ms: the one clock every instance agrees on; and
// ready, which keeps an endpoint's place in the ready set (KEYS[1]) at its
// queue's first due time, or takes it out when its queue is empty. The
// endpoints' own keys are named inside the scripts, with the outbox's hash
// tag, so they are in the slot of the keys passed.
const nowLua = `local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local P = '` + prefix + `'
local function ready(ep)
  local f = redis.call('ZRANGE', P .. 'q:' .. ep, 0, 0, 'WITHSCORES')
  if f[1] then
    redis.call('ZADD', KEYS[1], tonumber(f[2]), ep)
  else
    redis.call('ZREM', KEYS[1], ep)
  end
end
`

// enqueue: KEYS ready, jobs, once, claims; ARGV once field, occurrence,
// most waiting per endpoint, then id, endpoint, job for each delivery.
// Each is due now. With a once field, nothing is done ({0}) when the field
// holds the occurrence already. An endpoint left with more deliveries
// waiting than the most loses its oldest ones that no attempt holds.
// Returns the count enqueued, then id, job of each delivery dropped.
var enqueueScript = rediscall.NewScript("webhook_enqueue", nowLua+`
if ARGV[1] ~= '' then
  if redis.call('HGET', KEYS[3], ARGV[1]) == ARGV[2] then return {0} end
  redis.call('HSET', KEYS[3], ARGV[1], ARGV[2])
end
local most = tonumber(ARGV[3])
local touched, eps = {}, {}
for i = 4, #ARGV, 3 do
  local id, ep = ARGV[i], ARGV[i+1]
  redis.call('HSET', KEYS[2], id, ARGV[i+2])
  redis.call('ZADD', P .. 'q:' .. ep, 'NX', now, id)
  redis.call('ZADD', P .. 'n:' .. ep, 'NX', redis.call('INCR', P .. 'seq'), id)
  if not touched[ep] then
    touched[ep] = true
    eps[#eps+1] = ep
  end
end
local out = {(#ARGV - 3) / 3}
for _, ep in ipairs(eps) do
  local q, n = P .. 'q:' .. ep, P .. 'n:' .. ep
  local over = redis.call('ZCARD', n) - most
  if over > 0 then
    for _, id in ipairs(redis.call('ZRANGE', n, 0, over + 63)) do
      if over == 0 then break end
      if redis.call('HEXISTS', KEYS[4], id) == 0 then
        out[#out+1] = id
        out[#out+1] = redis.call('HGET', KEYS[2], id) or ''
        redis.call('HDEL', KEYS[2], id)
        redis.call('ZREM', q, id)
        redis.call('ZREM', n, id)
        over = over - 1
      end
    end
  end
  ready(ep)
end
return out`)

// claim: KEYS ready, jobs, claims, epoch, legacy due; ARGV n, lease ms,
// claim, most per endpoint, most per room, endpoints to look at, a new
// epoch, then name, count of what this instance has in flight (each
// endpoint by its name, each room as "room:" and its name). Takes up to n
// due deliveries, endpoint after endpoint in the order of their first due
// one, no more of an endpoint or a room's endpoints than its most minus
// what is in flight: each is due again when the lease ends (so another
// instance takes it if this one dies) and held by claim. Returns the
// epoch (set to the new one if it was missing), 1 if it was, 1 if the
// legacy queue has deliveries, then id, job, id, job, …
var claimScript = rediscall.NewScript("webhook_claim", nowLua+`
local out = {}
local epoch, made = redis.call('GET', KEYS[4]), 0
if not epoch then
  epoch, made = ARGV[7], 1
  redis.call('SET', KEYS[4], epoch)
end
out[1], out[2], out[3] = epoch, made, redis.call('EXISTS', KEYS[5])
local n, lease, name = tonumber(ARGV[1]), tonumber(ARGV[2]), ARGV[3]
local epMost, roomMost = tonumber(ARGV[4]), tonumber(ARGV[5])
local busy = {}
for i = 8, #ARGV, 2 do busy[ARGV[i]] = tonumber(ARGV[i+1]) end
local taken = 0
for _, ep in ipairs(redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', now, 'LIMIT', 0, tonumber(ARGV[6]))) do
  if taken >= n then break end
  local room = string.match(ep, '^r:([^:]+):')
  local free = epMost - (busy[ep] or 0)
  if room then free = math.min(free, roomMost - (busy['room:' .. room] or 0)) end
  free = math.min(free, n - taken)
  if free > 0 then
    local q = P .. 'q:' .. ep
    local got = 0
    for _, id in ipairs(redis.call('ZRANGEBYSCORE', q, '-inf', now, 'LIMIT', 0, free)) do
      local j = redis.call('HGET', KEYS[2], id)
      if j then
        redis.call('ZADD', q, now + tonumber(ARGV[2]), id)
        redis.call('HSET', KEYS[3], id, name)
        out[#out+1] = id
        out[#out+1] = j
        got = got + 1
      else
        redis.call('ZREM', q, id)
        redis.call('ZREM', P .. 'n:' .. ep, id)
      end
    end
    taken = taken + got
    busy[ep] = (busy[ep] or 0) + got
    if room then busy['room:' .. room] = (busy['room:' .. room] or 0) + got end
    ready(ep)
  end
end
return out`)

// finish: KEYS ready, jobs, claims, dead, deadjobs; ARGV id, claim,
// outcome (done, retry, release, dead), job, delay ms, dead kept,
// endpoint. Does nothing (returns 0) unless claim still holds the
// delivery.
var finishScript = rediscall.NewScript("webhook_finish", nowLua+`
local id, outcome, ep = ARGV[1], ARGV[3], ARGV[7]
if redis.call('HGET', KEYS[3], id) ~= ARGV[2] then return 0 end
redis.call('HDEL', KEYS[3], id)
if outcome == 'retry' or outcome == 'release' then
  redis.call('HSET', KEYS[2], id, ARGV[4])
  redis.call('ZADD', P .. 'q:' .. ep, now + tonumber(ARGV[5]), id)
  ready(ep)
  return 1
end
redis.call('ZREM', P .. 'q:' .. ep, id)
redis.call('ZREM', P .. 'n:' .. ep, id)
redis.call('HDEL', KEYS[2], id)
ready(ep)
if outcome == 'dead' then
  redis.call('HSET', KEYS[5], id, ARGV[4])
  redis.call('ZADD', KEYS[4], now, id)
  local over = redis.call('ZCARD', KEYS[4]) - tonumber(ARGV[6])
  if over > 0 then
    local old = redis.call('ZRANGE', KEYS[4], 0, over - 1)
    redis.call('ZREMRANGEBYRANK', KEYS[4], 0, over - 1)
    redis.call('HDEL', KEYS[5], unpack(old))
  end
end
return 1`)

// redeliver: KEYS ready, jobs, dead, deadjobs; ARGV id, job, endpoint.
// Moves a dead delivery back to its endpoint's queue, due now (and the
// newest there); 0 when it is not dead.
var redeliverScript = rediscall.NewScript("webhook_redeliver", nowLua+`
if redis.call('HEXISTS', KEYS[4], ARGV[1]) == 0 then return 0 end
redis.call('HDEL', KEYS[4], ARGV[1])
redis.call('ZREM', KEYS[3], ARGV[1])
redis.call('HSET', KEYS[2], ARGV[1], ARGV[2])
redis.call('ZADD', P .. 'q:' .. ARGV[3], now, ARGV[1])
redis.call('ZADD', P .. 'n:' .. ARGV[3], redis.call('INCR', P .. 'seq'), ARGV[1])
ready(ARGV[3])
return 1`)

// adopt: KEYS ready, jobs, legacy due; ARGV id, endpoint for each
// delivery. Moves each from the legacy queue to its endpoint's,
// keeping its due time; one without an endpoint, or whose job is gone, is
// only taken out.
var adoptScript = rediscall.NewScript("webhook_adopt", nowLua+`
for i = 1, #ARGV, 2 do
  local id, ep = ARGV[i], ARGV[i+1]
  local due = redis.call('ZSCORE', KEYS[3], id)
  if ep ~= '' and due and redis.call('HEXISTS', KEYS[2], id) == 1 then
    redis.call('ZADD', P .. 'q:' .. ep, tonumber(due), id)
    redis.call('ZADD', P .. 'n:' .. ep, 'NX', redis.call('INCR', P .. 'seq'), id)
    ready(ep)
  end
  redis.call('ZREM', KEYS[3], id)
end
return 1`)

// enqueue writes jobs to the outbox, due now; with a once field, only if
// the field does not hold occurrence yet (added says whether it did). An
// endpoint left with more than most waiting loses its oldest: dropped
// lists them.
func enqueue(ctx context.Context, r Redis, once, occurrence string, most int, jobs []job) (added bool, dropped []job, err error) {
	args := make([]string, 0, 3+3*len(jobs))
	args = append(args, once, occurrence, strconv.Itoa(most))
	for _, j := range jobs {
		b, _ := json.Marshal(j)
		args = append(args, j.ID, j.endpoint(), string(b))
	}
	v, err := r.Eval(ctx, enqueueScript, []string{readyKey, jobsKey, onceKey, claimsKey}, args...)
	if err != nil {
		return false, nil, fmt.Errorf("webhook: enqueue: %w", err)
	}
	flat, _ := v.([]any)
	if len(flat) > 0 {
		n, _ := flat[0].(int64)
		added = n > 0
	}
	for i := 1; i+1 < len(flat); i += 2 {
		id, _ := flat[i].(string)
		raw, _ := flat[i+1].(string)
		var j job
		if json.Unmarshal([]byte(raw), &j) != nil {
			j = job{ID: id}
		}
		dropped = append(dropped, j)
	}
	return added, dropped, nil
}

// claimReq is what a claim asks for: up to n deliveries, held for lease
// under name, no endpoint or room past its most with what is in flight
// (busy: endpoint name, or "room:" and a room's, to attempts).
type claimReq struct {
	n                int
	lease            time.Duration
	name             string
	epMost, roomMost int
	busy             map[string]int
	epoch            string // set when the marker is missing
}

// claimed is what a claim took, and what it saw of the marker.
type claimed struct {
	jobs   []job
	epoch  string
	made   bool // the marker was missing: set to the claim's epoch
	legacy bool // the legacy queue has deliveries
}

// claim takes due jobs as c asks.
func claim(ctx context.Context, r Redis, c claimReq) (claimed, error) {
	// The ready set is looked at past the endpoints this instance cannot
	// take more of: each at its most, and every endpoint of a room at
	// its most.
	look := c.n + 16
	for k, v := range c.busy {
		if strings.HasPrefix(k, "room:") {
			if v >= c.roomMost {
				look += MaxRoomEndpoints
			}
		} else if v >= c.epMost {
			look++
		}
	}
	args := []string{strconv.Itoa(c.n), strconv.FormatInt(c.lease.Milliseconds(), 10), c.name,
		strconv.Itoa(c.epMost), strconv.Itoa(c.roomMost), strconv.Itoa(look), c.epoch}
	for k, v := range c.busy {
		if v > 0 {
			args = append(args, k, strconv.Itoa(v))
		}
	}
	v, err := r.Eval(ctx, claimScript, []string{readyKey, jobsKey, claimsKey, epochKey, legacyDueKey}, args...)
	if err != nil {
		return claimed{}, fmt.Errorf("webhook: claim: %w", err)
	}
	flat, _ := v.([]any)
	if len(flat) < 3 {
		return claimed{}, fmt.Errorf("webhook: claim: unexpected reply %v", v)
	}
	var out claimed
	out.epoch, _ = flat[0].(string)
	made, _ := flat[1].(int64)
	legacy, _ := flat[2].(int64)
	out.made, out.legacy = made == 1, legacy == 1
	for i := 3; i+1 < len(flat); i += 2 {
		raw, _ := flat[i+1].(string)
		var j job
		if json.Unmarshal([]byte(raw), &j) != nil {
			continue // not ours to read; its lease ends and it is tried again
		}
		out.jobs = append(out.jobs, j)
	}
	return out, nil
}

// errLost is a finish whose claim no longer held the delivery: its lease
// had run out and another instance may have taken it.
var errLost = errors.New("webhook: claim lost")

// finish records the outcome of an attempt made under the claim name.
func finish(ctx context.Context, r Redis, name, outcome string, j job, delayMs int64, deadKeep int) error {
	b, _ := json.Marshal(j)
	v, err := r.Eval(ctx, finishScript, []string{readyKey, jobsKey, claimsKey, deadKey, deadJobsKey},
		j.ID, name, outcome, string(b), strconv.FormatInt(delayMs, 10), strconv.Itoa(deadKeep), j.endpoint())
	if err != nil {
		return fmt.Errorf("webhook: finish: %w", err)
	}
	if n, _ := v.(int64); n != 1 {
		return errLost
	}
	return nil
}

// adoptLegacy moves what the legacy queue of earlier builds holds to the
// endpoints' queues, a page at a time. A delivery whose job cannot be
// read is only taken out of it: unread returns how many.
func adoptLegacy(ctx context.Context, r Redis) (unread int, err error) {
	const page = 200
	for {
		v, err := r.Do(ctx, "ZRANGE", legacyDueKey, "0", strconv.Itoa(page-1))
		if err != nil {
			return unread, fmt.Errorf("webhook: legacy outbox: %w", err)
		}
		ids, _ := v.([]any)
		if len(ids) == 0 {
			return unread, nil
		}
		hget := append([]string{"HMGET", jobsKey}, make([]string, len(ids))...)
		for i, id := range ids {
			hget[2+i], _ = id.(string)
		}
		v, err = r.Do(ctx, hget...)
		if err != nil {
			return unread, fmt.Errorf("webhook: legacy outbox: %w", err)
		}
		raws, _ := v.([]any)
		args := make([]string, 0, 2*len(ids))
		for i, id := range hget[2:] {
			var j job
			ep := "" // none: only taken out (a job gone, or unreadable)
			var raw string
			if i < len(raws) {
				raw, _ = raws[i].(string)
			}
			if raw != "" {
				if json.Unmarshal([]byte(raw), &j) == nil {
					ep = j.endpoint()
				} else {
					unread++
				}
			}
			args = append(args, id, ep)
		}
		if _, err := r.Eval(ctx, adoptScript, []string{readyKey, jobsKey, legacyDueKey}, args...); err != nil {
			return unread, fmt.Errorf("webhook: legacy outbox: %w", err)
		}
	}
}
