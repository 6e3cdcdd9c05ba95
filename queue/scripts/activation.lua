-- activation: the state of a room with activation busy, as the instances
-- notice it (every housekeeping pass): queueing while anyone waits (the
-- queue, a pre-queue, a draw's pool, visitors away or back, as busy.lua
-- counts them), else passing visitors through; and since when.
-- ARGV[1] = prefix: the room's key prefix, wr:{room}:
-- The record is a hash, activation (built here from the prefix: the
-- room's slot), {state, since}.
-- The reply is read by decodeActivation in activation.go, field for
-- field. Returns {queueing, since, changed}: queueing 1 or 0, since the
-- Redis time (ms) the state began, changed 1 when this call saw the state
-- change from a recorded one, 2 when it recorded the room's first state,
-- else 0.
local p = ARGV[1]
local key = p .. 'activation'
local state = 'passing'
if redis.call('EXISTS', K.q, K.pre, K.ppre, K.drawpool, K.drawlist, K.back, K.away) > 0 then
  state = 'queueing'
end
local q = 0
if state == 'queueing' then q = 1 end
local cur = redis.call('HMGET', key, 'state', 'since')
if cur[1] == state then return {q, tonumber(cur[2]), 0} end
local now = now_ms()
redis.call('HSET', key, 'state', state, 'since', now)
local changed = 1
if not cur[1] then changed = 2 end
return {q, now, changed}
