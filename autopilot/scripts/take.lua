-- take: the room's autopilot decision of this second (by Redis TIME),
-- taken by the first caller, as admit.lua takes a tick.
-- KEYS[1] = wr:{room}:ap: the room's autopilot state hash
-- ARGV[1] = prefix: the room's key prefix, wr:{room}:
-- ARGV[2] = window: how many whole seconds before this one to read
-- ARGV[3] = ttl: seconds the state is kept after the last decision
-- Returns {taken (1 or 0), now (unix second), the state's field/value
-- pairs, the window's field/count pairs}: the window only when taken.
local t = redis.call('TIME')
local now = tonumber(t[1])
local last = tonumber(redis.call('HGET', KEYS[1], 'sec') or '0')
if last >= now then
  return {0, now, redis.call('HGETALL', KEYS[1]), {}}
end
redis.call('HSET', KEYS[1], 'sec', now)
redis.call('EXPIRE', KEYS[1], ARGV[3])
local sums, order = {}, {}
for s = now - tonumber(ARGV[2]), now - 1 do
  local h = redis.call('HGETALL', ARGV[1] .. 'ap:s:' .. s)
  for i = 1, #h, 2 do
    if not sums[h[i]] then
      sums[h[i]] = 0
      order[#order + 1] = h[i]
    end
    sums[h[i]] = sums[h[i]] + tonumber(h[i + 1])
  end
end
local w = {}
for _, f in ipairs(order) do
  w[#w + 1] = f
  w[#w + 1] = tostring(sums[f])
end
return {1, now, redis.call('HGETALL', KEYS[1]), w}
