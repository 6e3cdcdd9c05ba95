-- Presence: who is still there. Prelude shared by every script (after
-- done.lua).
--
-- Keys of the room (prefix p):
--   seen    zset  visitor -> last sign of life (ms): a join, a poll, a push
--                 connection opening or closing, and every awayAfter/3
--                 while one is open (the hubs write those in batches)
--   aseen   zset  admitted visitors -> last sign of life; a token whose
--                 visitor is gone for awayAfter gives its slot back
--   away    zset  visitors set aside -> last sign of life: their turn came
--                 (or their slot was taken back) while they were away
--   awayt   hash  visitor -> ticket, for those in away (0 = had a token)
--   back    zset  visitors who came back from away -> ticket: admitted
--                 first, in the next tick
--   dropped:V str V was away for dropAfter and lost the place; a status
--                 says expired (reason away) until it joins again
--   owed    zset  tokens taken back unused (V:notBefore) -> when: each is
--                 an admission the protected system never saw, made up by
--                 one more admission in a later tick (owed_extra)
--   closed  zset  visitors whose last push connection closed -> when (a
--                 hub writes it); any other sign of life (a poll, a join,
--                 a connection open) takes them out. One still in it when
--                 its turn comes is set aside as if away, though not yet
--                 unseen for awayAfter: nobody knows it is there, and
--                 its turn is not lost (it goes first as soon as it shows
--                 up, as one set aside does), while a turn given to it
--                 would likely be capacity unused
-- A visitor the room never saw (it joined before presence was on, or came
-- through the pre-queue and was forgotten meanwhile) counts as present.
local AWAY_MS = 60000
local DROP_MS = 600000
local SWEEP = 200 -- visitors looked at per sweep, so a tick stays short

local function presence_on(cfg) return cfg.presence ~= 'off' end
local function away_ms(cfg) return num(cfg.awayMs, AWAY_MS) end
local function drop_ms(cfg) return num(cfg.dropMs, DROP_MS) end

-- Per-minute counters: stats fields F:m (minute number), F:c (count in
-- that minute), F:p (count in the minute before), F (total).
local function bump(p, f, n, now)
  if n <= 0 then return end
  local st = K.stats
  local minute = math.floor(now / 60000)
  local m = redis.call('HMGET', st, f .. ':m', f .. ':c')
  local at, c = num(m[1], minute), num(m[2], 0)
  if at ~= minute then
    local prev = 0
    if at == minute - 1 then prev = c end
    redis.call('HSET', st, f .. ':p', prev)
    c = 0
  end
  redis.call('HSET', st, f .. ':m', minute, f .. ':c', c + n)
  redis.call('HINCRBY', st, f, n)
end

-- The count over the last 60 s, the minute before weighed by how much of
-- it the window still covers.
local function per_minute(p, f, now)
  local m = redis.call('HMGET', K.stats, f .. ':m', f .. ':c', f .. ':p')
  local minute = math.floor(now / 60000)
  local frac = (now % 60000) / 60000
  local at, c, prev = num(m[1], -1), num(m[2], 0), num(m[3], 0)
  if at == minute then return math.floor(c + prev * (1 - frac) + 0.5) end
  if at == minute - 1 then return math.floor(c * (1 - frac) + 0.5) end
  return 0
end

-- seen_many records a sign of life of each visitor in vs now; those set
-- aside as away come back to the front. Batched: one ZADD per 500.
-- closing: the sign is the close of their last push connection (they
-- enter closed), else any other (they leave it).
local function seen_many(p, cfg, vs, now, closing)
  if not presence_on(cfg) or #vs == 0 then return end
  local from = 1
  if #vs == 1 then
    -- One visitor (a join, a poll): the same commands, without the
    -- tables of a batch.
    local v = vs[1]
    redis.call('ZADD', K.seen, now, v)
    redis.call('ZADD', K.aseen, 'XX', now, v)
    if closing then redis.call('ZADD', K.closed, now, v) else redis.call('ZREM', K.closed, v) end
    local tk = redis.call('HGET', K.awayt, v)
    if tk then
      redis.call('ZREM', K.away, v)
      redis.call('HDEL', K.awayt, v)
      redis.call('ZADD', K.back, tk, v)
      lot_tickets('back', nil, {tk})
    end
    from = 2
  end
  for i = from, #vs, ZADD_CHUNK do
    local args, names = {}, {}
    for j = i, math.min(i + ZADD_CHUNK - 1, #vs) do
      args[#args + 1] = now
      args[#args + 1] = vs[j]
      names[#names + 1] = vs[j]
    end
    redis.call('ZADD', K.seen, unpack(args))
    redis.call('ZADD', K.aseen, 'XX', unpack(args))
    if closing then
      redis.call('ZADD', K.closed, unpack(args))
    else
      redis.call('ZREM', K.closed, unpack(names))
    end
    local tk = redis.call('HMGET', K.awayt, unpack(names))
    local came = {}
    for j = 1, #names do
      if tk[j] then
        redis.call('ZREM', K.away, names[j])
        redis.call('HDEL', K.awayt, names[j])
        redis.call('ZADD', K.back, tk[j], names[j])
        came[#came + 1] = tk[j]
      end
    end
    lot_tickets('back', nil, came)
  end
  if next(cfg) == nil then
    -- As keep_while_used (idle.lua): pushed at most once every
    -- KEEP_EVERY_MS; a set this call made has no expiry yet (PTTL -1).
    if redis.call('PTTL', K.seen) < idle_ms - KEEP_EVERY_MS then redis.call('PEXPIRE', K.seen, idle_ms) end
    if closing then redis.call('PEXPIRE', K.closed, idle_ms) end
  end
end

-- unconfirmed reports whether v, last seen at t (ms, or nil: never seen),
-- is not to be admitted now: unseen since cutoff, or its push connection
-- closed and nothing came since.
local function unconfirmed(p, v, t, cutoff, closed)
  if not t then return false end
  if t < cutoff then return true end
  if closed == nil then closed = redis.call('ZSCORE', K.closed, v) end
  return closed ~= false and closed ~= nil
end

-- The place of v among those who came back or are set aside (0-based),
-- or nil. Those ahead of the whole queue.
local function presence_place(p, v)
  local r = redis.call('ZRANK', K.back, v)
  if r then return r end
  if redis.call('ZSCORE', K.away, v) then
    return redis.call('ZCARD', K.back)
  end
  return nil
end

-- How many stand ahead of the queue: those who came back.
local function presence_ahead(p)
  return redis.call('ZCARD', K.back)
end

-- Whether v lost its place for being away (and has not joined since).
local function dropped_away(p, v)
  return redis.call('EXISTS', p .. 'dropped:' .. v) == 1
end

-- forget_presence takes v out of every presence key (a leave); it returns
-- 1 if v held a place there, and the ticket of that place (the lottery's
-- log).
local function forget_presence(p, v)
  local tk = redis.call('HGET', K.awayt, v) or redis.call('ZSCORE', K.back, v)
  local n = redis.call('ZREM', K.away, v) + redis.call('ZREM', K.back, v)
  redis.call('HDEL', K.awayt, v)
  redis.call('ZREM', K.seen, v)
  redis.call('ZREM', K.aseen, v)
  redis.call('ZREM', K.closed, v)
  redis.call('DEL', p .. 'dropped:' .. v)
  if n > 0 then return 1, tk end
  return 0
end

-- presence_sweep runs at the start of a tick. With presence on, visitors
-- unseen for dropAfter lose their place (queue, away or back; the
-- pre-queue and a draw's pool keep theirs: they may come at opening), and
-- admitted visitors unseen for awayAfter give back their unused token and
-- wait as away: when slots count (max-active or seats) every such token,
-- to free its slot; else (fixed) only the token of a visitor last seen
-- before its admission, who never heard of it (a visitor that did may be
-- on the protected site, whose pages need not check the token at once).
-- Each token taken back is owed (see owed_extra). With presence off,
-- those set aside go back to the front. Bounded per tick. keep is how
-- long the gone marker answers; tick_ms the tick, which bounds when a
-- token was admitted: at least a tick before its notBefore, at most two.
local function presence_sweep(p, cfg, q, now, keep, slots, tick_ms)
  if not presence_on(cfg) then
    local a = redis.call('ZRANGE', K.away, 0, SWEEP - 1)
    local came = {}
    for _, v in ipairs(a) do
      local tk = redis.call('HGET', K.awayt, v) or '0'
      redis.call('ZADD', K.back, tk, v)
      redis.call('ZREM', K.away, v)
      redis.call('HDEL', K.awayt, v)
      came[#came + 1] = tk
    end
    lot_tickets('back', nil, came)
    return
  end
  local stale = redis.call('ZRANGEBYSCORE', K.seen, '-inf', '(' .. (now - drop_ms(cfg)), 'LIMIT', 0, SWEEP)
  local dropped = 0
  local gone = {}
  for _, v in ipairs(stale) do
    local tk = redis.call('ZSCORE', q, v) or redis.call('HGET', K.awayt, v) or
      redis.call('ZSCORE', K.back, v) or '0'
    gone[#gone + 1] = tk
    redis.call('ZREM', K.seen, v)
    redis.call('ZREM', K.aseen, v)
    redis.call('ZREM', K.closed, v)
    redis.call('HDEL', K.awayt, v)
    local n = redis.call('ZREM', q, v) + redis.call('ZREM', K.away, v) + redis.call('ZREM', K.back, v)
    if n > 0 then
      -- The marker says why (a status reads expired, reason away) for a
      -- while; the ticket is done for good (mark_done, done.lua): its
      -- signed credential never takes the place back.
      redis.call('SET', p .. 'dropped:' .. v, '1', 'PX', keep)
      mark_done(p, tk)
      dropped = dropped + 1
    end
  end
  bump(p, 'dropped', dropped, now)
  lot_tickets('remove', 'drop', gone)

  local idle = redis.call('ZRANGEBYSCORE', K.aseen, '-inf', '(' .. (now - away_ms(cfg)), 'WITHSCORES', 'LIMIT', 0, SWEEP)
  local reclaimed = 0
  local names, owed = {}, {}
  for i = 1, #idle, 2 do
    local v = idle[i]
    local t = tonumber(idle[i + 1])
    names[#names + 1] = v
    local key = p .. 't:' .. v
    local nb, _, cap = read_token(key)
    local unheard = nb and t < nb - 2 * tick_ms
    if (slots or unheard) and redis.call('ZREM', K.active, v) == 1 then
      redis.call('DEL', key)
      -- A token taken back stays taken back: revive.lua must not write it
      -- back as one Redis lost.
      if nb and cap > now then redis.call('SET', p .. 'gone:' .. v, nb, 'PX', cap - now) end
      redis.call('ZADD', K.away, t, v)
      redis.call('HSET', K.awayt, v, 0)
      owed[#owed + 1] = now
      owed[#owed + 1] = v .. ':' .. (nb or now)
      reclaimed = reclaimed + 1
    end
  end
  -- Tokens used, expired or given back need no watch any more.
  if #names > 0 then redis.call('ZREM', K.aseen, unpack(names)) end
  if #owed > 0 then
    redis.call('ZADD', K.owed, unpack(owed))
    if next(cfg) == nil then redis.call('PEXPIRE', K.owed, idle_ms) end
  end
  bump(p, 'reclaimed', reclaimed, now)
end

-- owed_extra is how many admissions this tick may add to a batch of
-- batch to make up tokens taken back unused (presence_sweep): each such
-- token was an admission the protected system never saw. At most a
-- quarter of the batch (at least one) a tick, so the system never gets
-- more than a little over its rate at once, and only for tokens taken
-- back within the last awayAfter: capacity missed long ago (before a
-- pause, or while nobody waited) is not made up in a burst later.
local function owed_extra(p, cfg, batch, now)
  if not presence_on(cfg) or cfg.method == 'passthrough' then return 0 end
  local k = K.owed
  redis.call('ZREMRANGEBYSCORE', k, '-inf', '(' .. (now - away_ms(cfg)))
  return math.min(redis.call('ZCARD', k), math.max(1, math.floor(batch / 4)))
end

-- owed_paid records that n of the owed admissions were made.
local function owed_paid(p, n, now)
  if n <= 0 then return end
  redis.call('ZPOPMIN', K.owed, n)
  bump(p, 'madeup', n, now)
end

-- take pops up to n visitors to admit, as ZPOPMIN does ({v, score, ...}):
-- first those who came back, then the queue in order, setting aside (with
-- their ticket) those away when their turn comes, or whose push connection
-- closed with no sign of life since (see closed). It looks at no more than
-- limit queued visitors, so a queue of the departed does not hold Redis.
local function take(p, cfg, q, n, now, limit)
  local out = {}
  if n <= 0 then return out end
  local b = redis.call('ZPOPMIN', K.back, n)
  for i = 1, #b do out[#out + 1] = b[i] end
  lot_returned(b)
  local need = n - #b / 2
  if not presence_on(cfg) then
    if need > 0 then
      local c = redis.call('ZPOPMIN', q, need)
      for i = 1, #c do out[#out + 1] = c[i] end
      for i = 2, #c, 2 do lot_log('e', 'pop', 'ticket', c[i], 'away', 0) end
    end
    return out
  end
  local cutoff = now - away_ms(cfg)
  local looked, skipped = 0, 0
  while need > 0 and looked < limit do
    local c = redis.call('ZPOPMIN', q, math.min(need, limit - looked))
    if #c == 0 then break end
    local names = {}
    for i = 1, #c, 2 do names[#names + 1] = c[i] end
    local s = redis.call('ZMSCORE', K.seen, unpack(names))
    local cl = redis.call('ZMSCORE', K.closed, unpack(names))
    for i = 1, #names do
      local t = tonumber(s[i])
      if unconfirmed(p, names[i], t, cutoff, cl[i] or false) then
        redis.call('ZADD', K.away, t, names[i])
        redis.call('HSET', K.awayt, names[i], c[2 * i])
        skipped = skipped + 1
        lot_log('e', 'pop', 'ticket', c[2 * i], 'away', 1)
      else
        lot_log('e', 'pop', 'ticket', c[2 * i], 'away', 0)
        out[#out + 1] = names[i]
        out[#out + 1] = c[2 * i]
        need = need - 1
      end
    end
    looked = looked + #names
  end
  bump(p, 'skipped', skipped, now)
  return out
end

-- admitted_seen starts the token-use watch of visitors just admitted,
-- from when each was last seen: one who left shortly before its turn gives
-- the slot back awayAfter after leaving, not after admission.
local function admitted_seen(p, cfg, vs, now)
  if not presence_on(cfg) or #vs == 0 then return end
  for i = 1, #vs, ZADD_CHUNK do
    local names = {}
    for j = i, math.min(i + ZADD_CHUNK - 1, #vs) do names[#names + 1] = vs[j] end
    local s = redis.call('ZMSCORE', K.seen, unpack(names))
    local args = {}
    for j = 1, #names do
      args[#args + 1] = tonumber(s[j]) or now
      args[#args + 1] = names[j]
    end
    redis.call('ZADD', K.aseen, unpack(args))
  end
  if next(cfg) == nil then
    redis.call('PEXPIRE', K.aseen, idle_ms)
  end
end
