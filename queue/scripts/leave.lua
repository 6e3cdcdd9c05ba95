-- leave: KEYS = queue; ARGV = prefix, visitor
-- Leaves the queue (or pre-queue) or gives back an unused token, which
-- returns its seat. Returns 1 if anything went.
local p, v = ARGV[1], ARGV[2]
local n = redis.call('ZREM', KEYS[1], v) + redis.call('SREM', p .. 'pre', v)
local had = redis.call('DEL', p .. 't:' .. v)
if had == 1 then
  redis.call('ZREM', p .. 'active', v)
  local cfg = load_cfg(p)
  if num(cfg.seats, 0) > 0 then redis.call('HINCRBY', p .. 'stats', 'granted', -1) end
end
if n + had > 0 then return 1 end
return 0
