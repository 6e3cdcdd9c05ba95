-- joinbatch: what Redis runs, byte for byte (EVALSHA sends the SHA-1 of this
-- file). Generated from scripts/fresh.lua, scripts/joinroom.lua,
-- scripts/invite.lua and scripts/join.lua as the body of join_visitor (run
-- for each visitor) and scripts/joinbatch.lua, after the functions they call
-- of the prelude: those of scripts/publish.lua, scripts/draw.lua,
-- scripts/lotlog.lua, scripts/clock.lua, scripts/token.lua,
-- scripts/settings.lua, scripts/opening.lua, scripts/seats.lua,
-- scripts/idle.lua, scripts/priority.lua, scripts/done.lua,
-- scripts/presence.lua and scripts/method.lua, by
--   go test ./queue -run TestScriptsGenerated -update
-- Edit those files, not this one.
--
-- KEYS[1] = wr:{room}:q
-- KEYS[2] = wr:{room}:drawc
-- KEYS[3] = wr:{room}:drawlist
-- KEYS[4] = wr:{room}:drawkey
-- KEYS[5] = wr:{room}:lotlog
-- KEYS[6] = wr:{room}:lotl
-- KEYS[7] = wr:{room}:lotc
-- KEYS[8] = wr:{room}:awayt
-- KEYS[9] = wr:{room}:back
-- KEYS[10] = wr:{room}:cfg
-- KEYS[11] = wr:{room}:draw
-- KEYS[12] = wr:{room}:drawpool
-- KEYS[13] = wr:{room}:ppre
-- KEYS[14] = wr:{room}:pre
-- KEYS[15] = wr:{room}:seq
-- KEYS[16] = wr:{room}:active
-- KEYS[17] = wr:{room}:stats
-- KEYS[18] = wr:{room}:pseq
-- KEYS[19] = wr:{room}:pmark
-- KEYS[20] = wr:{room}:done
-- KEYS[21] = wr:{room}:pdone
-- KEYS[22] = wr:{room}:seen
-- KEYS[23] = wr:{room}:aseen
-- KEYS[24] = wr:{room}:closed
-- KEYS[25] = wr:{room}:away
-- Then NV = 3 keys of each visitor of ARGV[13..], in order: visitor i's are
-- KEYS[vo + 1 .. vo + NV], vo = NK + (i - 1) * NV, NK = 25.
-- KEYS[vo + 1] = wr:{room}:t:<visitor>
-- KEYS[vo + 2] = wr:{room}:left:<visitor>
-- KEYS[vo + 3] = wr:{room}:dropped:<visitor>
--
-- ARGV[1] = prefix: the room's key prefix, wr:{room}:
-- ARGV[2] = visitor: "" (the visitors are ARGV[13..])
-- ARGV[3] = seed: a random seed for an opening's draw
-- ARGV[4] = channel: the room's channel (a leading '!': SPUBLISH, see publish.lua)
-- ARGV[5] = ttlMs: an entry token's lifetime in ms (the cfg hash overrides it)
-- ARGV[6] = maxMs: the longest a token's expiry may slide, in ms (the cfg hash overrides it)
-- ARGV[7] = retentionMs: how long a record outlives its token, in ms
-- ARGV[8] = code: "" (a batch joins without invite codes)
-- ARGV[9] = uses: unused
-- ARGV[10] = codeExpiry: unused
-- ARGV[11] = priority: 0
-- ARGV[12] = settings: the settings version the caller's own gates (proof of work, join limits) were read at
-- ARGV[13..] = visitors: the visitors to join, in arrival order

local NK, NV = 25, 3
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
  local c = KEYS[2]
  local seed = redis.call('HGET', c, 'seed')
  if not seed or redis.call('HEXISTS', c, 'openedAt') == 1 then
    seed = 'x' .. fallback
    redis.call('DEL', c)
    redis.call('HSET', c, 'seed', seed, 'commit', '')
  end
  redis.call('DEL', KEYS[3], KEYS[4])
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
    redis.call('ZADD', KEYS[4], unpack(keyed))
    redis.call('ZADD', KEYS[3], unpack(listed))
  end
end

-- draw_done marks the draw complete; the list is kept for a week for the
-- reveal.
local function draw_done(p)
  redis.call('HSET', KEYS[2], 'doneAt', redis.call('TIME')[1])
  redis.call('PEXPIRE', KEYS[3], 7 * 86400000)
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
    local last = redis.call('XREVRANGE', KEYS[5], '+', '-', 'COUNT', 1)
    if #last == 0 then
      redis.call('DEL', KEYS[6])
      lot.on = false
      return
    end
    lot.n = tonumber(string.match(last[1][1], '^(%d+)'))
  end
  lot.n = lot.n + 1
  redis.call('XADD', KEYS[5], 'MAXLEN', '~', LOT_MAX, lot.n .. '-0', ...)
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
  local l = KEYS[6]
  local st = redis.call('HMGET', l, 'n', 'snap', 'last')
  local cur = st[2]
  if not st[1] then
    -- The log begins with the seed's commitment: with none stored yet
    -- (a Redis that lost the room), it waits for the tick, which commits
    -- one (lottery_commit, method.lua), and nothing is drawn meanwhile.
    local commit = redis.call('HGET', KEYS[7], 'commit')
    if not commit or commit == '' or redis.call('HEXISTS', KEYS[7], 'endedAt') == 1 then
      lot.on = false
      return true
    end
    redis.call('DEL', KEYS[5])
    lot.n = 0
    local f = {'e', 'start', 'commit', commit, 'at', now}
    -- Tickets set aside, or back and due first, when the log begins, so
    -- that their return is checked too; when there are too many to list
    -- in one call, the entry says nothing of them.
    if redis.call('HLEN', KEYS[8]) + redis.call('ZCARD', KEYS[9]) <= LOT_SLICE then
      local aside, back = {}, {}
      for _, s in ipairs(redis.call('HVALS', KEYS[8])) do
        if tonumber(s) ~= 0 then aside[#aside + 1] = s end
      end
      local b = redis.call('ZRANGE', KEYS[9], 0, -1, 'WITHSCORES')
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
  local f = redis.call('HMGET', KEYS[10], "v", "method", "opensAt", "seats", "presence", "message", "ttlMs", "maxMs", "paused", "inviteOnly")
  if not f[1] then return {} end
  return {v = f[1] or nil, method = f[2] or nil, opensAt = f[3] or nil, seats = f[4] or nil, presence = f[5] or nil, message = f[6] or nil, ttlMs = f[7] or nil, maxMs = f[8] or nil, paused = f[9] or nil, inviteOnly = f[10] or nil}
end

local function num(v, default)
  local n = tonumber(v)
  if n == nil then return default end
  return n
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
  local draw, pool = KEYS[11], KEYS[12]
  -- No draw under way and nobody held for one: one command tells, on
  -- every join and status of a room that is not opening.
  if redis.call('EXISTS', draw, KEYS[13], KEYS[14]) == 0 then return nil end
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
    if redis.call('EXISTS', KEYS[13]) == 1 then
      local pp = redis.call('ZRANGE', KEYS[13], 0, -1, 'WITHSCORES')
      for i = 1, #pp, 2 * ZADD_CHUNK do
        local args, ts = {}, {}
        for j = i, math.min(i + 2 * ZADD_CHUNK - 1, #pp), 2 do
          args[#args + 1] = pp[j + 1]
          args[#args + 1] = pp[j]
          ts[#ts + 1] = pp[j + 1]
        end
        redis.call('ZADD', KEYS[1], 'NX', unpack(args))
        lot_tickets('add', 'open', ts)
      end
      redis.call('DEL', KEYS[13])
    end
    local n = redis.call('SCARD', KEYS[14])
    if n == 0 then return nil end
    redis.call('RENAME', KEYS[14], pool)
    nx = redis.call('INCRBY', KEYS[15], n) - n + 1
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
    draw_key_slice(p, redis.call('HGET', KEYS[2], 'seed'), members, ZADD_CHUNK)
  end
  local budget = DRAW_SLICE - #members
  local unkeyed = redis.call('SCARD', pool)
  if unkeyed > 0 or budget <= 0 then
    redis.call('HSET', draw, 'last', now)
    return nx, unkeyed + redis.call('ZCARD', KEYS[4])
  end
  local keyed = redis.call('ZPOPMIN', KEYS[4], budget)
  local placed = #keyed / 2
  for i = 1, placed, ZADD_CHUNK do
    local args, ts = {}, {}
    for j = i, math.min(i + ZADD_CHUNK - 1, placed) do
      args[#args + 1] = nx + j - 1
      args[#args + 1] = string.sub(keyed[2 * j - 1], 42)
      ts[#ts + 1] = nx + j - 1
    end
    redis.call('ZADD', KEYS[1], 'NX', unpack(args))
    lot_tickets('add', 'open', ts)
  end
  nx = nx + placed
  local left = redis.call('ZCARD', KEYS[4])
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
  if redis.call('SISMEMBER', KEYS[12], v) == 0 and
    not redis.call('ZSCORE', KEYS[3], v) then return nil end
  return num(redis.call('HGET', KEYS[11], 'at'), 0)
end

-- Seats. Prelude, after opening.lua.

-- Seats held: live tokens plus tokens used up (sold). Every admission takes
-- a seat whether or not the room has a limit, so a limit set later counts
-- what is already out. A seat is freed only by taking its visitor out of
-- the active set (ZREM, or the expiry sweep), once per token, so freeing
-- twice is impossible; tokens past expiresAt that the sweep has not reached
-- yet do not count.
local function seats_held(p, now)
  return redis.call('ZCOUNT', KEYS[16], '(' .. now, '+inf') +
    num(redis.call('HGET', KEYS[17], 'sold'), 0)
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
  if not longest_ms and not created and redis.call('PTTL', KEYS[15]) > ttl - KEEP_EVERY_MS then return end
  for _, k in ipairs({KEYS[15], KEYS[18], KEYS[19], KEYS[17], KEYS[16], KEYS[20], KEYS[21]}) do
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

-- The priority counter must stay ahead of every priority ticket, as
-- ensure_seq does for the public one.
local function ensure_pseq(p, q)
  if redis.call('EXISTS', KEYS[18]) == 1 then return end
  local top = 0
  for _, k in ipairs({q, KEYS[13]}) do
    local t = redis.call('ZREVRANGEBYSCORE', k, '(0', '-inf', 'WITHSCORES', 'LIMIT', 0, 1)
    if t[2] then top = math.max(top, tonumber(t[2]) + PRIO_BASE) end
  end
  if top > 0 then redis.call('SET', KEYS[18], top) end
end

-- Positions never rise (except at the draw): a public visitor's position
-- counts the priority visitors who joined before it, not those who join
-- later. Those go ahead of it all the same; its position stands still
-- while they are admitted. pmark records, for each priority ticket (the
-- member, zero-padded so that members of one score sort by ticket), the
-- last public ticket given when it was taken (the score; 0 for a ticket
-- taken back after Redis lost the queue: counted by everyone).
local function mark_member(pticket) return string.format('%012d', pticket) end

local function mark_priority(p, q, pticket)
  if redis.call('ZCOUNT', q, '-inf', '(0') == 0 and redis.call('EXISTS', KEYS[13]) == 0 then
    redis.call('DEL', KEYS[19]) -- nobody in the band: the marks are spent
  end
  redis.call('ZADD', KEYS[19], num(redis.call('GET', KEYS[15]), 0), mark_member(pticket))
end

-- late_priority is how many priority visitors in the queue joined after
-- the public ticket at score: they are not counted in its position.
local function late_priority(p, q, score)
  if score <= 0 then return 0 end
  local before = redis.call('ZREVRANGEBYSCORE', KEYS[19], '(' .. score, '-inf', 'LIMIT', 0, 1)
  local last = tonumber(before[1]) or 0
  return redis.call('ZCOUNT', q, '(' .. (last - PRIO_BASE), '(0')
end

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
  if prio == 1 then return KEYS[21], s end
  return KEYS[20], s
end

local function mark_done(p, score)
  local sc = tonumber(score)
  if not sc or sc == 0 then return end -- 0: a token's place, no ticket
  local k, s = done_bit(p, sc)
  if s < 1 or s > DONE_MAX then return end
  redis.call('SETBIT', k, s, 1)
  done_now[#done_now + 1] = score
end

local function presence_on(cfg) return cfg.presence ~= 'off' end

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
    redis.call('ZADD', KEYS[22], now, v)
    redis.call('ZADD', KEYS[23], 'XX', now, v)
    if closing then redis.call('ZADD', KEYS[24], now, v) else redis.call('ZREM', KEYS[24], v) end
    local tk = redis.call('HGET', KEYS[8], v)
    if tk then
      redis.call('ZREM', KEYS[25], v)
      redis.call('HDEL', KEYS[8], v)
      redis.call('ZADD', KEYS[9], tk, v)
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
    redis.call('ZADD', KEYS[22], unpack(args))
    redis.call('ZADD', KEYS[23], 'XX', unpack(args))
    if closing then
      redis.call('ZADD', KEYS[24], unpack(args))
    else
      redis.call('ZREM', KEYS[24], unpack(names))
    end
    local tk = redis.call('HMGET', KEYS[8], unpack(names))
    local came = {}
    for j = 1, #names do
      if tk[j] then
        redis.call('ZREM', KEYS[25], names[j])
        redis.call('HDEL', KEYS[8], names[j])
        redis.call('ZADD', KEYS[9], tk[j], names[j])
        came[#came + 1] = tk[j]
      end
    end
    lot_tickets('back', nil, came)
  end
  if next(cfg) == nil then
    -- As keep_while_used (idle.lua): pushed at most once every
    -- KEEP_EVERY_MS; a set this call made has no expiry yet (PTTL -1).
    if redis.call('PTTL', KEYS[22]) < idle_ms - KEEP_EVERY_MS then redis.call('PEXPIRE', KEYS[22], idle_ms) end
    if closing then redis.call('PEXPIRE', KEYS[24], idle_ms) end
  end
end

-- The place of v among those who came back or are set aside (0-based),
-- or nil. Those ahead of the whole queue.
local function presence_place(p, v)
  local r = redis.call('ZRANK', KEYS[9], v)
  if r then return r end
  if redis.call('ZSCORE', KEYS[25], v) then
    return redis.call('ZCARD', KEYS[9])
  end
  return nil
end

-- How many stand ahead of the queue: those who came back.
local function presence_ahead(p)
  return redis.call('ZCARD', KEYS[9])
end

-- admitted_seen starts the token-use watch of visitors just admitted,
-- from when each was last seen: one who left shortly before its turn gives
-- the slot back awayAfter after leaving, not after admission.
local function admitted_seen(p, cfg, vs, now)
  if not presence_on(cfg) or #vs == 0 then return end
  for i = 1, #vs, ZADD_CHUNK do
    local names = {}
    for j = i, math.min(i + ZADD_CHUNK - 1, #vs) do names[#names + 1] = vs[j] end
    local s = redis.call('ZMSCORE', KEYS[22], unpack(names))
    local args = {}
    for j = 1, #names do
      args[#args + 1] = tonumber(s[j]) or now
      args[#args + 1] = names[j]
    end
    redis.call('ZADD', KEYS[23], unpack(args))
  end
  if next(cfg) == nil then
    redis.call('PEXPIRE', KEYS[23], idle_ms)
  end
end

-- join_method answers a join of a visitor who holds no place yet when the
-- method says so: {6, 0, 0, 0, message} closed, or {2, notBefore,
-- expiresAt, 1} admitted at once. nil: join as usual.
local function join_method(p, cfg, v, now, ttl_ms, max_ms, keep_ms)
  local m = cfg.method
  if m == 'reject' then return {6, 0, 0, 0, 0, num(cfg.v, 0), cfg.message or ''} end
  if m ~= 'passthrough' or sold_out(p, cfg, now) then return nil end
  local ttl = num(cfg.ttlMs, ttl_ms)
  local exp = now + ttl
  local cap = now + math.max(num(cfg.maxMs, max_ms), ttl)
  redis.call('SET', p .. 't:' .. v, now .. ':' .. exp .. ':' .. cap, 'PX', cap - now + keep_ms)
  redis.call('ZADD', KEYS[16], exp, v)
  redis.call('HINCRBY', KEYS[17], 'admitted', 1)
  admitted_seen(p, cfg, {v}, now)
  keep_while_used(p, cfg, cap - now + keep_ms)
  local paused = 0
  if cfg.paused == '1' then paused = 1 end
  return {2, now, exp, 1, paused, num(cfg.v, 0), cfg.message or ''}
end

-- The size of the draw a waiting visitor of a random room is in: everyone
-- with a ticket (and those of a draw under way, who will have one); -1
-- when the room is not random.
local function lottery_size(cfg, q, undrawn_left)
  if cfg.method ~= 'random' then return -1 end
  return redis.call('ZCARD', q) + (undrawn_left or 0)
end

-- fresh: runs first, before invite.lua and join.lua, in the same script.
-- When the room's settings changed since, the
-- join does nothing and returns {-3, version}: the caller reads the
-- settings again, checks its gates and joins again.
if ARGV[12] then
  local v = tonumber(redis.call('HGET', KEYS[10], 'v') or '0')
  if v ~= tonumber(ARGV[12]) then return {-3, v, 0, 0, 0, 0, ''} end
end

-- joinroom: the start of every join, before join.lua and in the same
-- script: what a join reads and does about the room, whoever joins. A
-- batch of joins (joinbatch.lua) runs it once for all of them.
local p = ARGV[1]
local now = now_ms()
local cfg = load_cfg(p)
lot_walk(p, cfg, KEYS[1], now)
local paused = 0
if cfg.paused == '1' then paused = 1 end
local draw_next, undrawn_left = maybe_open(p, cfg, now, tonumber(ARGV[3]), ARGV[4])

local function join_visitor(ARGV, vo)
-- invite: runs before the join script's body, in the same script, so a
-- code's use is recorded atomically with the join it admits.
-- A visitor who holds a place (queued, pre-queued, in a draw, set aside or
-- back from away, or an entry token still valid) joins as always and uses
-- nothing. Otherwise, in an invite-only room, a code is required, and a
-- priority code is taken in any room: one of its uses is taken and the
-- join below gives a ticket of the priority band (priority.lua). A priority
-- code also moves a visitor who waits in the public band (queued or
-- pre-queued) into the priority band, for one use: its public ticket is
-- given up. Nothing is used in a room whose method turns new visitors
-- away. Returns {-2, …} without a code, {-1, …} when its uses are gone.
do
  local p, v = ARGV[1], ARGV[2]
  local prio = ARGV[11] == '1' and (ARGV[8] or '') ~= ''
  local only = redis.call('HGET', KEYS[10], 'inviteOnly') == '1'
  if (only or prio) and redis.call('HGET', KEYS[10], 'method') ~= 'reject' then
    local score = tonumber(redis.call('ZSCORE', KEYS[1], v))
    local pre = redis.call('SISMEMBER', KEYS[14], v) == 1
    local holds = score ~= nil or pre or redis.call('ZSCORE', KEYS[13], v) or
      redis.call('ZSCORE', KEYS[9], v) or redis.call('ZSCORE', KEYS[25], v) or
      (redis.call('EXISTS', KEYS[11]) == 1 and undrawn(p, v))
    if not holds then
      local nb, exp = read_token(KEYS[vo + 1])
      holds = nb ~= nil and now_ms() < exp
    end
    local upgrade = prio and ((score ~= nil and score > 0) or pre)
    if not holds or upgrade then
      if (ARGV[8] or '') == '' then return {-2, 0, 0, 0, 0, 0, ''} end
      -- The code's key is built here: the join's KEYS are the same with
      -- or without a code (scripts.go).
      local k = p .. 'inv:' .. ARGV[8]
      local n = redis.call('INCR', k)
      if n == 1 then redis.call('PEXPIREAT', k, tonumber(ARGV[10]) + 86400000) end
      if n > tonumber(ARGV[9]) then
        redis.call('DECR', k)
        return {-1, 0, 0, 0, 0, 0, ''}
      end
      if upgrade then
        -- The public ticket is given up for good (retake.lua).
        if score then
          redis.call('SET', KEYS[vo + 2], score, 'PX', 86400000)
          mark_done(p, score)
          if lot_begin(p, redis.call('HGET', KEYS[10], 'method')) then
            lot_tickets('remove', 'upgrade', {score})
          end
        end
        redis.call('ZREM', KEYS[1], v)
        redis.call('SREM', KEYS[14], v)
      end
    end
  end
end

-- join: one visitor's join, after joinroom.lua (whose locals p, now, cfg,
-- paused, draw_next and undrawn_left it reads) in the same script; in a
-- batch of joins (joinbatch.lua) it is the body of a function run once
-- per visitor. With a priority code, whose use invite.lua took when it ran
-- first, a new ticket is one of the priority band (priority.lua).
-- The reply is read by joinReply in replies.go, field for field.
-- Returns {code, a, b, new, paused, settings, message, seq, now, draw, prio}: 1 waiting
-- (a = 0-based rank), 2 admitted (a = notBefore, b = expiresAt), 4 in the
-- pre-queue before opening, or not yet drawn after it (a = opensAt, or the
-- moment of opening), 6 closed by the room's method (method.lua). new = 1
-- when a ticket (or pre-queue place) was taken; paused = 1 when the room is
-- paused, as status says; settings is the room's settings version and
-- message its message to the waiting ("" = none). seq is the waiting
-- visitor's ticket (0 otherwise) and now the Redis time, which the
-- visitor's credential carries. draw (waiting only) is the size of a
-- random room's lottery, -1 when the room is not random; prio is 1 for a
-- ticket of the priority band.
local v = ARGV[2]
seen_many(p, cfg, {v}, now)
local nb, exp = read_token(KEYS[vo + 1])
if nb then
  if now < exp then return {2, nb, exp, 0, paused, num(cfg.v, 0), cfg.message or ''} end
  redis.call('DEL', KEYS[vo + 1]) -- expired unused: a new ticket at the back
end

-- rank_of is the 0-based place of a queued visitor, counting the visitors
-- of a draw under way that will be placed ahead of it.
local function rank_of(r)
  if r and draw_next and tonumber(redis.call('ZSCORE', KEYS[1], v)) >= draw_next then
    return r + undrawn_left
  end
  return r
end

local r = redis.call('ZRANK', KEYS[1], v)
if r then
  local score = tonumber(redis.call('ZSCORE', KEYS[1], v))
  local s, prio = ticket_of(score)
  r = r - late_priority(p, KEYS[1], score)
  return {1, rank_of(r) + presence_ahead(p), 0, 0, paused, num(cfg.v, 0), cfg.message or '', s, now, lottery_size(cfg, KEYS[1], undrawn_left), prio}
end
-- Whether anyone is back from away, set aside or held for a scheduled
-- opening with priority: one command for the three sets, which are empty
-- in most rooms most of the time, instead of a look for v in each.
local aside = redis.call('EXISTS', KEYS[9], KEYS[25], KEYS[13]) > 0
local function ahead()
  if aside then return presence_ahead(p) end
  return 0
end
local back = aside and presence_place(p, v)
if back then return {1, back, 0, 0, paused, num(cfg.v, 0), cfg.message or '', 0, now, lottery_size(cfg, KEYS[1], undrawn_left)} end
if aside and redis.call('ZSCORE', KEYS[13], v) then
  return {4, num(cfg.opensAt, 0), 0, 0, paused, num(cfg.v, 0), cfg.message or ''}
end
redis.call('DEL', KEYS[vo + 3]) -- lost its place while away: a new ticket
if draw_next then
  local at = undrawn(p, v)
  if at then return {4, at, 0, 0, paused, num(cfg.v, 0), cfg.message or ''} end
end
local by_method = join_method(p, cfg, v, now, tonumber(ARGV[5]), tonumber(ARGV[6]), tonumber(ARGV[7]))
if by_method then return by_method end
local opens = num(cfg.opensAt, 0)
if ARGV[11] == '1' and (ARGV[8] or '') ~= '' then
  -- A priority ticket (invite.lua took the code's use): ahead of every
  -- public one, in join order; held in ppre until a scheduled opening.
  ensure_pseq(p, KEYS[1])
  redis.call('HSETNX', KEYS[17], 'born', now)
  local s = redis.call('INCR', KEYS[18])
  mark_priority(p, KEYS[1], s)
  keep_while_used(p, cfg, nil, true)
  if opens > now then
    redis.call('ZADD', KEYS[13], 'NX', s - PRIO_BASE, v)
    return {4, opens, 0, 1, paused, num(cfg.v, 0), cfg.message or ''}
  end
  redis.call('ZADD', KEYS[1], 'NX', s - PRIO_BASE, v)
  lot_tickets('add', 'join', {s - PRIO_BASE})
  return {1, rank_of(redis.call('ZRANK', KEYS[1], v)) + ahead(), 0, 1, paused, num(cfg.v, 0), cfg.message or '', s, now, lottery_size(cfg, KEYS[1], undrawn_left), 1}
end
if opens > now then
  local added = redis.call('SADD', KEYS[14], v)
  return {4, opens, 0, added, paused, num(cfg.v, 0), cfg.message or ''}
end
-- The ticket counter must stay ahead of every ticket in the queue even if
-- it expired while the room sat idle with visitors (or was lost): a
-- counter INCR had to make goes on after the queue's last ticket.
local s = redis.call('INCR', KEYS[15])
local created = s == 1
if created then
  local top = redis.call('ZRANGE', KEYS[1], -1, -1, 'WITHSCORES')
  if top[2] and tonumber(top[2]) > 0 then
    s = tonumber(top[2]) + 1
    redis.call('SET', KEYS[15], s)
  end
end
-- The moment this room's state began: tickets taken before it were taken
-- from a Redis that has lost them since (see retake.lua).
if redis.call('HSETNX', KEYS[17], 'born', now) == 1 then created = true end
redis.call('ZADD', KEYS[1], 'NX', s, v)
lot_tickets('add', 'join', {s})
keep_while_used(p, cfg, nil, created)
return {1, rank_of(redis.call('ZRANK', KEYS[1], v)) + ahead(), 0, 1, paused, num(cfg.v, 0), cfg.message or '', s, now, lottery_size(cfg, KEYS[1], undrawn_left)}

end
-- joinbatch: the end of a batch of joins of one room (joinBatchScript,
-- coalesce.go), after fresh.lua and joinroom.lua, which run once for
-- the batch, and the definition of join_visitor(ARGV, vo):
-- invite.lua and join.lua as the body of a function, with that visitor's
-- ARGV. The visitors are joined in arrival order, each as if its own call
-- ran right after the one before, at the same moment. A visitor's V keys
-- are KEYS[vo + 1 ..]: the visitors' keys follow the room's, NV per
-- visitor. ARGV = join.lua's with an empty visitor and no invite code,
-- then the visitors from ARGV[13].
-- Returns {paused, settings, message, now, n, e_1 … e_n, r_1 … r_n} for
-- the n visitors, in order: e_i is visitor i's join reply (joinReply),
-- or, for a new visitor given a ticket with others, its ticket alone, r_i
-- being then its 0-based place (waiting, new, no draw: the rest of its
-- reply is the header's); or fresh.lua's one reply, for all of them. A
-- list of numbers costs Redis a fraction of what a reply of its own for
-- each visitor does.
--
-- In the room most herds meet (first come first served, open, not
-- invite-only, no draw under way, nobody away, back or held for an
-- opening with priority) a visitor new to the room takes the next ticket
-- and nothing else: those are gathered and given their tickets together,
-- with one command each for the counter, the queue and the presence
-- sets, instead of join.lua's commands for each. Anyone else (a visitor
-- who holds a ticket or a token record, or comes twice) is joined by
-- join_visitor, after the new visitors before it have their tickets, so
-- tickets follow arrival.
local n = #ARGV - 12
local out = {paused, num(cfg.v, 0), cfg.message or '', now, n}
for i = 1, n do out[5 + n + i] = 0 end
local function argv(v)
  return {p, v, ARGV[3], ARGV[4], ARGV[5], ARGV[6], ARGV[7], '', '1', '0', '0', ARGV[12]}
end
local fast = not draw_next and (cfg.method == nil or cfg.method == 'fifo') and cfg.inviteOnly ~= '1' and
  num(cfg.opensAt, 0) <= now and redis.call('EXISTS', KEYS[9], KEYS[25], KEYS[13]) == 0
if not fast then
  for i = 1, n do
    out[5 + i] = join_visitor(argv(ARGV[12 + i]), NK + (i - 1) * NV)
  end
  return out
end

-- Nobody is away, so marking every visitor seen first moves nobody back
-- from away: it is what join.lua's seen_many did for each.
local vs, first = {}, {}
for i = 1, n do
  local v = ARGV[12 + i]
  if not first[v] then
    first[v] = i
    vs[#vs + 1] = v
  end
end
seen_many(p, cfg, vs, now)
-- Whether each holds a token record or a ticket: one command each for
-- all of them. What one visitor's join does changes neither for another.
local tkeys = {}
for i = 1, n do
  local vo = NK + (i - 1) * NV
  tkeys[i] = KEYS[vo + 1]
end
local records = redis.call('MGET', unpack(tkeys))
local scores = redis.call('ZMSCORE', KEYS[1], unpack(ARGV, 13, 12 + n))

local new = {} -- the new visitors (their indexes) not yet given a ticket
local function give_tickets()
  local m = #new
  if m == 0 then return end
  local s = redis.call('INCRBY', KEYS[15], m)
  -- As join.lua: a counter INCRBY had to make goes on after the queue's
  -- last ticket.
  local created = s == m
  if created then
    local top = redis.call('ZRANGE', KEYS[1], -1, -1, 'WITHSCORES')
    if top[2] and tonumber(top[2]) > 0 then
      s = tonumber(top[2]) + m
      redis.call('SET', KEYS[15], s)
    end
  end
  if redis.call('HSETNX', KEYS[17], 'born', now) == 1 then created = true end
  local members, tickets, dropped = {}, {}, {}
  for k, i in ipairs(new) do
    local t = s - m + k
    members[#members + 1] = t
    members[#members + 1] = ARGV[12 + i]
    tickets[k] = t
    local vo = NK + (i - 1) * NV
    dropped[k] = KEYS[vo + 3]
  end
  redis.call('DEL', unpack(dropped))
  redis.call('ZADD', KEYS[1], 'NX', unpack(members))
  lot_tickets('add', 'join', tickets)
  keep_while_used(p, cfg, nil, created)
  -- The new tickets are the queue's last: the counter is ahead of every
  -- ticket in it.
  local last = redis.call('ZCARD', KEYS[1]) - 1
  for k, i in ipairs(new) do
    out[5 + i] = tickets[k]
    out[5 + n + i] = last - m + k
  end
  new = {}
end

for i = 1, n do
  if first[ARGV[12 + i]] ~= i or records[i] or scores[i] then
    give_tickets()
    out[5 + i] = join_visitor(argv(ARGV[12 + i]), NK + (i - 1) * NV)
  else
    new[#new + 1] = i
  end
end
give_tickets()
return out

