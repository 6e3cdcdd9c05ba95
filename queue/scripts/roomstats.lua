-- roomstats: KEYS = queue; ARGV = prefix
-- Returns {waiting, prequeue, activeTokens, admittedTotal, seatsHeld,
-- rate*1000, priority}. The pre-queue counts the visitors of a draw under
-- way not drawn yet; priority counts the waiting (or held until opening)
-- in the priority band, who are also in waiting or prequeue.
local p = ARGV[1]
local now = now_ms()
local st = redis.call('HMGET', p .. 'stats', 'admitted', 'rate')
return {
  redis.call('ZCARD', KEYS[1]),
  redis.call('SCARD', p .. 'pre') + redis.call('SCARD', p .. 'drawpool') + redis.call('ZCARD', p .. 'ppre'),
  redis.call('ZCOUNT', p .. 'active', '(' .. now, '+inf'),
  num(st[1], 0), seats_held(p, now), math.floor(num(st[2], 0) * 1000),
  redis.call('ZCOUNT', KEYS[1], '-inf', '(0') + redis.call('ZCARD', p .. 'ppre'),
}
