-- join: one visitor's join, after joinroom.lua (whose locals p, now, cfg,
-- paused, draw_next and undrawn_left it reads) in the same script; in a
-- batch of joins (joinbatch.lua) it is the body of a function run once
-- per visitor. With a priority code, whose use invite.lua took when it ran
-- first, a new ticket is one of the priority band (priority.lua).
-- ARGV[2] = visitor: the visitor's id
-- ARGV[5] = ttlMs: an entry token's lifetime in ms (the cfg hash overrides it)
-- ARGV[6] = maxMs: the longest a token's expiry may slide, in ms (the cfg hash overrides it)
-- ARGV[7] = retentionMs: how long a record outlives its token, in ms
-- ARGV[8] = code: the invite code's id, when invite.lua ran first ("" or absent: none)
-- ARGV[11] = priority: 1 when that code is a priority one, when invite.lua ran first
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
local nb, exp = read_token(V.t)
if nb then
  if now < exp then return {2, nb, exp, 0, paused, num(cfg.v, 0), cfg.message or ''} end
  redis.call('DEL', V.t) -- expired unused: a new ticket at the back
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
local aside = redis.call('EXISTS', K.back, K.away, K.ppre) > 0
local function ahead()
  if aside then return presence_ahead(p) end
  return 0
end
local back = aside and presence_place(p, v)
if back then return {1, back, 0, 0, paused, num(cfg.v, 0), cfg.message or '', 0, now, lottery_size(cfg, KEYS[1], undrawn_left)} end
if aside and redis.call('ZSCORE', K.ppre, v) then
  return {4, num(cfg.opensAt, 0), 0, 0, paused, num(cfg.v, 0), cfg.message or ''}
end
redis.call('DEL', V.dropped) -- lost its place while away: a new ticket
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
  redis.call('HSETNX', K.stats, 'born', now)
  local s = redis.call('INCR', K.pseq)
  mark_priority(p, KEYS[1], s)
  keep_while_used(p, cfg, nil, true)
  if opens > now then
    redis.call('ZADD', K.ppre, 'NX', s - PRIO_BASE, v)
    return {4, opens, 0, 1, paused, num(cfg.v, 0), cfg.message or ''}
  end
  redis.call('ZADD', KEYS[1], 'NX', s - PRIO_BASE, v)
  lot_tickets('add', 'join', {s - PRIO_BASE})
  return {1, rank_of(redis.call('ZRANK', KEYS[1], v)) + ahead(), 0, 1, paused, num(cfg.v, 0), cfg.message or '', s, now, lottery_size(cfg, KEYS[1], undrawn_left), 1}
end
if opens > now then
  local added = redis.call('SADD', K.pre, v)
  return {4, opens, 0, added, paused, num(cfg.v, 0), cfg.message or ''}
end
-- The ticket counter must stay ahead of every ticket in the queue even if
-- it expired while the room sat idle with visitors (or was lost): a
-- counter INCR had to make goes on after the queue's last ticket.
local s = redis.call('INCR', K.seq)
local created = s == 1
if created then
  local top = redis.call('ZRANGE', KEYS[1], -1, -1, 'WITHSCORES')
  if top[2] and tonumber(top[2]) > 0 then
    s = tonumber(top[2]) + 1
    redis.call('SET', K.seq, s)
  end
end
-- The moment this room's state began: tickets taken before it were taken
-- from a Redis that has lost them since (see retake.lua).
if redis.call('HSETNX', K.stats, 'born', now) == 1 then created = true end
redis.call('ZADD', KEYS[1], 'NX', s, v)
lot_tickets('add', 'join', {s})
keep_while_used(p, cfg, nil, created)
return {1, rank_of(redis.call('ZRANK', KEYS[1], v)) + ahead(), 0, 1, paused, num(cfg.v, 0), cfg.message or '', s, now, lottery_size(cfg, KEYS[1], undrawn_left)}
