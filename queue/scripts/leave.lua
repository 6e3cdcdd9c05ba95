-- leave: KEYS = queue, token, active; ARGV = visitor
-- Leaves the queue or gives back an unused token. Returns 1 if anything went.
local n = redis.call('ZREM', KEYS[1], ARGV[1])
n = n + redis.call('DEL', KEYS[2])
redis.call('ZREM', KEYS[3], ARGV[1])
if n > 0 then return 1 end
return 0
