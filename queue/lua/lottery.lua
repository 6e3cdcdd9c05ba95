-- lottery: what Redis runs, byte for byte (EVALSHA sends the SHA-1 of this
-- file). Generated from scripts/lottery.lua, after the functions it calls of
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
--
-- ARGV[1] = prefix: the room's key prefix, wr:{room}:
-- ARGV[2] = op: commit, end or read
-- ARGV[3] = seed: a new secret seed (commit)
-- ARGV[4] = commitment: its SHA-256 (commit)

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

-- lottery: the lottery's seed.
-- The lottery's seed record (lotc: seed, commit, at, endedAt; method.lua
-- draws with it). op "commit" stores a new secret seed and its commitment
-- unless one is stored and the lottery has not ended; op "end" marks the
-- stored seed's lottery as ended (the room left the random method), so it
-- may be revealed and the next lottery gets a new seed; op "read" changes
-- nothing. Returns {seed, commit, at, endedAt} ("" when none).
local c = K.lotc
local op = ARGV[2]
local now = now_ms()
if op == 'commit' then
  if not (redis.call('HEXISTS', c, 'seed') == 1 and redis.call('HEXISTS', c, 'endedAt') == 0) then
    redis.call('DEL', c)
    redis.call('HSET', c, 'seed', ARGV[3], 'commit', ARGV[4], 'at', now)
  end
elseif op == 'end' then
  if redis.call('HEXISTS', c, 'seed') == 1 and redis.call('HEXISTS', c, 'endedAt') == 0 then
    redis.call('HSET', c, 'endedAt', now)
  end
end
local d = redis.call('HMGET', c, 'seed', 'commit', 'at', 'endedAt')
return {d[1] or '', d[2] or '', d[3] or '0', d[4] or '0'}

