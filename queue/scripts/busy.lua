-- busy: a visitor without a place asks to be let in on the spot, which a
-- room with activation busy does while it is under its threshold and
-- nobody waits (docs/rooms.md, Activation).
-- ARGV[1] = prefix: the room's key prefix, wr:{room}:
-- ARGV[2] = visitor: the visitor's id
-- ARGV[3] = tickMs: the tick, in ms
-- ARGV[4] = batch: the instance's batch, for a room without its own
-- ARGV[5] = ttlMs: the instance's token idle lifetime, in ms
-- ARGV[6] = maxMs: the instance's token cap, in ms
-- ARGV[7] = retentionMs: how long a record outlives its token, in ms
-- ARGV[8] = maxActive: the instance's max-active slots (0: none)
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
