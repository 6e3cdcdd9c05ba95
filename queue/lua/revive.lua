-- revive: what Redis runs, byte for byte (EVALSHA sends the SHA-1 of this
-- file). Generated from scripts/revive.lua, after the functions it calls of
-- the prelude: those of scripts/clock.lua and scripts/settings.lua, by
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
-- ARGV[4] = expiresAt: its signed expiry (Unix ms)
-- ARGV[5] = touch: 1 when the call slides the expiry, else 0
-- ARGV[6] = idleMs: how far a touch pushes the expiry, in ms
-- ARGV[7] = ttlMs: an entry token's lifetime in ms (the cfg hash overrides it)
-- ARGV[8] = maxMs: the longest a token's expiry may slide, in ms (the cfg hash overrides it)
-- ARGV[9] = retentionMs: how long a record outlives its token, in ms

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

-- The room's settings. Prelude, after token.lua.

-- The room's settings: those fields of the cfg hash that the script
-- reads, as a table of those that are set. When a script is generated
-- (cfgReadLua, scriptgen_test.go) CFG_NAMES becomes the names of the fields its
-- text reads as cfg.<field>, the version v first, and CFG_TABLE the table
-- of their values by name: a call asks for a few fields by name with one
-- HMGET and builds one small table, instead of reading every field the
-- room set and keeping those the schema declares. Every configured room
-- has a version, so a room without one is a room nobody configured: an
-- empty table.
local function load_cfg(p)
  local f = redis.call('HMGET', K.cfg, "v", "ttlMs", "maxMs")
  if not f[1] then return {} end
  return {v = f[1] or nil, ttlMs = f[2] or nil, maxMs = f[3] or nil}
end

local function num(v, default)
  local n = tonumber(v)
  if n == nil then return default end
  return n
end

-- revive: a lost token record written back.
-- Writes back the record of a signed entry token that Redis lost, once:
-- not when the visitor holds a record, not when the token was used (its
-- spent marker) or given back (leave.lua), and never twice for one token. Its uses are recorded
-- again from here on. A touch revives a token past its signed expiry within
-- its absolute cap, as the record's sliding expiry would have. Returns 1
-- when the record was written.
local p, v = ARGV[1], ARGV[2]
local nb, exp = tonumber(ARGV[3]), tonumber(ARGV[4])
local now = now_ms()
local key = V.t
if redis.call('EXISTS', key) == 1 then return 0 end
if tonumber(redis.call('GET', V.spent) or '') == nb then return 0 end
local mark = V.gone -- written back once already, or given back
if tonumber(redis.call('GET', mark) or '') == nb then return 0 end
local cfg = load_cfg(p)
local ttl = num(cfg.ttlMs, tonumber(ARGV[7]))
local cap = nb + math.max(num(cfg.maxMs, tonumber(ARGV[8])), ttl)
if ARGV[5] == '1' then exp = math.max(exp, math.min(now + tonumber(ARGV[6]), cap)) end
exp = math.min(exp, cap)
if now >= exp then return 0 end
local keep = cap - now + tonumber(ARGV[9])
redis.call('SET', key, nb .. ':' .. exp .. ':' .. cap, 'PX', keep)
redis.call('SET', mark, nb, 'PX', keep)
redis.call('ZADD', K.active, exp, v)
return 1

