-- flush: one instance's counts of one room for one hour, written at once.
-- KEYS[1] the hour's hash (fields "<minute of hour>:<name>")
-- KEYS[2] the room's report base hash: the queue's presence totals and
--         sold-out flag as last seen, so that each change counts once
--         whichever instance sees it
-- KEYS[3] the day's hash of joins waiting for their admission
-- KEYS[4] the queue's stats hash (read only)
-- ARGV[1] retention of KEYS[1] and KEYS[2] (s), ARGV[2] that of KEYS[3]
-- ARGV[3] the minute of the hour that presence and sold-out changes seen
--         now count in ('' to look at neither)
-- ARGV[4] n: field/increment pairs, ARGV[5] m: field/value pairs kept at
--         their maximum, then those, then visitor/join pairs for KEYS[3]
local h = KEYS[1]
local ni, nm = tonumber(ARGV[4]), tonumber(ARGV[5])
local i = 6
for _ = 1, ni do
  redis.call('HINCRBY', h, ARGV[i], ARGV[i + 1])
  i = i + 2
end
for _ = 1, nm do
  local cur = tonumber(redis.call('HGET', h, ARGV[i]) or '-1')
  if tonumber(ARGV[i + 1]) > cur then redis.call('HSET', h, ARGV[i], ARGV[i + 1]) end
  i = i + 2
end
if i <= #ARGV then
  -- Chunks of 500 pairs: Lua's stack bounds unpack.
  while i <= #ARGV do
    local args = {}
    for j = i, math.min(i + 999, #ARGV) do args[#args + 1] = ARGV[j] end
    redis.call('HSET', KEYS[3], unpack(args))
    i = i + #args
  end
  redis.call('EXPIRE', KEYS[3], ARGV[2])
end
local m = ARGV[3]
if m ~= '' then
  local st = redis.call('HMGET', KEYS[4], 'skipped', 'dropped', 'full')
  local base = redis.call('HMGET', KEYS[2], 'skipped', 'dropped', 'full')
  local names = {'away', 'dropped'}
  local fields = {'skipped', 'dropped'}
  for k = 1, 2 do
    local t = tonumber(st[k] or '0')
    local b = tonumber(base[k] or '')
    -- First sight: history before it is not this report's.
    if b and t > b then redis.call('HINCRBY', h, m .. ':l.' .. names[k], t - b) end
    if b ~= t then redis.call('HSET', KEYS[2], fields[k], t) end
  end
  if st[3] and not base[3] then
    local now = redis.call('TIME')
    local ms = tonumber(now[1]) * 1000 + math.floor(tonumber(now[2]) / 1000)
    local cur = tonumber(redis.call('HGET', h, m .. ':so') or '')
    if not cur or ms < cur then redis.call('HSET', h, m .. ':so', ms) end
    redis.call('HSET', KEYS[2], 'full', ms)
  elseif base[3] and not st[3] then
    redis.call('HDEL', KEYS[2], 'full')
  end
  redis.call('EXPIRE', KEYS[2], ARGV[1])
end
redis.call('EXPIRE', h, ARGV[1])
return 1
