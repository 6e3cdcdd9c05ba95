-- The lottery's log. Prelude, before opening.lua (whose pre-queue opening
-- logs with it) and presence.lua.
--
-- In a room whose method is random, every script that changes who waits
-- appends the change to a capped stream (lotlog, in the room's slot), so
-- that with the seed, once revealed, anyone can replay the lottery ticket
-- by ticket (queue.LotteryLog; cmd/drawcheck -lottery). Entry ids are
-- "N-0", N = 1, 2, … with no gap, so a reader sees when the start was
-- trimmed away. Tickets are queue scores (a ticket, or ticket - PRIO_BASE
-- in the priority band), never visitor ids. Entries (field e):
--   start   the log begins (the first call after the room turned random):
--           commit (the seed's commitment), at (ms); aside and back: the
--           tickets set aside and come back then (absent when more than
--           LOT_SLICE: not listed)
--   snap    who waited when the log began, walked in slices (lot_walk):
--           the tickets in (after, upto] ("" = no bound) at this point of
--           the log; while a walk is under way the lottery does not draw
--   add     tickets that entered the queue: why join, open (a pre-queue
--           placed), restore (taken back after Redis lost them)
--   remove  tickets that left the queue or the set-aside: why leave, drop
--           (away past dropAfter), restore (let in before the loss),
--           upgrade (a public ticket given up for a priority one)
--   picks   the picks of tick t, one per pick i = 0, 1, … in order, each
--           "n:rank:ticket:away": n waiting, the rank drawn, the ticket
--           there, away 1 when it was set aside (not admitted); below:
--           while a pre-queue is still being placed, only the n tickets
--           under it were in the draw. One entry a tick keeps the log
--           small: a room admitting 500 a second fills it in days, not
--           in half an hour
--   pop     a priority ticket admitted in ticket order before the draw
--           (away as for pick)
--   back    tickets set aside whose visitor came back
--   return  tickets that came back, admitted ahead of the draw
--   end     the room left the random method
-- Only random rooms pay for it: a script calls lot_begin with the room's
-- method, and lot_log does nothing unless it is random and the log began.
local LOT_MAX = 2000000 -- entries kept (XADD MAXLEN ~): queue.LotteryLogMax
local LOT_SLICE = 2000  -- tickets a call walks when the log begins
local LOT_GAP_MS = 20
local LOT_KEEP_MS = 7 * 86400000 -- the log of an ended lottery is kept a week

local lot = {on = false}

-- lot_begin makes this call log for room p if its method is random.
local function lot_begin(p, method)
  lot.p, lot.on, lot.n = p, method == 'random', nil
  return lot.on
end

-- lot_log appends one entry (field, value, …) when the log is on and has
-- begun; the last entry's id is read once per call. With no log, the
-- walk's state goes too, so the next join, status or tick begins a new
-- log rather than none being written.
local function lot_log(...)
  if not lot.on then return end
  if not lot.n then
    local last = redis.call('XREVRANGE', K.lotlog, '+', '-', 'COUNT', 1)
    if #last == 0 then
      redis.call('DEL', K.lotl)
      lot.on = false
      return
    end
    lot.n = tonumber(string.match(last[1][1], '^(%d+)'))
  end
  lot.n = lot.n + 1
  redis.call('XADD', K.lotlog, 'MAXLEN', '~', LOT_MAX, lot.n .. '-0', ...)
end

-- lot_tickets logs tickets (a list of scores; 0, a token's place, is no
-- ticket) as one entry of kind e with reason why.
local function lot_tickets(e, why, ts)
  if not lot.on then return end
  local out = {}
  for _, s in ipairs(ts) do
    if tonumber(s) ~= 0 then out[#out + 1] = s end
  end
  if #out == 0 then return end
  if why then
    lot_log('e', e, 'why', why, 'tickets', table.concat(out, ','))
  else
    lot_log('e', e, 'tickets', table.concat(out, ','))
  end
end

-- lot_picks logs the picks of a tick, in order ("n:rank:ticket:away"
-- each, pick i being the i-th), as one entry. below: the bound of a draw
-- still placing a pre-queue, or nil.
local function lot_picks(tick, picks, below)
  if not lot.on or #picks == 0 then return end
  if below then
    lot_log('e', 'picks', 'tick', tick, 'below', below, 'picks', table.concat(picks, ','))
  else
    lot_log('e', 'picks', 'tick', tick, 'picks', table.concat(picks, ','))
  end
end

-- lot_returned logs the visitors who came back and are admitted ahead
-- of the draw (a ZPOPMIN reply of the back set: visitor, ticket, …).
local function lot_returned(b)
  if not lot.on or #b == 0 then return end
  local ts = {}
  for i = 2, #b, 2 do ts[#ts + 1] = b[i] end
  lot_tickets('return', nil, ts)
end

-- lot_walk begins a random room's log when there is none (the room just
-- turned random, Redis lost it, or the room was random before the log
-- existed) and walks who waits then, in slices of LOT_SLICE tickets in
-- ticket order, one slice per call (join, status, the tick) and at most
-- one every LOT_GAP_MS, as the pre-queue's draw does (opening.lua): a slice
-- holds Redis for a few ms, and a walk of 1,000,000 waiting takes about
-- 10 s. It returns true while the walk is under way: the lottery may not
-- draw before the log knows everyone in it.
local function lot_walk(p, cfg, q, now)
  if not lot_begin(p, cfg.method) then return false end
  local l = K.lotl
  local st = redis.call('HMGET', l, 'n', 'snap', 'last')
  local cur = st[2]
  if not st[1] then
    -- The log begins with the seed's commitment: with none stored yet
    -- (a Redis that lost the room), it waits for the tick, which commits
    -- one (lottery_commit, method.lua), and nothing is drawn meanwhile.
    local commit = redis.call('HGET', K.lotc, 'commit')
    if not commit or commit == '' or redis.call('HEXISTS', K.lotc, 'endedAt') == 1 then
      lot.on = false
      return true
    end
    redis.call('DEL', K.lotlog)
    lot.n = 0
    local f = {'e', 'start', 'commit', commit, 'at', now}
    -- Tickets set aside, or back and due first, when the log begins, so
    -- that their return is checked too; when there are too many to list
    -- in one call, the entry says nothing of them.
    if redis.call('HLEN', K.awayt) + redis.call('ZCARD', K.back) <= LOT_SLICE then
      local aside, back = {}, {}
      for _, s in ipairs(redis.call('HVALS', K.awayt)) do
        if tonumber(s) ~= 0 then aside[#aside + 1] = s end
      end
      local b = redis.call('ZRANGE', K.back, 0, -1, 'WITHSCORES')
      for i = 2, #b, 2 do
        if tonumber(b[i]) ~= 0 then back[#back + 1] = b[i] end
      end
      for _, x in ipairs({'aside', table.concat(aside, ','), 'back', table.concat(back, ',')}) do f[#f + 1] = x end
    end
    lot_log(unpack(f))
    redis.call('HSET', l, 'n', 1)
    cur = ''
  elseif not cur then
    return false
  elseif now - (tonumber(st[3]) or 0) < LOT_GAP_MS then
    return true
  end
  local lo = '-inf'
  if cur ~= '' then lo = '(' .. cur end
  local got = redis.call('ZRANGEBYSCORE', q, lo, '+inf', 'WITHSCORES', 'LIMIT', 0, LOT_SLICE)
  local ts = {}
  for i = 2, #got, 2 do ts[#ts + 1] = got[i] end
  local upto = ''
  if #ts == LOT_SLICE then upto = ts[#ts] end
  lot_log('e', 'snap', 'after', cur, 'upto', upto, 'tickets', table.concat(ts, ','))
  if upto == '' then
    redis.call('HDEL', l, 'snap', 'last')
    return false
  end
  redis.call('HSET', l, 'snap', upto, 'last', now)
  return true
end

-- lot_method follows a change of the room's method (setcfg.lua): a room
-- that turns random starts a new log at its next tick; one that leaves
-- random ends its log, kept a week for audits.
local function lot_method(p, old, new)
  if old == new then return end
  if new == 'random' then
    redis.call('DEL', K.lotlog, K.lotl)
  elseif old == 'random' then
    lot_begin(p, 'random')
    lot_log('e', 'end')
    redis.call('DEL', K.lotl)
    redis.call('PEXPIRE', K.lotlog, LOT_KEEP_MS)
  end
end
