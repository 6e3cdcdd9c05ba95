-- admit: the leaderless tick.
-- ARGV[1] = prefix: the room's key prefix, wr:{room}:
-- ARGV[2] = room: the room's name
-- ARGV[3] = channel: the room's channel (a leading '!': SPUBLISH, see publish.lua)
-- ARGV[4] = tickMs: the tick's length in ms
-- ARGV[5] = batch: the most visitors a tick admits (the cfg hash overrides it)
-- ARGV[6] = ttlMs: an entry token's lifetime in ms (the cfg hash overrides it)
-- ARGV[7] = maxMs: the longest a token's expiry may slide, in ms (the cfg hash overrides it)
-- ARGV[8] = retentionMs: how long a record outlives its token, in ms
-- ARGV[9] = seed: a random seed for the jitter and the draws
-- ARGV[10] = maxActive: the most live tokens at once, 0 for no limit (the cfg hash overrides it)
-- ARGV[11] = jitter: 1 to spread notBefore over the next tick, 0 not to
-- ARGV[12] = lotterySeed: a fresh 256-bit seed, used only by a random room whose seed Redis lost
-- ARGV[13] = lotteryCommit: the commitment of lotterySeed
-- The room's cfg hash overrides batch, ttlMs, maxMs and maxActive, and adds
-- paused, seats and opensAt, so a change applies from the next tick on every
-- instance.
-- The reply is read by admitReply in replies.go, field for field.
-- Returns {taken, tick, admitted, waiting, event, head, born, draw,
-- phead, paused, done}: taken = 0 when this tick was already taken by another caller
-- (nothing done); head is the ticket of the last visitor admitted (0 when
-- none, and under the lottery, which admits out of ticket order), phead
-- the same in the priority band (priority.lua; admitted in order before any
-- lottery), and born when the room's state began: instances remember
-- them, so that a Redis that lost the queue does not take back tickets
-- that were already let in (see retake.lua). draw is the size of the
-- lottery's draw after the tick (-1: the room is not random), which
-- instances remember for push; paused is 1 while the room is paused (the
-- tick loops then look at it less often). done lists the queue scores of
-- the tickets this tick was done with (admitted or dropped: mark_done in
-- done.lua), comma-separated, for the instance to remember.
local p, room, channel = ARGV[1], ARGV[2], ARGV[3]
local tick_ms = tonumber(ARGV[4])
local seed = tonumber(ARGV[9])
local jitter = ARGV[11] == '1'
local stats = K.stats
local active = K.active

local now = now_ms()
local tick = math.floor(now / tick_ms)
local last = tonumber(redis.call('GET', K.tick) or '-1')
if tick <= last then
  local size = -1
  if redis.call('HGET', K.cfg, 'method') == 'random' then size = redis.call('ZCARD', KEYS[1]) end
  local paused = 0
  if redis.call('HGET', K.cfg, 'paused') == '1' then paused = 1 end
  return {0, tick, 0, redis.call('ZCARD', KEYS[1]), '', 0, 0, size, 0, paused}
end
redis.call('SET', K.tick, tick, 'PX', 86400000)

local cfg = load_cfg(p)
seed = next_rand(seed)
-- A random room draws only with a committed seed (method.lua): the
-- one of ARGV[12] (with its commitment ARGV[13]) when Redis lost the
-- room's.
if cfg.method == 'random' then lottery_commit(p, ARGV[12], ARGV[13], now) end
-- A random room's log (lotlog.lua): begun, and walked while it learns who
-- waits, before anything else of the tick changes the queue.
local lot_walking = lot_walk(p, cfg, KEYS[1], now)
local draw_next, undrawn_left = maybe_open(p, cfg, now, seed, channel)
local seats = num(cfg.seats, 0)

-- Tokens that expired unused free their max-active slot and their seat.
-- A room announced sold out hears when seats are free again, whatever
-- freed them (expiry, leave, a give-back or more seats).
redis.call('ZREMRANGEBYSCORE', active, '-inf', now)
local slots = seats > 0 or cfg.strategy == 'max-active' or
  (cfg.strategy ~= 'fixed' and tonumber(ARGV[10]) > 0)
presence_sweep(p, cfg, KEYS[1], now, tonumber(ARGV[8]), slots, tick_ms)
if redis.call('HGET', stats, 'full') and not sold_out(p, cfg, now) then
  redis.call('HDEL', stats, 'full')
  publish(channel, '{"type":"config","room":"' .. room .. '","reason":"seats_released"}')
end

-- Visitors still in a draw's pool count as waiting: they will have places.
-- Those who came back wait ahead of the queue; those set aside as away
-- keep the room in the tick loop until they come back or are dropped.
local waiting = redis.call('ZCARD', KEYS[1]) + (undrawn_left or 0) + presence_ahead(p)
local aside = redis.call('ZCARD', K.away)
if cfg.paused == '1' or waiting == 0 then
  local paused = 0
  if cfg.paused == '1' then paused = 1 end
  return {1, tick, 0, waiting + aside, '', 0, num(redis.call('HGET', stats, 'born'), 0),
    lottery_size(cfg, KEYS[1], undrawn_left), 0, paused, table.concat(done_now, ',')}
end

local batch = num(cfg.batch, tonumber(ARGV[5]))
local ttl = num(cfg.ttlMs, tonumber(ARGV[6]))
local max_ttl = math.max(num(cfg.maxMs, tonumber(ARGV[7])), ttl)
local keep = tonumber(ARGV[8])
local max_active = tonumber(ARGV[10])
if cfg.strategy == 'max-active' then max_active = num(cfg.maxActive, max_active) end
if cfg.strategy == 'fixed' then max_active = 0 end
if cfg.method == 'passthrough' then batch, max_active = PASS_BATCH, 0 end
-- Tokens taken back unused are made up, a few a tick (presence.lua).
local rate_batch = batch
batch = batch + owed_extra(p, cfg, batch, now)
if max_active > 0 then
  batch = math.min(batch, max_active - redis.call('ZCARD', active))
end
if seats > 0 then
  batch = math.min(batch, seats - seats_held(p, now))
end
-- While a draw is under way, only the visitors drawn so far (and anyone
-- ahead of them) may go: nobody behind the pool goes before it.
if draw_next then
  batch = math.min(batch, redis.call('ZCOUNT', KEYS[1], '-inf', '(' .. draw_next))
end

local k = 0
local event = ''
local head, phead = 0, 0
if batch > 0 then
  local limit = 4 * batch + 64
  if draw_next then limit = batch end
  local popped
  if cfg.method == 'random' then
    -- The priority band goes before the lottery, in its order (priority.lua).
    local np = math.min(batch, redis.call('ZCOUNT', KEYS[1], '-inf', '(0'))
    popped = take(p, cfg, KEYS[1], np, now, np)
    local rest = batch - #popped / 2
    local lseed = lottery_seed(p)
    if rest > 0 and np < batch and not lot_walking and lseed then
      local drawn = take_random(p, cfg, KEYS[1], rest, now, limit, lseed, tick, draw_next)
      for i = 1, #drawn do popped[#popped + 1] = drawn[i] end
    end
  else
    popped = take(p, cfg, KEYS[1], batch, now, limit)
  end
  k = #popped / 2
  owed_paid(p, k - rate_batch, now)
  if k > 0 then
    for i = 2, #popped, 2 do
      mark_done(p, popped[i])
      local s, prio = ticket_of(tonumber(popped[i]))
      if prio == 1 then phead = math.max(phead, s) elseif cfg.method ~= 'random' then head = s end
    end
    if head > num(redis.call('HGET', stats, 'head'), 0) then redis.call('HSET', stats, 'head', head) end
    if phead > num(redis.call('HGET', stats, 'phead'), 0) then redis.call('HSET', stats, 'phead', phead) end
  end
  -- Stratified jitter over the next tick window: slot i of k gets a random
  -- moment inside [start + i*w/k, start + (i+1)*w/k), so notBefore is never
  -- in the past and consecutive batches never overlap.
  local start = (tick + 1) * tick_ms
  local parts, names = {}, {}
  for i = 0, k - 1 do
    seed = next_rand(seed)
    local nb = start
    if jitter then
      local lo = start + math.floor(i * tick_ms / k)
      local hi = start + math.floor((i + 1) * tick_ms / k)
      nb = lo + math.floor((seed / 2147483647) * (hi - lo))
    end
    local exp = nb + ttl
    local cap = nb + max_ttl
    local v = popped[2 * i + 1]
    -- v was popped from the queue just now: its key is built here.
    redis.call('SET', p .. 't:' .. v, nb .. ':' .. exp .. ':' .. cap, 'PX', cap - now + keep)
    redis.call('ZADD', active, exp, v)
    parts[#parts + 1] = '["' .. v .. '",' .. nb .. ',' .. exp .. ']'
    names[#names + 1] = v
  end
  admitted_seen(p, cfg, names, now)
  if k > 0 then
    redis.call('HINCRBY', stats, 'admitted', k)
    keep_while_used(p, cfg, max_ttl + keep)
    event = '{"type":"admit","room":"' .. room .. '","tick":' .. tick ..
      ',"count":' .. k .. ',"admitted":[' .. table.concat(parts, ',') .. ']}'
    publish(channel, event)
    if seats > 0 and sold_out(p, cfg, now) then
      redis.call('HSET', stats, 'full', 1)
      if waiting > k then
        publish(channel, '{"type":"sold_out","room":"' .. room .. '"}')
      end
    end
  end
end

-- The measured admission rate (visitors/s), smoothed over about 5 s of
-- ticks. Only ticks that left someone waiting measure it (a short queue
-- says nothing about the rate); pauses leave it alone.
if waiting > k then
  local alpha = math.min(1, tick_ms / 5000)
  local rate = num(redis.call('HGET', stats, 'rate'), -1)
  local inst = k * 1000 / tick_ms
  if rate < 0 then rate = inst else rate = rate + alpha * (inst - rate) end
  redis.call('HSET', stats, 'rate', string.format('%.4f', rate))
end
return {1, tick, k, waiting - k + aside, event, head, num(redis.call('HGET', stats, 'born'), 0),
  lottery_size(cfg, KEYS[1], undrawn_left), phead, 0, table.concat(done_now, ',')}
