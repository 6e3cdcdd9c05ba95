-- leave: a visitor leaves.
-- ARGV[1] = prefix: the room's key prefix, wr:{room}:
-- ARGV[2] = visitor: the visitor's id
-- Leaves the queue (or a pre-queue, priority or public, or the pool of a
-- draw under way) or gives back an unused token, which returns its seat.
-- Returns 1 if anything went.
local p, v = ARGV[1], ARGV[2]
-- A ticket given up stays given up: retake.lua must not take it back.
local sc = redis.call('ZSCORE', KEYS[1], v)
if sc then
  redis.call('SET', V.left, sc, 'PX', 86400000)
  mark_done(p, sc) -- for as long as the room's state lasts (done.lua)
end
local held, tk = forget_presence(p, v)
local n = redis.call('ZREM', KEYS[1], v) + redis.call('SREM', K.pre, v) + redis.call('ZREM', K.ppre, v) +
  redis.call('SREM', K.drawpool, v) + held
-- The lottery's log (lotlog.lua): the ticket left the draw.
if (sc or tk) and lot_begin(p, redis.call('HGET', K.cfg, 'method')) then
  lot_tickets('remove', 'leave', {sc or tk})
end
-- A visitor keyed by a draw under way but not placed yet (draw.lua).
local dseed = redis.call('HGET', K.drawc, 'seed')
if dseed then
  n = n + redis.call('ZREM', K.drawkey, redis.sha1hex(dseed .. ':' .. v) .. ':' .. v)
end
local nb, _, cap = read_token(V.t)
local had = redis.call('DEL', V.t)
-- A token given back is gone for good: revive.lua must not write it back.
if nb then
  local left = cap - now_ms()
  if left > 0 then redis.call('SET', V.gone, nb, 'PX', left) end
end
-- Frees the seat and the max-active slot only if this visitor's token still
-- holds them: a token that expired (and was swept) or was used up does not
-- free anything a second time.
redis.call('ZREM', K.active, v)
if n + had > 0 then return 1 end
return 0
