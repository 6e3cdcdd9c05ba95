-- restore: what Redis runs, byte for byte (EVALSHA sends the SHA-1 of this
-- file). Generated from scripts/restore.lua, after the functions it calls of
-- the prelude: those of scripts/clock.lua, by
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
-- KEYS[30] = wr:{room}:t:<visitor>
-- KEYS[31] = wr:{room}:spent:<visitor>
-- KEYS[32] = wr:{room}:gone:<visitor>
-- KEYS[33] = wr:{room}:left:<visitor>
-- KEYS[34] = wr:{room}:dropped:<visitor>
--
-- ARGV[1] = prefix: the room's key prefix, wr:{room}:
-- ARGV[2] = visitor: the visitor's id
-- ARGV[3] = notBefore: the token's notBefore (Unix ms)
-- ARGV[4] = expiresAt: its expiry (Unix ms)
-- ARGV[5] = cap: the latest its expiry may slide to (Unix ms)
-- ARGV[6] = retentionMs: how long a record outlives its token, in ms

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

-- restore: a spent token given back.
-- Gives back a token that was used up by a request that then failed on the
-- protected side, unless the visitor holds another record by now. Only a
-- token that consume used up can come back, once: its spent marker moves
-- the seat from sold back to the live token, so the seats held stay exact.
local p, v = ARGV[1], ARGV[2]
local nb, exp, cap = tonumber(ARGV[3]), tonumber(ARGV[4]), tonumber(ARGV[5])
local now = now_ms()
if now >= exp then return 0 end
local mark = V.spent
if tonumber(redis.call('GET', mark) or '') ~= nb then return 0 end
local ok = redis.call('SET', V.t, nb .. ':' .. exp .. ':' .. cap, 'NX', 'PX', cap - now + tonumber(ARGV[6]))
if not ok then return 0 end
redis.call('DEL', mark)
redis.call('HINCRBY', K.stats, 'sold', -1)
redis.call('ZADD', K.active, exp, v)
return 1

