-- restore: a spent token given back.
-- ARGV[1] = prefix: the room's key prefix, wr:{room}:
-- ARGV[2] = visitor: the visitor's id
-- ARGV[3] = notBefore: the token's notBefore (Unix ms)
-- ARGV[4] = expiresAt: its expiry (Unix ms)
-- ARGV[5] = cap: the latest its expiry may slide to (Unix ms)
-- ARGV[6] = retentionMs: how long a record outlives its token, in ms
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
