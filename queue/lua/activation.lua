-- activation: what Redis runs, byte for byte (EVALSHA sends the SHA-1 of this
-- file). Generated from scripts/activation.lua, after the functions it calls
-- of the prelude: those of scripts/clock.lua, by
--   go test ./queue -run TestScriptsGenerated -update
-- Edit those files, not this one.
--
-- KEYS[1] = wr:{room}:q
-- KEYS[2] = wr:{room}:cfg
-- KEYS[3] = wr:{room}:stats
-- KEYS[4] = wr:{room}:seq
-- KEYS[5] = wr:{room}:pseq
-- KEYS[6] = wr:{room}:pmark
-- KEYS[7] = wr:{room}:active
-- KEYS[8] = wr:{room}:tick
-- KEYS[9] = wr:{room}:pre
-- KEYS[10] = wr:{room}:ppre
-- KEYS[11] = wr:{room}:back
-- KEYS[12] = wr:{room}:away
-- KEYS[13] = wr:{room}:awayt
-- KEYS[14] = wr:{room}:seen
-- KEYS[15] = wr:{room}:aseen
-- KEYS[16] = wr:{room}:closed
-- KEYS[17] = wr:{room}:owed
-- KEYS[18] = wr:{room}:done
-- KEYS[19] = wr:{room}:pdone
-- KEYS[20] = wr:{room}:donein
-- KEYS[21] = wr:{room}:retook
-- KEYS[22] = wr:{room}:draw
-- KEYS[23] = wr:{room}:drawc
-- KEYS[24] = wr:{room}:drawkey
-- KEYS[25] = wr:{room}:drawlist
-- KEYS[26] = wr:{room}:drawpool
-- KEYS[27] = wr:{room}:lotc
-- KEYS[28] = wr:{room}:lotl
-- KEYS[29] = wr:{room}:lotlog
--
-- ARGV[1] = prefix: the room's key prefix, wr:{room}:

local K = {q = KEYS[1], cfg = KEYS[2], stats = KEYS[3], seq = KEYS[4], pseq = KEYS[5], pmark = KEYS[6], active = KEYS[7], tick = KEYS[8], pre = KEYS[9], ppre = KEYS[10], back = KEYS[11], away = KEYS[12], awayt = KEYS[13], seen = KEYS[14], aseen = KEYS[15], closed = KEYS[16], owed = KEYS[17], done = KEYS[18], pdone = KEYS[19], donein = KEYS[20], retook = KEYS[21], draw = KEYS[22], drawc = KEYS[23], drawkey = KEYS[24], drawlist = KEYS[25], drawpool = KEYS[26], lotc = KEYS[27], lotl = KEYS[28], lotlog = KEYS[29]}
local V = {t = KEYS[30], spent = KEYS[31], gone = KEYS[32], left = KEYS[33], dropped = KEYS[34]}
-- The clock. Prelude shared by every script, after lotlog.lua. Keys of a
-- room are built from the prefix "wr:{room}:" (ARGV[1]); KEYS[1] is always
-- a key of that slot, so a cluster routes the script to the node holding
-- every key it touches.

-- Redis TIME is the one clock, in ms.
local function now_ms()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end

-- activation: the state of a room with activation busy, as the instances
-- notice it (every housekeeping pass): queueing while anyone waits (the
-- queue, a pre-queue, a draw's pool, visitors away or back, as busy.lua
-- counts them), else passing visitors through; and since when.
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

