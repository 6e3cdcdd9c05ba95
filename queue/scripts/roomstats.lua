-- roomstats: the room's figures.
-- ARGV[1] = prefix: the room's key prefix, wr:{room}:
-- The reply is read by decodeRoomStats in replies.go, field for field.
-- Returns {waiting, prequeue, activeTokens, admittedTotal, seatsHeld,
-- rate*1000, priority}. The pre-queue counts the visitors of a draw under
-- way not drawn yet; priority counts the waiting (or held until opening)
-- in the priority band, who are also in waiting or prequeue.
local p = ARGV[1]
local now = now_ms()
local st = redis.call('HMGET', K.stats, 'admitted', 'rate')
return {
  redis.call('ZCARD', KEYS[1]),
  redis.call('SCARD', K.pre) + redis.call('SCARD', K.drawpool) + redis.call('ZCARD', K.ppre),
  redis.call('ZCOUNT', K.active, '(' .. now, '+inf'),
  num(st[1], 0), seats_held(p, now), math.floor(num(st[2], 0) * 1000),
  redis.call('ZCOUNT', KEYS[1], '-inf', '(0') + redis.call('ZCARD', K.ppre),
}
