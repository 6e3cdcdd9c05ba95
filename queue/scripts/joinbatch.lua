-- joinbatch: the end of a batch of joins of one room (joinBatchScript,
-- coalesce.go), after fresh.lua and joinroom.lua, which run once for
-- the batch, and the definition of join_visitor(ARGV, vo):
-- invite.lua and join.lua as the body of a function, with that visitor's
-- ARGV. The visitors are joined in arrival order, each as if its own call
-- ran right after the one before, at the same moment. A visitor's V keys
-- are KEYS[vo + 1 ..]: the visitors' keys follow the room's, NV per
-- visitor. ARGV = join.lua's with an empty visitor and no invite code,
-- then the visitors from ARGV[13].
-- ARGV[2] = visitor: "" (the visitors are ARGV[13..])
-- ARGV[5] = ttlMs: an entry token's lifetime in ms (the cfg hash overrides it)
-- ARGV[6] = maxMs: the longest a token's expiry may slide, in ms (the cfg hash overrides it)
-- ARGV[7] = retentionMs: how long a record outlives its token, in ms
-- ARGV[8] = code: "" (a batch joins without invite codes)
-- ARGV[9] = uses: unused
-- ARGV[10] = codeExpiry: unused
-- ARGV[11] = priority: 0
-- ARGV[13..] = visitors: the visitors to join, in arrival order
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
  num(cfg.opensAt, 0) <= now and redis.call('EXISTS', K.back, K.away, K.ppre) == 0
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
  tkeys[i] = V.t
end
local records = redis.call('MGET', unpack(tkeys))
local scores = redis.call('ZMSCORE', KEYS[1], unpack(ARGV, 13, 12 + n))

local new = {} -- the new visitors (their indexes) not yet given a ticket
local function give_tickets()
  local m = #new
  if m == 0 then return end
  local s = redis.call('INCRBY', K.seq, m)
  -- As join.lua: a counter INCRBY had to make goes on after the queue's
  -- last ticket.
  local created = s == m
  if created then
    local top = redis.call('ZRANGE', KEYS[1], -1, -1, 'WITHSCORES')
    if top[2] and tonumber(top[2]) > 0 then
      s = tonumber(top[2]) + m
      redis.call('SET', K.seq, s)
    end
  end
  if redis.call('HSETNX', K.stats, 'born', now) == 1 then created = true end
  local members, tickets, dropped = {}, {}, {}
  for k, i in ipairs(new) do
    local t = s - m + k
    members[#members + 1] = t
    members[#members + 1] = ARGV[12 + i]
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
