-- The opening of a room with a pre-queue, and its draw. Prelude, after
-- random.lua and after draw.lua and lotlog.lua, whose functions it calls.

-- The pre-queue is drawn in slices so that no script holds Redis for long,
-- however many visitors waited for the opening. At opening (opensAt has
-- come, or was cleared while visitors wait in the pre-queue: that opens the
-- room now, with the same draw) the pre-queue set becomes the draw pool
-- and the next n tickets are reserved for its n members, so everyone who
-- joins from then on stands behind all of them.
-- Each call (join, status, the tick) then moves one slice: first keying
-- the pool's visitors with the room's committed seed, then placing them
-- in key order on the reserved tickets (draw.lua says how: a fair random
-- permutation that anyone can recompute after opening). The draw hash
-- holds the next ticket and the moment of opening; it is gone when every
-- visitor is placed, and then an open event on channel tells the hubs
-- that every pre-queued visitor has a place.
-- A slice of 1,000 holds Redis for about 8 ms on a busy 2-core machine; at
-- most one slice every 20 ms keeps Redis free for everything else more than
-- half of the time while a big draw runs (1,000,000 visitors in about
-- 40 s, keying then placing; admission goes on with those placed).
local DRAW_SLICE = 1000
local DRAW_GAP_MS = 20
local ZADD_CHUNK = 500 -- members per ZADD call (Lua's stack bounds unpack)

-- Returns the next ticket of a draw under way and how many are still in
-- the pool, or nil when no draw is under way. Visitors with a ticket at or
-- above the next one (those who joined after opening) stand behind every
-- visitor still in the pool.
local function maybe_open(p, cfg, now, seed, channel)
  local draw, pool = K.draw, K.drawpool
  -- No draw under way and nobody held for one: one command tells, on
  -- every join and status of a room that is not opening.
  if redis.call('EXISTS', draw, K.ppre, K.pre) == 0 then return nil end
  local st = redis.call('HMGET', draw, 'next', 'last')
  local nx = tonumber(st[1])
  local since = now - num(st[2], 0)
  if nx and since >= 0 and since < DRAW_GAP_MS then
    return nx, redis.call('SCARD', pool)
  end
  if not nx then
    local opens = num(cfg.opensAt, 0)
    if opens > now then return nil end
    -- Priority visitors held until opening take their places first, in
    -- the order they joined (they hold their tickets since then), ahead
    -- of the draw's.
    if redis.call('EXISTS', K.ppre) == 1 then
      local pp = redis.call('ZRANGE', K.ppre, 0, -1, 'WITHSCORES')
      for i = 1, #pp, 2 * ZADD_CHUNK do
        local args, ts = {}, {}
        for j = i, math.min(i + 2 * ZADD_CHUNK - 1, #pp), 2 do
          args[#args + 1] = pp[j + 1]
          args[#args + 1] = pp[j]
          ts[#ts + 1] = pp[j + 1]
        end
        redis.call('ZADD', K.q, 'NX', unpack(args))
        lot_tickets('add', 'open', ts)
      end
      redis.call('DEL', K.ppre)
    end
    local n = redis.call('SCARD', K.pre)
    if n == 0 then return nil end
    redis.call('RENAME', K.pre, pool)
    nx = redis.call('INCRBY', K.seq, n) - n + 1
    if opens == 0 then opens = now end
    draw_start(p, seed .. ':' .. now, opens, n)
    redis.call('HSET', draw, 'next', nx, 'at', opens, 'n', n)
  end
  -- First every visitor of the pool is keyed (draw.lua), a slice per
  -- call; then the keyed are placed in key order, a slice per call.
  -- Tickets once given never change, so the order of those placed is fixed.
  -- A call does at most DRAW_SLICE visitors' worth of either, so a small
  -- draw is keyed and placed at once.
  local members = redis.call('SPOP', pool, DRAW_SLICE)
  if #members > 0 then
    draw_key_slice(p, redis.call('HGET', K.drawc, 'seed'), members, ZADD_CHUNK)
  end
  local budget = DRAW_SLICE - #members
  local unkeyed = redis.call('SCARD', pool)
  if unkeyed > 0 or budget <= 0 then
    redis.call('HSET', draw, 'last', now)
    return nx, unkeyed + redis.call('ZCARD', K.drawkey)
  end
  local keyed = redis.call('ZPOPMIN', K.drawkey, budget)
  local placed = #keyed / 2
  for i = 1, placed, ZADD_CHUNK do
    local args, ts = {}, {}
    for j = i, math.min(i + ZADD_CHUNK - 1, placed) do
      args[#args + 1] = nx + j - 1
      args[#args + 1] = string.sub(keyed[2 * j - 1], 42)
      ts[#ts + 1] = nx + j - 1
    end
    redis.call('ZADD', K.q, 'NX', unpack(args))
    lot_tickets('add', 'open', ts)
  end
  nx = nx + placed
  local left = redis.call('ZCARD', K.drawkey)
  if left > 0 then
    redis.call('HSET', draw, 'next', nx, 'last', now)
    return nx, left
  end
  draw_done(p)
  local n = redis.call('HGET', draw, 'n')
  redis.call('DEL', draw)
  publish(channel, '{"type":"open","count":' .. n .. '}')
  return nil
end

-- When a visitor is still in the pool of a draw under way: the moment of
-- opening (a pre-queue answer), else nil.
local function undrawn(p, v)
  if redis.call('SISMEMBER', K.drawpool, v) == 0 and
    not redis.call('ZSCORE', K.drawlist, v) then return nil end
  return num(redis.call('HGET', K.draw, 'at'), 0)
end
