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
  redis.call('ZADD', K.active, exp, v)
  redis.call('HINCRBY', K.stats, 'admitted', 1)
  admitted_seen(p, cfg, {v}, now)
  keep_while_used(p, cfg, cap - now + keep_ms)
  local paused = 0
  if cfg.paused == '1' then paused = 1 end
  return {2, now, exp, 1, paused, num(cfg.v, 0), cfg.message or ''}
end

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
