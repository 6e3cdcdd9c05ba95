-- admit: what Redis runs, byte for byte (EVALSHA sends the SHA-1 of this
-- file). Generated from scripts/admit.lua, after the functions it calls of
-- the prelude: those of scripts/publish.lua, scripts/draw.lua,
-- scripts/lotlog.lua, scripts/clock.lua, scripts/token.lua,
-- scripts/settings.lua, scripts/random.lua, scripts/opening.lua,
-- scripts/seats.lua, scripts/idle.lua, scripts/priority.lua,
-- scripts/done.lua, scripts/presence.lua and scripts/method.lua, by
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

-- The auditable draw (commit-reveal). Prelude, loaded before opening.lua.
--
-- When a room gets opensAt, the server stores a secret seed and publishes
-- the SHA-256 of it (the drawc hash: seed, commit, at). At opening, the
-- pre-queue's visitors are placed in the order of
--   SHA-1 hex of (seed .. ':' .. visitor id), ascending (ties by id),
-- a deterministic function of the seed and the list of ids, so anyone can
-- recompute it once the seed and the sorted list are revealed. The draw
-- runs in slices (maybe_open in opening.lua): first each slice of the pool is
-- keyed (drawkey, members "key:id" at one score, so they sort by key),
-- then the keyed visitors are placed a slice at a time in key order. The
-- list of ids is kept in drawlist (one score: sorted by id) for the reveal.

-- draw_seed returns the room's committed seed, or makes an uncommitted
-- one from fallback (a room that opened without opensAt ever set). It
-- marks the draw as started with its opening moment and size.
local function draw_start(p, fallback, opens, n)
  local c = K.drawc
  local seed = redis.call('HGET', c, 'seed')
  if not seed or redis.call('HEXISTS', c, 'openedAt') == 1 then
    seed = 'x' .. fallback
    redis.call('DEL', c)
    redis.call('HSET', c, 'seed', seed, 'commit', '')
  end
  redis.call('DEL', K.drawlist, K.drawkey)
  redis.call('HSET', c, 'openedAt', opens, 'n', n)
  return seed
end

-- draw_key_slice keys a slice of the pool's members (ZADD chunk size
-- chunk), and records them in the revealed list.
local function draw_key_slice(p, seed, members, chunk)
  for i = 1, #members, chunk do
    local keyed, listed = {}, {}
    for j = i, math.min(i + chunk - 1, #members) do
      local m = members[j]
      keyed[#keyed + 1] = 0
      keyed[#keyed + 1] = redis.sha1hex(seed .. ':' .. m) .. ':' .. m
      listed[#listed + 1] = 0
      listed[#listed + 1] = m
    end
    redis.call('ZADD', K.drawkey, unpack(keyed))
    redis.call('ZADD', K.drawlist, unpack(listed))
  end
end

-- draw_done marks the draw complete; the list is kept for a week for the
-- reveal.
local function draw_done(p)
  redis.call('HSET', K.drawc, 'doneAt', redis.call('TIME')[1])
  redis.call('PEXPIRE', K.drawlist, 7 * 86400000)
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
local LOT_SLICE = 2000  -- tickets a call walks when the log begins
local LOT_GAP_MS = 20

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

-- The clock. Prelude shared by every script, after lotlog.lua. Keys of a
-- room are built from the prefix "wr:{room}:" (ARGV[1]); KEYS[1] is always
-- a key of that slot, so a cluster routes the script to the node holding
-- every key it touches.

-- Redis TIME is the one clock, in ms.
local function now_ms()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end

-- Entry token records. Prelude, after clock.lua.

-- A token record is "notBefore:expiresAt:cap" in ms. expiresAt slides with
-- use up to cap. The record outlives expiresAt by a retention so that status
-- can say "expired".
local function read_token(key)
  local rec = redis.call('GET', key)
  if not rec then return nil end
  local nb, exp, cap = string.match(rec, '^(%d+):(%d+):?(%d*)')
  nb, exp = tonumber(nb), tonumber(exp)
  cap = tonumber(cap) or exp
  return nb, exp, cap
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
  local f = redis.call('HMGET', K.cfg, "v", "method", "opensAt", "seats", "presence", "awayMs", "dropMs", "strategy", "paused", "batch", "ttlMs", "maxMs", "maxActive")
  if not f[1] then return {} end
  return {v = f[1] or nil, method = f[2] or nil, opensAt = f[3] or nil, seats = f[4] or nil, presence = f[5] or nil, awayMs = f[6] or nil, dropMs = f[7] or nil, strategy = f[8] or nil, paused = f[9] or nil, batch = f[10] or nil, ttlMs = f[11] or nil, maxMs = f[12] or nil, maxActive = f[13] or nil}
end

local function num(v, default)
  local n = tonumber(v)
  if n == nil then return default end
  return n
end

-- Random numbers a caller seeds. Prelude, after settings.lua.

-- Park-Miller minimal standard generator: exact in doubles, seeded by the
-- caller (scripts must not depend on math.random's seeding).
local function next_rand(seed)
  return (seed * 16807) % 2147483647
end

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

-- Seats. Prelude, after opening.lua.

-- Seats held: live tokens plus tokens used up (sold). Every admission takes
-- a seat whether or not the room has a limit, so a limit set later counts
-- what is already out. A seat is freed only by taking its visitor out of
-- the active set (ZREM, or the expiry sweep), once per token, so freeing
-- twice is impossible; tokens past expiresAt that the sweep has not reached
-- yet do not count.
local function seats_held(p, now)
  return redis.call('ZCOUNT', K.active, '(' .. now, '+inf') +
    num(redis.call('HGET', K.stats, 'sold'), 0)
end

-- Seats held against the room's seats; 0 seats means no limit.
local function sold_out(p, cfg, now)
  local seats = num(cfg.seats, 0)
  if seats <= 0 then return false end
  return seats_held(p, now) >= seats
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
local KEEP_EVERY_MS = 60000
local function keep_while_used(p, cfg, longest_ms, created)
  if next(cfg) ~= nil then return end
  local ttl = math.max(idle_ms, longest_ms or 0)
  if not longest_ms and not created and redis.call('PTTL', K.seq) > ttl - KEEP_EVERY_MS then return end
  for _, k in ipairs({K.seq, K.pseq, K.pmark, K.stats, K.active, K.done, K.pdone}) do
    redis.call('PEXPIRE', k, ttl)
  end
end

-- The priority band. Prelude, after tickets.lua.

-- The priority band: visitors who joined with a priority code hold
-- tickets from a counter of their own (pseq), queued at score
-- ticket - PRIO_BASE, below every public ticket (1, 2, …), so the one
-- queue admits them first, in the order they joined, and every rank
-- counts them ahead. Before a scheduled opening they wait in ppre (same
-- scores) and are moved into the queue at opening (maybe_open).
-- PRIO_BASE keeps both bands exact in doubles and in Lua's %.14g.
local PRIO_BASE = 1000000000000

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
local done_now = {}

local function done_bit(p, score)
  local s, prio = ticket_of(score)
  if prio == 1 then return K.pdone, s end
  return K.done, s
end

local function mark_done(p, score)
  local sc = tonumber(score)
  if not sc or sc == 0 then return end -- 0: a token's place, no ticket
  local k, s = done_bit(p, sc)
  if s < 1 or s > DONE_MAX then return end
  redis.call('SETBIT', k, s, 1)
  done_now[#done_now + 1] = score
end

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

-- unconfirmed reports whether v, last seen at t (ms, or nil: never seen),
-- is not to be admitted now: unseen since cutoff, or its push connection
-- closed and nothing came since.
local function unconfirmed(p, v, t, cutoff, closed)
  if not t then return false end
  if t < cutoff then return true end
  if closed == nil then closed = redis.call('ZSCORE', K.closed, v) end
  return closed ~= false and closed ~= nil
end

-- How many stand ahead of the queue: those who came back.
local function presence_ahead(p)
  return redis.call('ZCARD', K.back)
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

-- Queueing methods (the cfg field method). Prelude, after presence.lua.
--   fifo         the default: tickets in order
--   random       a lottery: each tick draws its batch uniformly at random
--                among those waiting (see take_random); a waiting
--                visitor is shown the size of the draw and its chance per
--                minute instead of a place
--   passthrough  no crowd: a new visitor is admitted at its join, with a
--                token (so sessions and analytics work as under a queue);
--                the tick admits whoever still waits, up to PASS_BATCH a
--                tick, whatever max-active says; seats still count
--   reject       closed: a new visitor's join answers closed with the
--                operator's message; visitors already in keep their place
--                and go on being admitted
-- A change of method moves nobody: tickets are kept, so a turn to random
-- draws among the same tickets and a return to fifo goes on in ticket
-- order.
local PASS_BATCH = 1000

-- lottery_commit makes sure a random room holds a committed seed before
-- anything of its lottery happens (the log's start names the commitment,
-- and no tick draws without one): when the room's lotc has no seed, or an
-- uncommitted one, or one whose lottery ended, it stores seed (256 bits
-- from the caller's cryptographic source, as 64 hex digits) with commit
-- (its SHA-256), and begins a new log, whose start names that commitment.
-- The room turning random commits a seed first (queue.SetRoomConfig); this
-- is for a Redis that lost it. Returns the seed in force.
local function lottery_commit(p, seed, commit, now)
  local c = K.lotc
  local d = redis.call('HMGET', c, 'seed', 'commit', 'endedAt')
  if d[1] and d[2] and d[2] ~= '' and not d[3] then return d[1] end
  if not seed or #seed ~= 64 or not commit or #commit ~= 64 then return nil end
  redis.call('DEL', c, K.lotl, K.lotlog)
  redis.call('HSET', c, 'seed', seed, 'commit', commit, 'at', now)
  return seed
end

-- The lottery's seed: the room's committed one (lotc: seed, commit, at),
-- nil when there is none (no draw then).
local function lottery_seed(p)
  local d = redis.call('HMGET', K.lotc, 'seed', 'commit')
  if d[2] and d[2] ~= '' then return d[1] end
  return nil
end

-- lottery_rank is the i-th pick (0-based) of tick among n: the first 13
-- hex digits of SHA-1(seed:tick:i) as a fraction of 2^52, times n, rounded
-- down. Exact in doubles, so anyone holding the seed recomputes it
-- (queue.LotteryRank).
local function lottery_rank(seed, tick, i, n)
  local h = redis.sha1hex(seed .. ':' .. tick .. ':' .. i)
  return math.floor(tonumber(string.sub(h, 1, 13), 16) / 4503599627370496 * n)
end

-- The size of the draw a waiting visitor of a random room is in: everyone
-- with a ticket (and those of a draw under way, who will have one); -1
-- when the room is not random.
local function lottery_size(cfg, q, undrawn_left)
  if cfg.method ~= 'random' then return -1 end
  return redis.call('ZCARD', q) + (undrawn_left or 0)
end

-- take_random is take (presence.lua) for the lottery: those who came back
-- first (their turn had come), then picks one at a time, each uniform among
-- the tickets still in the queue, so the batch is a uniform random set of
-- them. A pick who is away (or whose push connection closed with no sign
-- of life since) is set aside with its ticket, as in take, and does not
-- count. Pick i of tick t is at rank lottery_rank(seed, t, i, n)
-- of the n tickets left in the queue (in ticket order) before it; i counts
-- every pick of the tick, set aside or not. Each pick costs a ZRANGE by
-- index, not a walk of the queue, and a tick looks at no more than limit,
-- so a big room holds Redis no longer than a fifo one. below bounds the
-- draw to tickets under it (a pre-queue draw still placing its pool:
-- nobody behind the pool goes before it).
local function take_random(p, cfg, q, n, now, limit, seed, tick, below)
  local out = {}
  if n <= 0 then return out end
  local b = redis.call('ZPOPMIN', K.back, n)
  for i = 1, #b do out[#out + 1] = b[i] end
  lot_returned(b)
  local need = n - #b / 2
  local on = presence_on(cfg)
  local cutoff = now - away_ms(cfg)
  local skipped = 0
  local i = 0
  local picks = {} -- for the lottery's log (lotlog.lua)
  while need > 0 and i < limit do
    local size
    if below then size = redis.call('ZCOUNT', q, '-inf', '(' .. below) else size = redis.call('ZCARD', q) end
    if size == 0 then break end
    local r = lottery_rank(seed, tick, i, size)
    local got = redis.call('ZRANGE', q, r, r, 'WITHSCORES')
    i = i + 1
    local v, score = got[1], got[2]
    redis.call('ZREM', q, v)
    local t = on and tonumber(redis.call('ZSCORE', K.seen, v))
    if unconfirmed(p, v, t, cutoff) then
      redis.call('ZADD', K.away, t, v)
      redis.call('HSET', K.awayt, v, score)
      skipped = skipped + 1
      if lot.on then picks[#picks + 1] = size .. ':' .. r .. ':' .. score .. ':1' end
    else
      if lot.on then picks[#picks + 1] = size .. ':' .. r .. ':' .. score .. ':0' end
      out[#out + 1] = v
      out[#out + 1] = score
      need = need - 1
    end
  end
  bump(p, 'skipped', skipped, now)
  lot_picks(tick, picks, below)
  return out
end

-- admit: the leaderless tick.
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

