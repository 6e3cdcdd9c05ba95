-- join: KEYS = seq, queue, token; ARGV = visitor
-- Returns {code, a, b, new}: code 1 waiting (a = 0-based rank),
-- 2 admitted (a = notBefore, b = expiresAt). new = 1 when a ticket was taken.
local v = ARGV[1]
local nb, exp = read_token(KEYS[3])
if nb then
  if now_ms() < exp then return {2, nb, exp, 0} end
  redis.call('DEL', KEYS[3]) -- expired unused: a new ticket at the back
end
local r = redis.call('ZRANK', KEYS[2], v)
if r then return {1, r, 0, 0} end
local s = redis.call('INCR', KEYS[1])
redis.call('ZADD', KEYS[2], 'NX', s, v)
return {1, redis.call('ZRANK', KEYS[2], v), 0, 1}
