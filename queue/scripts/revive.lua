-- revive: a lost token record written back.
-- ARGV[1] = prefix: the room's key prefix, wr:{room}:
-- ARGV[2] = visitor: the visitor's id
-- ARGV[3] = notBefore: the token's notBefore (Unix ms)
-- ARGV[4] = expiresAt: its signed expiry (Unix ms)
-- ARGV[5] = touch: 1 when the call slides the expiry, else 0
-- ARGV[6] = idleMs: how far a touch pushes the expiry, in ms
-- ARGV[7] = ttlMs: an entry token's lifetime in ms (the cfg hash overrides it)
-- ARGV[8] = maxMs: the longest a token's expiry may slide, in ms (the cfg hash overrides it)
-- ARGV[9] = retentionMs: how long a record outlives its token, in ms
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
