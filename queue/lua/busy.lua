-- busy: what Redis runs, byte for byte (EVALSHA sends the SHA-1 of this
-- file). Generated from scripts/busy.lua, after the functions it calls of the
-- prelude: those of scripts/clock.lua, scripts/token.lua,
-- scripts/settings.lua and scripts/seats.lua, by
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
-- ARGV[3] = tickMs: the tick, in ms
-- ARGV[4] = batch: the instance's batch, for a room without its own
-- ARGV[5] = ttlMs: the instance's token idle lifetime, in ms
-- ARGV[6] = maxMs: the instance's token cap, in ms
-- ARGV[7] = retentionMs: how long a record outlives its token, in ms
-- ARGV[8] = maxActive: the instance's max-active slots (0: none)

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
  local f = redis.call('HMGET', K.cfg, "v", "seats", "activation", "paused", "opensAt", "method", "inviteOnly", "powBits", "strategy", "maxActive", "batch", "ttlMs", "maxMs")
  if not f[1] then return {} end
  return {v = f[1] or nil, seats = f[2] or nil, activation = f[3] or nil, paused = f[4] or nil, opensAt = f[5] or nil, method = f[6] or nil, inviteOnly = f[7] or nil, powBits = f[8] or nil, strategy = f[9] or nil, maxActive = f[10] or nil, batch = f[11] or nil, ttlMs = f[12] or nil, maxMs = f[13] or nil}
end

local function num(v, default)
  local n = tonumber(v)
  if n == nil then return default end
  return n
end

-- Seats. Prelude, after opening.lua.

-- Seats held: live tokens plus tokens used up (sold). Every admission takes
-- a seat whether or not the room has a limit, so a limit set later counts
-- what is already out. A seat is freed only by taking its visitor out of
-- the active set (ZREM, or the expiry sweep), once per token, so freeing
-- twice is impossible; tokens past expiresAt that the sweep has not reached
-- yet do not count.
local function seats_held(p, now)
  return redis.call('ZCOUNT', K.active, '(' .. now, '+inf') +
    num(redis.call('HGET', K.stats, 'sold'), 0)
end

-- Seats held against the room's seats; 0 seats means no limit.
local function sold_out(p, cfg, now)
  local seats = num(cfg.seats, 0)
  if seats <= 0 then return false end
  return seats_held(p, now) >= seats
end

-- busy: a visitor without a place asks to be let in on the spot, which a
-- room with activation busy does while it is under its threshold and
-- nobody waits (docs/rooms.md, Activation).
-- The reply is read by decodeBusy in busy.go, field for field.
-- Returns {code, notBefore, expiresAt, reason}: code 1 admitted now (the
-- token valid from now), 2 already holding a live token (its notBefore
-- may be ahead: admitted by a tick, valid later), 0 refused, with reason
-- one of always, paused, not_open, closed, invite_only, pow, waiting,
-- sold_out, full.
--
-- The threshold is the room's own: in a max-active room its free slots;
-- under the fixed strategy its rate, batch per tick times ticks per
-- second, counted by a key per room per second (busy:<second>, built here
-- from the prefix: the room's slot) that expires after two seconds. One
-- script in the room's slot, so instances together never let in more.
local p, v = ARGV[1], ARGV[2]
local now = now_ms()
local nb, exp = read_token(V.t)
if nb and now < exp then return {2, nb, exp, ''} end

local cfg = load_cfg(p)
if cfg.activation ~= 'busy' then return {0, 0, 0, 'always'} end
if cfg.paused == '1' then return {0, 0, 0, 'paused'} end
if num(cfg.opensAt, 0) > now then return {0, 0, 0, 'not_open'} end
if cfg.method == 'reject' then return {0, 0, 0, 'closed'} end
-- An invite code or a proof of work is asked at the join: whoever passes
-- on the spot would skip it.
if cfg.inviteOnly == '1' then return {0, 0, 0, 'invite_only'} end
if num(cfg.powBits, 0) > 0 then return {0, 0, 0, 'pow'} end
-- Anyone waiting goes first: the queue, a pre-queue or a draw's pool,
-- those who came back from away and those set aside as away (they come
-- back to the front).
if redis.call('EXISTS', K.q, K.pre, K.ppre, K.drawpool, K.drawlist, K.back, K.away) > 0 then
  return {0, 0, 0, 'waiting'}
end
redis.call('ZREMRANGEBYSCORE', K.active, '-inf', now)
if sold_out(p, cfg, now) then return {0, 0, 0, 'sold_out'} end

local max_active = tonumber(ARGV[8])
if cfg.strategy == 'max-active' then max_active = num(cfg.maxActive, max_active) end
if cfg.strategy == 'fixed' then max_active = 0 end
if cfg.method == 'passthrough' then
  max_active = 0
elseif max_active > 0 then
  if redis.call('ZCARD', K.active) >= max_active then return {0, 0, 0, 'full'} end
else
  local tick_ms = tonumber(ARGV[3])
  local rate = math.max(1, math.floor(num(cfg.batch, tonumber(ARGV[4])) * 1000 / tick_ms))
  local second = p .. 'busy:' .. math.floor(now / 1000)
  if num(redis.call('GET', second), 0) >= rate then return {0, 0, 0, 'full'} end
  redis.call('INCR', second)
  redis.call('PEXPIRE', second, 2000)
end

-- Admitted as a tick admits one visitor, valid from now. Its token is
-- used by the request that asked (the gateway passes it at once), so it
-- is not watched as an unused one (admitted_seen).
local ttl = num(cfg.ttlMs, tonumber(ARGV[5]))
local cap = now + math.max(num(cfg.maxMs, tonumber(ARGV[6])), ttl)
exp = now + ttl
local keep = tonumber(ARGV[7])
redis.call('SET', V.t, now .. ':' .. exp .. ':' .. cap, 'PX', cap - now + keep)
redis.call('ZADD', K.active, exp, v)
redis.call('HINCRBY', K.stats, 'admitted', 1)
redis.call('HINCRBY', K.stats, 'passed', 1)
return {1, now, exp, ''}

