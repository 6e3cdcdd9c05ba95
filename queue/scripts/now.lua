-- Prelude shared by every script. Keys of a room are built from the
-- prefix "wr:{room}:" (ARGV[1]); KEYS[1] is always a key of that slot, so a
-- cluster routes the script to the node holding every key it touches.

-- Redis TIME is the one clock, in ms.
local function now_ms()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end

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

-- The room's settings: those fields of the cfg hash that the script
-- reads, as a table of those that are set. When a script is built
-- (cfgReadLua, scripts.go) CFG_NAMES becomes the names of the fields its
-- text reads as cfg.<field>, the version v first, and CFG_TABLE the table
-- of their values by name: a call asks for a few fields by name with one
-- HMGET and builds one small table, instead of reading every field the
-- room set and keeping those the schema declares. Every configured room
-- has a version, so a room without one is a room nobody configured: an
-- empty table.
local function load_cfg(p)
  local f = redis.call('HMGET', K.cfg, CFG_NAMES)
  if not f[1] then return {} end
  return CFG_TABLE
end

local function num(v, default)
  local n = tonumber(v)
  if n == nil then return default end
  return n
end

-- Park-Miller minimal standard generator: exact in doubles, seeded by the
-- caller (scripts must not depend on math.random's seeding).
local function next_rand(seed)
  return (seed * 16807) % 2147483647
end

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

-- The ticket counter must stay ahead of every ticket in the queue even if
-- it expired while the room sat idle with visitors (or was lost).
local function ensure_seq(p, q)
  if redis.call('EXISTS', K.seq) == 1 then return end
  local top = redis.call('ZRANGE', q, -1, -1, 'WITHSCORES')
  if top[2] and tonumber(top[2]) > 0 then redis.call('SET', K.seq, top[2]) end
end

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
  if redis.call('EXISTS', K.pseq) == 1 then return end
  local top = 0
  for _, k in ipairs({q, K.ppre}) do
    local t = redis.call('ZREVRANGEBYSCORE', k, '(0', '-inf', 'WITHSCORES', 'LIMIT', 0, 1)
    if t[2] then top = math.max(top, tonumber(t[2]) + PRIO_BASE) end
  end
  if top > 0 then redis.call('SET', K.pseq, top) end
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
  if redis.call('ZCOUNT', q, '-inf', '(0') == 0 and redis.call('EXISTS', K.ppre) == 0 then
    redis.call('DEL', K.pmark) -- nobody in the band: the marks are spent
  end
  redis.call('ZADD', K.pmark, num(redis.call('GET', K.seq), 0), mark_member(pticket))
end

-- late_priority is how many priority visitors in the queue joined after
-- the public ticket at score: they are not counted in its position.
local function late_priority(p, q, score)
  if score <= 0 then return 0 end
  local before = redis.call('ZREVRANGEBYSCORE', K.pmark, '(' .. score, '-inf', 'LIMIT', 0, 1)
  local last = tonumber(before[1]) or 0
  return redis.call('ZCOUNT', q, '(' .. (last - PRIO_BASE), '(0')
end

-- The ticket a queue score stands for, and 1 when it is a priority one.
local function ticket_of(score)
  if score < 0 then return score + PRIO_BASE, 1 end
  return score, 0
end

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

local function is_done(p, score)
  local k, s = done_bit(p, score)
  if s < 1 or s > DONE_MAX then return false end
  return redis.call('GETBIT', k, s) == 1
end
