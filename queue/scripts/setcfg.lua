-- setcfg: KEYS = queue; ARGV = prefix, room, channel, field, value, ...
-- Replaces the room's settings and tells every instance's hub (which then
-- reconciles the room's visitors, e.g. for paused).
local p = ARGV[1]
redis.call('DEL', p .. 'cfg')
if #ARGV > 3 then redis.call('HSET', p .. 'cfg', unpack(ARGV, 4)) end
redis.call('PUBLISH', ARGV[3], '{"type":"config","room":"' .. ARGV[2] .. '"}')
return 1
