-- retake: KEYS = queue
-- ARGV = prefix, room, channel, head, headBorn, seqFloor, nCfg, then nCfg
--        settings field/value pairs (nCfg = -1: none remembered), then
--        visitor, seq, issuedAt for each ticket to take back.
-- Puts back what an instance remembers of a room whose state Redis lost (a
-- restart without persistence, or a failover that lost the last writes):
-- the settings when they are missing, the last admitted ticket and the
-- ticket counter, and the places of visitors who come back with a signed
-- ticket, each at its original score. Every part only ever raises or fills
-- in, so any number of instances may call it at once, any number of times.
-- Returns {settingsRestored, retaken, removed}.
local p, room, channel = ARGV[1], ARGV[2], ARGV[3]
local head, head_born, seq_floor = tonumber(ARGV[4]), tonumber(ARGV[5]), tonumber(ARGV[6])
local ncfg = tonumber(ARGV[7])
local first = 8 + math.max(ncfg, 0) * 2
local now = now_ms()
local stats = p .. 'stats'
local retook = p .. 'retook'

-- Settings first: nothing of this room may be admitted under defaults.
local restored = 0
if ncfg >= 0 and redis.call('EXISTS', p .. 'cfg') == 0 then
  redis.call('HSET', p .. 'cfg', 'v', 1)
  if ncfg > 0 then redis.call('HSET', p .. 'cfg', unpack(ARGV, 8, first - 1)) end
  restored = 1
  publish(channel, '{"type":"config","room":"' .. room .. '"}')
end

-- born is when this room's state began (join sets it): a ticket taken
-- before it was taken from state that is gone.
local born = tonumber(redis.call('HGET', stats, 'born'))
if not born then
  born = now
  redis.call('HSET', stats, 'born', born)
end
-- floor: the last ticket admitted before the state was lost; admitted: the
-- last one admitted since.
local floor = num(redis.call('HGET', stats, 'floor'), 0)
local admitted = num(redis.call('HGET', stats, 'head'), 0)
if head > 0 then
  if head_born ~= born then
    if head > floor then
      floor = head
      redis.call('HSET', stats, 'floor', floor)
    end
  elseif head > admitted then
    -- Admissions of this state that Redis lost (a failover): their
    -- visitors were told, and must not come in twice.
    admitted = head
    redis.call('HSET', stats, 'head', head)
  end
end

-- Visitors in the queue who were already let in: tickets at or under the
-- floor (taken back by an instance that knew less), and tickets at or
-- under the admitted head that are no late comer taken back.
local removed = 0
local low = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', math.max(floor, admitted))
for _, v in ipairs(low) do
  local s = tonumber(redis.call('ZSCORE', KEYS[1], v))
  if s <= floor or not redis.call('HGET', retook, v) then
    removed = removed + redis.call('ZREM', KEYS[1], v)
  end
end

local retaken, top = 0, 0
for i = first, #ARGV, 3 do
  local v, s, iat = ARGV[i], tonumber(ARGV[i + 1]), tonumber(ARGV[i + 2])
  local lost
  if iat < born then lost = s > floor else lost = s > admitted end
  if lost and tonumber(redis.call('GET', p .. 'left:' .. v) or '') == s then lost = false end
  if lost and not redis.call('ZSCORE', KEYS[1], v) and redis.call('EXISTS', p .. 't:' .. v) == 0
      and redis.call('SISMEMBER', p .. 'pre', v) == 0 and redis.call('SISMEMBER', p .. 'drawpool', v) == 0
      and not redis.call('ZSCORE', p .. 'away', v) and not redis.call('ZSCORE', p .. 'back', v)
      and redis.call('EXISTS', p .. 'dropped:' .. v) == 0 then
    redis.call('ZADD', KEYS[1], 'NX', s, v)
    redis.call('HSET', retook, v, s)
    redis.call('PEXPIRE', retook, 86400000)
    retaken = retaken + 1
  end
  if s > top then top = s end
end

-- New tickets go behind every ticket that was ever given.
local want = math.max(seq_floor, top, floor, admitted)
if want > num(redis.call('GET', p .. 'seq'), 0) then redis.call('SET', p .. 'seq', want) end
return {restored, retaken, removed}
