-- restore: KEYS = queue; ARGV = prefix, visitor, notBefore, expiresAt, cap, retentionMs
-- Gives back a token that was used up by a request that then failed on the
-- protected side, unless the visitor holds another record by now.
local p, v = ARGV[1], ARGV[2]
local nb, exp, cap = tonumber(ARGV[3]), tonumber(ARGV[4]), tonumber(ARGV[5])
local now = now_ms()
if now >= exp then return 0 end
local ok = redis.call('SET', p .. 't:' .. v, nb .. ':' .. exp .. ':' .. cap, 'NX', 'PX', cap - now + tonumber(ARGV[6]))
if not ok then return 0 end
redis.call('ZADD', p .. 'active', exp, v)
return 1
