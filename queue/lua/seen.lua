-- seen: what Redis runs, byte for byte (EVALSHA sends the SHA-1 of this
-- file). Generated from scripts/seen.lua, after the functions it calls of the
-- prelude: those of scripts/lotlog.lua, scripts/clock.lua,
-- scripts/settings.lua, scripts/opening.lua, scripts/idle.lua and
-- scripts/presence.lua, by
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
-- ARGV[2] = mode: "closed" when the visitors' last push connection closed, else ""
-- ARGV[3..] = visitors: the visitors seen

local K = {q = KEYS[1], cfg = KEYS[2], stats = KEYS[3], seq = KEYS[4], pseq = KEYS[5], pmark = KEYS[6], active = KEYS[7], tick = KEYS[8], pre = KEYS[9], ppre = KEYS[10], back = KEYS[11], away = KEYS[12], awayt = KEYS[13], seen = KEYS[14], aseen = KEYS[15], closed = KEYS[16], owed = KEYS[17], done = KEYS[18], pdone = KEYS[19], donein = KEYS[20], retook = KEYS[21], draw = KEYS[22], drawc = KEYS[23], drawkey = KEYS[24], drawlist = KEYS[25], drawpool = KEYS[26], lotc = KEYS[27], lotl = KEYS[28], lotlog = KEYS[29]}
local V = {t = KEYS[30], spent = KEYS[31], gone = KEYS[32], left = KEYS[33], dropped = KEYS[34]}
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
  local f = redis.call('HMGET', K.cfg, "v", "presence", "awayMs", "method")
  if not f[1] then return {} end
  return {v = f[1] or nil, presence = f[2] or nil, awayMs = f[3] or nil, method = f[4] or nil}
end

local function num(v, default)
  local n = tonumber(v)
  if n == nil then return default end
  return n
end

-- The opening of a room with a pre-queue, and its draw. Prelude, after
-- random.lua and after draw.lua and lotlog.lua, whose functions it calls.

local ZADD_CHUNK = 500 -- members per ZADD call (Lua's stack bounds unpack)

-- The counters of a room nobody configured. Prelude, after seats.lua.

-- A room that no operator configured (visitors made it, with open rooms)
-- keeps its counters only while it is used: each use pushes their expiry a
-- day on, or past the longest token of the room if that is later. A join
-- (no longest_ms) pushes them at most once every KEEP_EVERY_MS, unless it
-- created one of them (created): between two pushes the counters' expiry
-- is at least a day less that much away, and a herd of joins does not pay
-- seven PEXPIRE each.
local idle_ms = 86400000
local KEEP_EVERY_MS = 60000

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

local function presence_on(cfg) return cfg.presence ~= 'off' end
local function away_ms(cfg) return num(cfg.awayMs, AWAY_MS) end

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

-- seen: signs of life.
-- A hub's batch of signs of life for its connected visitors (presence.lua);
-- mode "closed": the visitors' last push connection just closed.
-- Returns the room's awayAfter in ms, so the hub knows when to write again.
local p = ARGV[1]
local now = now_ms()
local cfg = load_cfg(p)
lot_begin(p, cfg.method)
local vs = {}
for i = 3, #ARGV do vs[#vs + 1] = ARGV[i] end
seen_many(p, cfg, vs, now, ARGV[2] == 'closed')
return away_ms(cfg)

