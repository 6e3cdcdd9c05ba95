-- retake: what Redis runs, byte for byte (EVALSHA sends the SHA-1 of this
-- file). Generated from scripts/retake.lua, after the functions it calls of
-- the prelude: those of scripts/publish.lua, scripts/lotlog.lua,
-- scripts/clock.lua, scripts/settings.lua, scripts/idle.lua,
-- scripts/priority.lua and scripts/done.lua, by
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
-- ARGV[4] = head: the last public ticket admitted
-- ARGV[5] = headBorn: when the room's state that head is of began (Unix ms)
-- ARGV[6] = seqFloor: the least the public ticket counter may be
-- ARGV[7] = pHead: the last priority ticket admitted
-- ARGV[8] = pSeqFloor: the least the priority ticket counter may be
-- ARGV[9] = done: bytes of the bitmap of the public tickets done with, as Redis stores it ("" none; mark_done, done.lua)
-- ARGV[10] = pDone: the same of the priority tickets
-- ARGV[11] = doneAt: the byte of the public bitmap that done starts at
-- ARGV[12] = pDoneAt: the byte of the priority bitmap that pDone starts at
-- ARGV[13] = nCfg: the number of settings pairs that follow (-1: none remembered)
-- ARGV[14..] = rest: nCfg settings field/value pairs, then visitor, seq, issuedAt, band (0 public, 1 priority) for each ticket to take back

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

-- The clock. Prelude shared by every script, after lotlog.lua. Keys of a
-- room are built from the prefix "wr:{room}:" (ARGV[1]); KEYS[1] is always
-- a key of that slot, so a cluster routes the script to the node holding
-- every key it touches.

-- Redis TIME is the one clock, in ms.
local function now_ms()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end

-- The room's settings. Prelude, after token.lua.

-- The room's settings: those fields of the cfg hash that the script
-- reads, as a table of those that are set. When a script is generated
-- (cfgReadLua, scriptgen_test.go) CFG_NAMES becomes the names of the fields its
-- text reads as cfg.<field>, the version v first, and CFG_TABLE the table
-- of their values by name: a call asks for a few fields by name with one
-- HMGET and builds one small table, instead of reading every field the
-- room set and keeping those the schema declares. Every configured room
-- has a version, so a room without one is a room nobody configured: an
-- empty table.
local function load_cfg(p)
  local f = redis.call('HMGET', K.cfg, "v")
  if not f[1] then return {} end
  return {v = f[1] or nil}
end

local function num(v, default)
  local n = tonumber(v)
  if n == nil then return default end
  return n
end

-- The counters of a room nobody configured. Prelude, after seats.lua.

-- A room that no operator configured (visitors made it, with open rooms)
-- keeps its counters only while it is used: each use pushes their expiry a
-- day on, or past the longest token of the room if that is later. A join
-- (no longest_ms) pushes them at most once every KEEP_EVERY_MS, unless it
-- created one of them (created): between two pushes the counters' expiry
-- is at least a day less that much away, and a herd of joins does not pay
-- seven PEXPIRE each.
local idle_ms = 86400000

-- The priority band. Prelude, after tickets.lua.

-- The priority band: visitors who joined with a priority code hold
-- tickets from a counter of their own (pseq), queued at score
-- ticket - PRIO_BASE, below every public ticket (1, 2, …), so the one
-- queue admits them first, in the order they joined, and every rank
-- counts them ahead. Before a scheduled opening they wait in ppre (same
-- scores) and are moved into the queue at opening (maybe_open).
-- PRIO_BASE keeps both bands exact in doubles and in Lua's %.14g.
local PRIO_BASE = 1000000000000

-- Positions never rise (except at the draw): a public visitor's position
-- counts the priority visitors who joined before it, not those who join
-- later. Those go ahead of it all the same; its position stands still
-- while they are admitted. pmark records, for each priority ticket (the
-- member, zero-padded so that members of one score sort by ticket), the
-- last public ticket given when it was taken (the score; 0 for a ticket
-- taken back after Redis lost the queue: counted by everyone).
local function mark_member(pticket) return string.format('%012d', pticket) end

-- The ticket a queue score stands for, and 1 when it is a priority one.
local function ticket_of(score)
  if score < 0 then return score + PRIO_BASE, 1 end
  return score, 0
end

-- Tickets done with. Prelude, after priority.lua.

-- Tickets done with: admitted (under every method), or dropped by
-- presence for being away (presence.lua). Each band keeps a bitmap of
-- its tickets (done: public, offset = the ticket; pdone: priority), set
-- once the ticket is done, which retake.lua reads: a signed ticket whose
-- record is gone (its token spent, given back or expired, or the visitor
-- dropped) never comes back, so a ticket is admitted at most once and a
-- dropped visitor joins again at the back. The bitmaps live as long as
-- the room's state (keep_while_used); a Redis that lost them gets back
-- what the instances remember (queue.Retake). done_now lists the scores
-- this call marked, for the caller to remember.
local DONE_MAX = 4294967295 -- SETBIT's last offset

local function done_bit(p, score)
  local s, prio = ticket_of(score)
  if prio == 1 then return K.pdone, s end
  return K.done, s
end

local function is_done(p, score)
  local k, s = done_bit(p, score)
  if s < 1 or s > DONE_MAX then return false end
  return redis.call('GETBIT', k, s) == 1
end

-- retake: what an instance remembers of a room, put back.
-- Puts back what an instance remembers of a room whose state Redis lost (a
-- restart without persistence, or a failover that lost the last writes):
-- the settings when they are missing, the last admitted ticket and the
-- ticket counter of each band (public, and priority: priority.lua), and the
-- places of visitors who come back with a signed ticket, each at its
-- original score in its band. Every part only ever raises or fills in, so
-- any number of instances may call it at once, any number of times.
-- The reply is read by decodeRetake in replies.go, field for field.
-- Returns {settingsRestored, retaken, removed}.
local p, room, channel = ARGV[1], ARGV[2], ARGV[3]
local head_born = tonumber(ARGV[5])
local ncfg = tonumber(ARGV[13])
local first = 14 + math.max(ncfg, 0) * 2
local now = now_ms()
local stats = K.stats
local retook = K.retook

-- Settings first: nothing of this room may be admitted under defaults.
local restored = 0
if ncfg >= 0 and redis.call('EXISTS', K.cfg) == 0 then
  redis.call('HSET', K.cfg, 'v', 1)
  if ncfg > 0 then redis.call('HSET', K.cfg, unpack(ARGV, 14, first - 1)) end
  restored = 1
  publish(channel, '{"type":"config","room":"' .. room .. '"}')
end

-- A random room logs what changes its draw (lotlog.lua).
lot_begin(p, redis.call('HGET', K.cfg, 'method'))

-- The tickets the instance knows were done with join those Redis knows.
-- A visitor taken back since the loss (retook) whose ticket turns out done
-- leaves the queue again: an instance that knew less let it back in.
local merged = false
for i, k in ipairs({'done', 'pdone'}) do
  if ARGV[8 + i] ~= '' then
    redis.call('SETRANGE', K.donein, tonumber(ARGV[10 + i]), ARGV[8 + i])
    redis.call('BITOP', 'OR', K[k], K[k], K.donein)
    redis.call('DEL', K.donein)
    merged = true
  end
end
local removed = 0
if merged then
  local back = redis.call('HGETALL', retook)
  for i = 1, #back, 2 do
    local v, score = back[i], tonumber(back[i + 1])
    if tonumber(redis.call('ZSCORE', KEYS[1], v)) == score and is_done(p, score) then
      removed = removed + redis.call('ZREM', KEYS[1], v)
      lot_tickets('remove', 'restore', {score})
    end
  end
end

-- born is when this room's state began (join sets it): a ticket taken
-- before it was taken from state that is gone.
local born = tonumber(redis.call('HGET', stats, 'born'))
if not born then
  born = now
  redis.call('HSET', stats, 'born', born)
end
-- Each band's tickets count on their own: head and floor are tickets of
-- the band, and its scores are ticket - base.
local bands = {
  [0] = {head = tonumber(ARGV[4]), seq_floor = tonumber(ARGV[6]), fh = 'head', ff = 'floor', ctr = 'seq', base = 0},
  [1] = {head = tonumber(ARGV[7]), seq_floor = tonumber(ARGV[8]), fh = 'phead', ff = 'pfloor', ctr = 'pseq', base = PRIO_BASE},
}
for _, b in pairs(bands) do
  -- floor: the last ticket admitted before the state was lost; admitted:
  -- the last one admitted since.
  b.floor = num(redis.call('HGET', stats, b.ff), 0)
  b.admitted = num(redis.call('HGET', stats, b.fh), 0)
  b.top = 0
  if b.head > 0 then
    if head_born ~= born then
      if b.head > b.floor then
        b.floor = b.head
        redis.call('HSET', stats, b.ff, b.floor)
      end
    elseif b.head > b.admitted then
      -- Admissions of this state that Redis lost (a failover): their
      -- visitors were told, and must not come in twice.
      b.admitted = b.head
      redis.call('HSET', stats, b.fh, b.head)
    end
  end
  -- Visitors in the queue who were already let in: tickets at or under
  -- the floor (taken back by an instance that knew less), and tickets at
  -- or under the admitted head that are no late comer taken back.
  local upto = math.max(b.floor, b.admitted)
  if upto > 0 then
    local lo = '(0'
    if b.base > 0 then lo = '-inf' end
    local low = redis.call('ZRANGEBYSCORE', KEYS[1], lo, upto - b.base)
    for _, v in ipairs(low) do
      local s = tonumber(redis.call('ZSCORE', KEYS[1], v)) + b.base
      if s <= b.floor or not redis.call('HGET', retook, v) then
        removed = removed + redis.call('ZREM', KEYS[1], v)
        lot_tickets('remove', 'restore', {s - b.base})
      end
    end
  end
end

local retaken = 0
for i = first, #ARGV, 4 do
  local v, s, iat = ARGV[i], tonumber(ARGV[i + 1]), tonumber(ARGV[i + 2])
  local b = bands[tonumber(ARGV[i + 3])] or bands[0]
  local score = s - b.base
  local lost
  if iat < born then lost = s > b.floor else lost = s > b.admitted end
  if lost and tonumber(redis.call('GET', p .. 'left:' .. v) or '') == score then lost = false end
  -- Admitted or dropped once: never again (mark_done, done.lua).
  if lost and is_done(p, score) then lost = false end
  -- A room no operator configured keeps its state (and so what it knows
  -- of done tickets) a day past its last use (keep_while_used): a ticket
  -- older than that may be one whose state is gone, and is not taken back.
  if lost and iat < now - idle_ms and next(load_cfg(p)) == nil then lost = false end
  if lost and not redis.call('ZSCORE', KEYS[1], v) and redis.call('EXISTS', p .. 't:' .. v) == 0
      and redis.call('SISMEMBER', K.pre, v) == 0 and redis.call('SISMEMBER', K.drawpool, v) == 0
      and not redis.call('ZSCORE', K.ppre, v)
      and not redis.call('ZSCORE', K.away, v) and not redis.call('ZSCORE', K.back, v)
      and redis.call('EXISTS', p .. 'dropped:' .. v) == 0 then
    redis.call('ZADD', KEYS[1], 'NX', score, v)
    lot_tickets('add', 'restore', {score})
    if b.base > 0 then redis.call('ZADD', K.pmark, 'NX', 0, mark_member(s)) end
    redis.call('HSET', retook, v, score)
    redis.call('PEXPIRE', retook, 86400000)
    retaken = retaken + 1
  end
  if s > b.top then b.top = s end
end

-- New tickets go behind every ticket of their band that was ever given.
for _, b in pairs(bands) do
  local want = math.max(b.seq_floor, b.top, b.floor, b.admitted)
  if want > num(redis.call('GET', K[b.ctr]), 0) then redis.call('SET', K[b.ctr], want) end
end
return {restored, retaken, removed}

