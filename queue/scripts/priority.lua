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
