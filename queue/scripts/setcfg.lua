-- setcfg: the room's settings replaced.
-- ARGV[1] = prefix: the room's key prefix, wr:{room}:
-- ARGV[2] = room: the room's name
-- ARGV[3] = channel: the room's channel (a leading '!': SPUBLISH, see publish.lua)
-- ARGV[4] = version: the settings version the caller read ("": any)
-- ARGV[5..] = settings: field, value, field, value … of the cfg hash
-- Replaces the room's settings if their version is still the one the
-- caller read ("" = whatever it is), bumps the version and tells every
-- instance's hub (which then reconciles the room's visitors, e.g. for
-- paused). A changed message to the waiting goes out as an event of its
-- own, carrying the text, so hubs show it without a read. A change of
-- method into or out of random starts or ends the lottery's log
-- (lotlog.lua). Returns 1 when written, 0 when another writer came first.
local p = ARGV[1]
local key = K.cfg
local v = tonumber(redis.call('HGET', key, 'v') or '0')
if ARGV[4] ~= '' and tonumber(ARGV[4]) ~= v then return 0 end
local old_msg = redis.call('HGET', key, 'message') or ''
local old_method = redis.call('HGET', key, 'method') or 'fifo'
redis.call('DEL', key)
redis.call('HSET', key, 'v', v + 1)
if #ARGV > 4 then redis.call('HSET', key, unpack(ARGV, 5)) end
lot_method(p, old_method, redis.call('HGET', key, 'method') or 'fifo')
publish(ARGV[3], '{"type":"config","room":"' .. ARGV[2] .. '"}')
local new_msg = redis.call('HGET', key, 'message') or ''
if new_msg ~= old_msg then
  publish(ARGV[3], cjson.encode({type = 'message', room = ARGV[2], text = new_msg, v = v + 1}))
end
return 1
