-- setcfg: KEYS = queue; ARGV = prefix, room, channel, version, field, value, ...
-- Replaces the room's settings if their version is still the one the
-- caller read ("" = whatever it is), bumps the version and tells every
-- instance's hub (which then reconciles the room's visitors, e.g. for
-- paused). Returns 1 when written, 0 when another writer came first.
local p = ARGV[1]
local key = p .. 'cfg'
local v = tonumber(redis.call('HGET', key, 'v') or '0')
if ARGV[4] ~= '' and tonumber(ARGV[4]) ~= v then return 0 end
redis.call('DEL', key)
redis.call('HSET', key, 'v', v + 1)
if #ARGV > 4 then redis.call('HSET', key, unpack(ARGV, 5)) end
redis.call('PUBLISH', ARGV[3], '{"type":"config","room":"' .. ARGV[2] .. '"}')
return 1
