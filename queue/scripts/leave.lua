-- leave: KEYS = queue; ARGV = prefix, visitor
-- Leaves the queue (or pre-queue, or the pool of a draw under way) or gives
-- back an unused token, which returns its seat. Returns 1 if anything went.
local p, v = ARGV[1], ARGV[2]
local n = redis.call('ZREM', KEYS[1], v) + redis.call('SREM', p .. 'pre', v) +
  redis.call('SREM', p .. 'drawpool', v) + forget_presence(p, v)
-- A visitor keyed by a draw under way but not placed yet (draw.lua).
local dseed = redis.call('HGET', p .. 'drawc', 'seed')
if dseed then
  n = n + redis.call('ZREM', p .. 'drawkey', redis.sha1hex(dseed .. ':' .. v) .. ':' .. v)
end
local had = redis.call('DEL', p .. 't:' .. v)
-- Frees the seat and the max-active slot only if this visitor's token still
-- holds them: a token that expired (and was swept) or was used up does not
-- free anything a second time.
redis.call('ZREM', p .. 'active', v)
if n + had > 0 then return 1 end
return 0
