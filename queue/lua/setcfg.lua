-- setcfg: what Redis runs, byte for byte (EVALSHA sends the SHA-1 of this
-- file). Generated from scripts/setcfg.lua, after the functions it calls of
-- the prelude: those of scripts/publish.lua and scripts/lotlog.lua, by
--   go test ./queue -run TestScriptsGenerated -update
-- Edit those files, not this one.
--
-- KEYS[1] = wr:{room}:q
-- KEYS[2] = wr:{room}:cfg
-- KEYS[3] = wr:{room}:stats
-- KEYS[4] = wr:{room}:seq
-- KEYS[5] = wr:{room}:pseq
-- KEYS[6] = wr:{room}:pmark
-- KEYS[7] = wr:{room}:active
-- KEYS[8] = wr:{room}:tick
-- KEYS[9] = wr:{room}:pre
-- KEYS[10] = wr:{room}:ppre
-- KEYS[11] = wr:{room}:back
-- KEYS[12] = wr:{room}:away
-- KEYS[13] = wr:{room}:awayt
-- KEYS[14] = wr:{room}:seen
-- KEYS[15] = wr:{room}:aseen
-- KEYS[16] = wr:{room}:closed
-- KEYS[17] = wr:{room}:owed
-- KEYS[18] = wr:{room}:done
-- KEYS[19] = wr:{room}:pdone
-- KEYS[20] = wr:{room}:donein
-- KEYS[21] = wr:{room}:retook
-- KEYS[22] = wr:{room}:draw
-- KEYS[23] = wr:{room}:drawc
-- KEYS[24] = wr:{room}:drawkey
-- KEYS[25] = wr:{room}:drawlist
-- KEYS[26] = wr:{room}:drawpool
-- KEYS[27] = wr:{room}:lotc
-- KEYS[28] = wr:{room}:lotl
-- KEYS[29] = wr:{room}:lotlog
--
-- ARGV[1] = prefix: the room's key prefix, wr:{room}:
-- ARGV[2] = room: the room's name
-- ARGV[3] = channel: the room's channel (a leading '!': SPUBLISH, see publish.lua)
-- ARGV[4] = version: the settings version the caller read ("": any)
-- ARGV[5..] = settings: field, value, field, value … of the cfg hash

local K = {q = KEYS[1], cfg = KEYS[2], stats = KEYS[3], seq = KEYS[4], pseq = KEYS[5], pmark = KEYS[6], active = KEYS[7], tick = KEYS[8], pre = KEYS[9], ppre = KEYS[10], back = KEYS[11], away = KEYS[12], awayt = KEYS[13], seen = KEYS[14], aseen = KEYS[15], closed = KEYS[16], owed = KEYS[17], done = KEYS[18], pdone = KEYS[19], donein = KEYS[20], retook = KEYS[21], draw = KEYS[22], drawc = KEYS[23], drawkey = KEYS[24], drawlist = KEYS[25], drawpool = KEYS[26], lotc = KEYS[27], lotl = KEYS[28], lotlog = KEYS[29]}
local V = {t = KEYS[30], spent = KEYS[31], gone = KEYS[32], left = KEYS[33], dropped = KEYS[34]}
-- Room events go out with publish. In a Redis Cluster the queue marks the
-- channel argument with a leading '!': the event is then sent with SPUBLISH,
-- so it stays on the shard of the room's slot (the channel carries the
-- room's hash tag) instead of being broadcast to every node.
local function publish(channel, msg)
  if string.byte(channel, 1) == 33 then
    return redis.call('SPUBLISH', string.sub(channel, 2), msg)
  end
  return redis.call('PUBLISH', channel, msg)
end

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

-- setcfg: the room's settings replaced.
-- Replaces the room's settings if their version is still the one the
-- caller read ("" = whatever it is), bumps the version and tells every
-- instance's hub (which then reconciles the room's visitors, e.g. for
-- paused). A changed message to the waiting goes out as an event of its
-- own, carrying the text, so hubs show it without a read. A change of
-- method into or out of random starts or ends the lottery's log
-- (lotlog.lua). Returns 1 when written, 0 when another writer came first.
local p = ARGV[1]
local key = K.cfg
local v = tonumber(redis.call('HGET', key, 'v') or '0')
if ARGV[4] ~= '' and tonumber(ARGV[4]) ~= v then return 0 end
local old_msg = redis.call('HGET', key, 'message') or ''
local old_method = redis.call('HGET', key, 'method') or 'fifo'
redis.call('DEL', key)
redis.call('HSET', key, 'v', v + 1)
if #ARGV > 4 then redis.call('HSET', key, unpack(ARGV, 5)) end
lot_method(p, old_method, redis.call('HGET', key, 'method') or 'fifo')
publish(ARGV[3], '{"type":"config","room":"' .. ARGV[2] .. '"}')
local new_msg = redis.call('HGET', key, 'message') or ''
if new_msg ~= old_msg then
  publish(ARGV[3], cjson.encode({type = 'message', room = ARGV[2], text = new_msg, v = v + 1}))
end
return 1

