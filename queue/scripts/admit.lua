-- admit: the leaderless tick.
-- KEYS = queue, tick, active, channel
-- ARGV = room, token key prefix, tickMs, batch, ttlMs, retentionMs, seed, maxActive, jitter (1/0)
-- Returns {taken, tick, admitted, waiting, event}: taken = 0 when this tick was
-- already taken by another caller (nothing done).
local room, prefix = ARGV[1], ARGV[2]
local tick_ms = tonumber(ARGV[3])
local batch = tonumber(ARGV[4])
local ttl = tonumber(ARGV[5])
local keep = tonumber(ARGV[6])
local seed = tonumber(ARGV[7])
local max_active = tonumber(ARGV[8])
local jitter = ARGV[9] == '1'

local now = now_ms()
local tick = math.floor(now / tick_ms)
local last = tonumber(redis.call('GET', KEYS[2]) or '-1')
if tick <= last then return {0, tick, 0, redis.call('ZCARD', KEYS[1]), ''} end
redis.call('SET', KEYS[2], tick, 'PX', 86400000)

if max_active > 0 then
  redis.call('ZREMRANGEBYSCORE', KEYS[3], '-inf', now)
  local free = max_active - redis.call('ZCARD', KEYS[3])
  if free < batch then batch = free end
end
if batch <= 0 then return {1, tick, 0, redis.call('ZCARD', KEYS[1]), ''} end

local popped = redis.call('ZPOPMIN', KEYS[1], batch)
local k = #popped / 2
if k == 0 then return {1, tick, 0, 0, ''} end

-- Stratified jitter over the next tick window: slot i of k gets a random
-- moment inside [start + i*w/k, start + (i+1)*w/k), so notBefore is never in
-- the past and consecutive batches never overlap.
local start = (tick + 1) * tick_ms
local parts = {}
for i = 0, k - 1 do
  seed = (seed * 16807) % 2147483647
  local lo = start + math.floor(i * tick_ms / k)
  local hi = start + math.floor((i + 1) * tick_ms / k)
  local nb = start -- without jitter the whole batch is valid at once (for comparison)
  if jitter then nb = lo + math.floor((seed / 2147483647) * (hi - lo)) end
  local exp = nb + ttl
  local v = popped[2 * i + 1]
  redis.call('SET', prefix .. v, nb .. ':' .. exp, 'PX', exp - now + keep)
  redis.call('ZADD', KEYS[3], exp, v)
  parts[#parts + 1] = '["' .. v .. '",' .. nb .. ',' .. exp .. ']'
end
local event = '{"type":"admit","room":"' .. room .. '","tick":' .. tick ..
  ',"count":' .. k .. ',"admitted":[' .. table.concat(parts, ',') .. ']}'
redis.call('PUBLISH', KEYS[4], event)
return {1, tick, k, redis.call('ZCARD', KEYS[1]), event}
