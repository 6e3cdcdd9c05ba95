-- status: visitors' states.
-- ARGV[1] = prefix: the room's key prefix, wr:{room}:
-- ARGV[2] = seed: a random seed for an opening's draw
-- ARGV[3] = channel: the room's channel (a leading '!': SPUBLISH, see publish.lua)
-- ARGV[4..] = visitors: the visitors asked about
-- The reply is read by statusReply in replies.go, field for field.
-- Returns a room header {rate*1000, paused, soldOut, opensAt, waiting,
-- settings version, message, draw} (draw: the size of a random room's
-- lottery, -1 when the room is not random)
-- then code, a, b per visitor: 0 not in queue, 1 waiting (a = 0-based
-- rank), 2 admitted (a = notBefore, b = expiresAt), 3 expired, 4 pre-queue
-- (a = opensAt), or not yet drawn while a draw is under way (a = the moment
-- of opening; the place is not known yet), 5 place lost for being away.
-- A status is a sign of life of each visitor asked about (presence.lua).
local p = ARGV[1]
local now = now_ms()
local cfg = load_cfg(p)
lot_walk(p, cfg, KEYS[1], now)
-- A draw, a pre-queue and the priority band are rare: one EXISTS tells
-- most calls that the room has none, and they skip each one's reads.
local rare = redis.call('EXISTS', K.draw, K.ppre, K.pre, K.pmark) > 0
local draw_next, undrawn_left
if rare then draw_next, undrawn_left = maybe_open(p, cfg, now, tonumber(ARGV[2]), ARGV[3]) end
local rate = num(redis.call('HGET', K.stats, 'rate'), 0)
local paused = 0
if cfg.paused == '1' then paused = 1 end
local soldout = 0
if sold_out(p, cfg, now) then soldout = 1 end
local out = {math.floor(rate * 1000), paused, soldout, num(cfg.opensAt, 0),
  redis.call('ZCARD', KEYS[1]) + (undrawn_left or 0), num(cfg.v, 0), cfg.message or '',
  lottery_size(cfg, KEYS[1], undrawn_left)}

local visitors = {}
for i = 4, #ARGV do visitors[#visitors + 1] = ARGV[i] end
local n = #visitors
seen_many(p, cfg, visitors, now)

-- Ranks. A visitor in the queue holds no token (admission pops before it
-- writes one), so the rank is read first. For a batch (a hub's reconcile,
-- sent in position order) one ZMSCORE finds who is queued and one range
-- walk from the first of them gives most ranks, instead of a ZRANK each.
local rank = {}
if n >= 8 then
  local scores = redis.call('ZMSCORE', KEYS[1], unpack(visitors))
  local min_s, max_s, min_v
  for i = 1, n do
    local sc = tonumber(scores[i])
    if sc then
      if not min_s or sc < min_s then min_s, min_v = sc, visitors[i] end
      if not max_s or sc > max_s then max_s = sc end
    end
  end
  if min_v then
    local r0 = redis.call('ZRANK', KEYS[1], min_v)
    local walk = redis.call('ZRANGEBYSCORE', KEYS[1], min_s, max_s, 'LIMIT', 0, math.max(1000, 8 * n))
    local want = {}
    for i = 1, n do if scores[i] then want[visitors[i]] = true end end
    for j = 1, #walk do
      if want[walk[j]] then rank[walk[j]] = r0 + j - 1 end
    end
    for i = 1, n do
      local v = visitors[i]
      if scores[i] and not rank[v] then rank[v] = redis.call('ZRANK', KEYS[1], v) end
    end
  end
else
  for i = 1, n do
    local r = redis.call('ZRANK', KEYS[1], visitors[i])
    if r then rank[visitors[i]] = r end
  end
end

-- While a draw is under way, whoever joined after opening stands behind
-- every visitor still in the pool.
if draw_next then
  for v, r in pairs(rank) do
    if tonumber(redis.call('ZSCORE', KEYS[1], v)) >= draw_next then rank[v] = r + undrawn_left end
  end
end

-- Priority visitors who joined after a public visitor do not raise its
-- position (priority.lua).
if rare and redis.call('EXISTS', K.pmark) == 1 and redis.call('ZCOUNT', KEYS[1], '-inf', '(0') > 0 then
  for v, r in pairs(rank) do
    rank[v] = r - late_priority(p, KEYS[1], tonumber(redis.call('ZSCORE', KEYS[1], v)))
  end
end

local pre = K.pre
local ahead = presence_ahead(p)
for i = 1, n do
  local v = visitors[i]
  local code, a, b = 0, 0, 0
  local back = not rank[v] and presence_place(p, v)
  if rank[v] then
    code, a = 1, rank[v] + ahead
  elseif back then
    code, a = 1, back
  else
    -- One of a batch of any size: its key is built here.
    local nb, exp = read_token(p .. 't:' .. v)
    if nb then
      if now < exp then code, a, b = 2, nb, exp else code = 3 end
    elseif rare and (redis.call('SISMEMBER', pre, v) == 1 or redis.call('ZSCORE', K.ppre, v)) then
      code, a = 4, num(cfg.opensAt, 0)
    elseif draw_next then
      local at = undrawn(p, v)
      if at then code, a = 4, at end
    end
    if code == 0 and dropped_away(p, v) then code = 5 end
  end
  out[#out + 1] = code; out[#out + 1] = a; out[#out + 1] = b
end
return out
