package webhook

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"

	"github.com/waitroom/waitroom/queue"
)

// Redis is what the outbox and the rooms' endpoint lists need of Redis (a
// queue.Redis).
type Redis interface {
	Eval(ctx context.Context, s *queue.Script, keys []string, args ...string) (any, error)
	Do(ctx context.Context, args ...string) (any, error)
}

// The outbox's keys share one hash tag (which no room name can be), so
// every script touching them runs in one cluster slot.
const (
	dueKey      = "wr:{webhooks!}:due"      // sorted set: delivery id by due time (ms)
	jobsKey     = "wr:{webhooks!}:jobs"     // hash: delivery id to its job
	claimsKey   = "wr:{webhooks!}:claims"   // hash: delivery id to the claim that holds it
	deadKey     = "wr:{webhooks!}:dead"     // sorted set: dead delivery id by when it died (ms)
	deadJobsKey = "wr:{webhooks!}:deadjobs" // hash: dead delivery id to its job
	onceKey     = "wr:{webhooks!}:once"     // hash: room and type to the occurrence EmitOnce sent last
)

// roomKey holds room's endpoints (JSON), beside the room's other keys.
func roomKey(room string) string { return "wr:{" + room + "}:webhooks" }

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

func script(name, src string) *queue.Script {
	sum := sha1.Sum([]byte(src))
	return &queue.Script{Name: name, Src: src, Hash: hex.EncodeToString(sum[:])}
}

// nowLua is Redis TIME in ms: the one clock every instance agrees on.
const nowLua = `local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
`

// enqueue: KEYS due, jobs, once; ARGV once field, occurrence, id1, job1,
// id2, job2, … Each job is due now. With a once field, nothing is done
// (0) when the field holds the occurrence already.
var enqueueScript = script("webhook_enqueue", nowLua+`
if ARGV[1] ~= '' then
  if redis.call('HGET', KEYS[3], ARGV[1]) == ARGV[2] then return 0 end
  redis.call('HSET', KEYS[3], ARGV[1], ARGV[2])
end
for i = 3, #ARGV, 2 do
  redis.call('HSET', KEYS[2], ARGV[i], ARGV[i+1])
  redis.call('ZADD', KEYS[1], 'NX', now, ARGV[i])
end
return (#ARGV - 2) / 2`)

// claim: KEYS due, jobs, claims; ARGV n, lease ms, claim. Takes up to n
// due deliveries: each is due again when the lease ends (so another
// instance takes it if this one dies) and held by claim. Returns id, job,
// id, job, …
var claimScript = script("webhook_claim", nowLua+`
local ids = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', now, 'LIMIT', 0, tonumber(ARGV[1]))
local out = {}
for _, id in ipairs(ids) do
  local j = redis.call('HGET', KEYS[2], id)
  if j then
    redis.call('ZADD', KEYS[1], now + tonumber(ARGV[2]), id)
    redis.call('HSET', KEYS[3], id, ARGV[3])
    out[#out+1] = id
    out[#out+1] = j
  else
    redis.call('ZREM', KEYS[1], id)
  end
end
return out`)

// finish: KEYS due, jobs, claims, dead, deadjobs; ARGV id, claim, outcome
// (done, retry, release, dead), job, delay ms, dead kept. Does nothing
// (returns 0) unless claim still holds the delivery.
var finishScript = script("webhook_finish", nowLua+`
local id, outcome = ARGV[1], ARGV[3]
if redis.call('HGET', KEYS[3], id) ~= ARGV[2] then return 0 end
redis.call('HDEL', KEYS[3], id)
if outcome == 'retry' or outcome == 'release' then
  redis.call('HSET', KEYS[2], id, ARGV[4])
  redis.call('ZADD', KEYS[1], now + tonumber(ARGV[5]), id)
  return 1
end
redis.call('ZREM', KEYS[1], id)
redis.call('HDEL', KEYS[2], id)
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

// redeliver: KEYS due, jobs, dead, deadjobs; ARGV id, job. Moves a dead
// delivery back to the outbox, due now; 0 when it is not dead.
var redeliverScript = script("webhook_redeliver", nowLua+`
if redis.call('HEXISTS', KEYS[4], ARGV[1]) == 0 then return 0 end
redis.call('HDEL', KEYS[4], ARGV[1])
redis.call('ZREM', KEYS[3], ARGV[1])
redis.call('HSET', KEYS[2], ARGV[1], ARGV[2])
redis.call('ZADD', KEYS[1], now, ARGV[1])
return 1`)

var outboxKeys = []string{dueKey, jobsKey, claimsKey, deadKey, deadJobsKey}

// enqueue writes jobs to the outbox, due now; with a once field, only if
// the field does not hold occurrence yet.
func enqueue(ctx context.Context, r Redis, once, occurrence string, jobs []job) error {
	args := make([]string, 0, 2+2*len(jobs))
	args = append(args, once, occurrence)
	for _, j := range jobs {
		b, _ := json.Marshal(j)
		args = append(args, j.ID, string(b))
	}
	if _, err := r.Eval(ctx, enqueueScript, []string{dueKey, jobsKey, onceKey}, args...); err != nil {
		return fmt.Errorf("webhook: enqueue: %w", err)
	}
	return nil
}

// claim takes up to n due jobs for lease ms under the claim name.
func claim(ctx context.Context, r Redis, n int, leaseMs int64, name string) ([]job, error) {
	v, err := r.Eval(ctx, claimScript, []string{dueKey, jobsKey, claimsKey}, strconv.Itoa(n), strconv.FormatInt(leaseMs, 10), name)
	if err != nil {
		return nil, fmt.Errorf("webhook: claim: %w", err)
	}
	flat, _ := v.([]any)
	out := make([]job, 0, len(flat)/2)
	for i := 0; i+1 < len(flat); i += 2 {
		raw, _ := flat[i+1].(string)
		var j job
		if json.Unmarshal([]byte(raw), &j) != nil {
			continue // not ours to read; its lease ends and it is tried again
		}
		out = append(out, j)
	}
	return out, nil
}

// errLost is a finish whose claim no longer held the delivery: its lease
// had run out and another instance may have taken it.
var errLost = errors.New("webhook: claim lost")

// finish records the outcome of an attempt made under the claim name.
func finish(ctx context.Context, r Redis, name, outcome string, j job, delayMs int64, deadKeep int) error {
	b, _ := json.Marshal(j)
	v, err := r.Eval(ctx, finishScript, outboxKeys, j.ID, name, outcome, string(b), strconv.FormatInt(delayMs, 10), strconv.Itoa(deadKeep))
	if err != nil {
		return fmt.Errorf("webhook: finish: %w", err)
	}
	if n, _ := v.(int64); n != 1 {
		return errLost
	}
	return nil
}
