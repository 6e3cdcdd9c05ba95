-- joinbatch: the end of a batch of joins of one room (joinBatchScript,
-- coalesce.go), after fresh.lua and joinroom.lua, which run once for the
-- batch, and the definition of join_visitor(ARGV, vo): invite.lua and
-- join.lua as the body of a function, with that visitor's ARGV. The
-- visitors are joined in arrival order, each as if its own call ran
-- right after the one before, at the same moment. A visitor's V keys are
-- KEYS[vo + 1 ..]: the visitors' keys follow the room's, NV per visitor.
-- ARGV = join.lua's with an empty visitor and no invite code, then the
-- visitors from ARGV[13]. Returns the join reply of each visitor, in
-- order (or fresh.lua's one reply, for all of them).
--
-- In the room most herds meet (first come first served, open, not
-- invite-only, no draw under way, nobody away, back or held for an
-- opening with priority) a visitor new to the room takes the next ticket
-- and nothing else: those are gathered and given their tickets together,
-- with one command each for the counter, the queue and the presence
-- sets, instead of join.lua's commands for each. Anyone else (a visitor
-- who holds a ticket or a token record) is joined by join_visitor, after
-- the new visitors before it have their tickets, so tickets follow
-- arrival.
local out = {}
local function argv(v)
  return {p, v, ARGV[3], ARGV[4], ARGV[5], ARGV[6], ARGV[7], '', '1', '0', '0', ARGV[12]}
end
local fast = not draw_next and (cfg.method == nil or cfg.method == 'fifo') and cfg.inviteOnly ~= '1' and
  num(cfg.opensAt, 0) <= now and redis.call('EXISTS', K.back, K.away, K.ppre) == 0
if not fast then
  for i = 13, #ARGV do
    out[i - 12] = join_visitor(argv(ARGV[i]), NK + (i - 13) * NV)
  end
  return out
end

-- Nobody is away, so marking every visitor seen first moves nobody back
-- from away: it is what join.lua's seen_many did for each.
local vs, first = {}, {}
for i = 13, #ARGV do
  if not first[ARGV[i]] then
    first[ARGV[i]] = i - 12
    vs[#vs + 1] = ARGV[i]
  end
end
seen_many(p, cfg, vs, now)

local new = {} -- indexes into out of the new visitors not yet given a ticket
local function give_tickets()
  local n = #new
  if n == 0 then return end
  local s = redis.call('INCRBY', K.seq, n)
  -- As join.lua: a counter INCRBY had to make goes on after the queue's
  -- last ticket.
  local created = s == n
  if created then
    local top = redis.call('ZRANGE', KEYS[1], -1, -1, 'WITHSCORES')
    if top[2] and tonumber(top[2]) > 0 then
      s = tonumber(top[2]) + n
      redis.call('SET', K.seq, s)
    end
  end
  if redis.call('HSETNX', K.stats, 'born', now) == 1 then created = true end
  local members, tickets, dropped = {}, {}, {}
  for k, i in ipairs(new) do
    local t = s - n + k
    members[#members + 1] = t
    members[#members + 1] = ARGV[i + 12]
    tickets[k] = t
    local vo = NK + (i - 1) * NV
    dropped[k] = V.dropped
  end
  redis.call('DEL', unpack(dropped))
  redis.call('ZADD', KEYS[1], 'NX', unpack(members))
  lot_tickets('add', 'join', tickets)
  keep_while_used(p, cfg, nil, created)
  -- The new tickets are the queue's last: the counter is ahead of every
  -- ticket in it.
  local last = redis.call('ZCARD', KEYS[1]) - 1
  for k, i in ipairs(new) do
    out[i] = {1, last - n + k, 0, 1, paused, num(cfg.v, 0), cfg.message or '', tickets[k], now, -1}
  end
  new = {}
end

for i = 13, #ARGV do
  local v, vo = ARGV[i], NK + (i - 13) * NV
  local at = first[v]
  if at ~= i - 12 then
    -- A second join of the same visitor in the batch: as a refresh.
    give_tickets()
    out[i - 12] = join_visitor(argv(v), vo)
  elseif redis.call('EXISTS', V.t) == 1 or redis.call('ZSCORE', KEYS[1], v) then
    give_tickets()
    out[i - 12] = join_visitor(argv(v), vo)
  else
    new[#new + 1] = i - 12
  end
end
give_tickets()
return out
