-- commit: the room's next draw's seed.
-- ARGV[1] = prefix: the room's key prefix, wr:{room}:
-- ARGV[2] = seed: a new secret seed
-- ARGV[3] = commitment: its SHA-256, published
-- Stores a new secret seed and its commitment for the room's next draw,
-- unless one is stored and not revealed yet (draw.lua). Returns 1 if
-- stored.
local c = K.drawc
if redis.call('HEXISTS', c, 'seed') == 1 and redis.call('HEXISTS', c, 'openedAt') == 0 then
  return 0
end
redis.call('DEL', c)
redis.call('HSET', c, 'seed', ARGV[2], 'commit', ARGV[3], 'at', now_ms())
return 1
