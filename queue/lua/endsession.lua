-- endsession: what Redis runs, byte for byte (EVALSHA sends the SHA-1 of this
-- file). Generated from scripts/endsession.lua, after the functions it calls
-- of the prelude: those of scripts/clock.lua and scripts/token.lua, by
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
-- ARGV[3] = notBefore: the session's token's notBefore (Unix ms)
-- ARGV[4] = channel: the instances' revocation channel
-- ARGV[5] = key: the session's key, which the instances stop accepting
-- ARGV[6] = untilMs: until when (Unix ms) when the record is gone

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

-- Entry token records. Prelude, after clock.lua.

-- A token record is "notBefore:expiresAt:cap" in ms. expiresAt slides with
-- use up to cap. The record outlives expiresAt by a retention so that status
-- can say "expired".
local function read_token(key)
  local rec = redis.call('GET', key)
  if not rec then return nil end
  local nb, exp, cap = string.match(rec, '^(%d+):(%d+):?(%d*)')
  nb, exp = tonumber(nb), tonumber(exp)
  cap = tonumber(cap) or exp
  return nb, exp, cap
end

-- endsession: a gateway session's end.
-- Ends a gateway session before its time. If the visitor's token record is
-- still the one with this notBefore it goes, and with it the max-active
-- slot and the seat (a session is never spent, so its seat is held by the
-- active set alone): the next tick admits into them. Every instance hears
-- "key until" on channel, even when nothing was held any more, so none
-- keeps accepting the cookie; until is the token's cap, or untilMs when the
-- record is gone. Returns 1 if a live session ended, else 0.
local p, v = ARGV[1], ARGV[2]
local key = V.t
local nb, exp, cap = read_token(key)
local until_ms = tonumber(ARGV[6])
local ended = 0
if nb and nb == tonumber(ARGV[3]) then
  until_ms = cap
  redis.call('DEL', key)
  if redis.call('ZREM', K.active, v) == 1 then ended = 1 end
end
-- An ended session stays ended: revive.lua must not write it back.
local left = until_ms - now_ms()
if left > 0 then redis.call('SET', V.gone, ARGV[3], 'PX', left) end
redis.call('PUBLISH', ARGV[4], ARGV[5] .. ' ' .. until_ms)
return ended

