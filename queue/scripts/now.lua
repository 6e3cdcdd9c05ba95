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

-- The room's settings (HGETALL of the cfg hash) as a table.
local function load_cfg(p)
  local flat = redis.call('HGETALL', p .. 'cfg')
  local cfg = {}
  for i = 1, #flat, 2 do cfg[flat[i]] = flat[i + 1] end
  return cfg
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

-- At opening time the pre-queue is ordered by a fair random draw and given
-- tickets before anyone who joins after opening; an open event on channel
-- tells the hubs that those visitors have places now. Returns how many
-- moved.
local function maybe_open(p, cfg, now, seed, channel)
  local opens = num(cfg.opensAt, 0)
  if opens == 0 or now < opens then return 0 end
  local members = redis.call('SMEMBERS', p .. 'pre')
  if #members == 0 then return 0 end
  table.sort(members) -- SMEMBERS order is not defined; start from a fixed one
  for i = #members, 2, -1 do
    seed = next_rand(seed)
    local j = 1 + (seed % i)
    members[i], members[j] = members[j], members[i]
  end
  for i = 1, #members do
    local s = redis.call('INCR', p .. 'seq')
    redis.call('ZADD', p .. 'q', 'NX', s, members[i])
  end
  redis.call('DEL', p .. 'pre')
  redis.call('PUBLISH', channel, '{"type":"open","count":' .. #members .. '}')
  return #members
end

-- Seats held: live tokens plus tokens used up (sold). Every admission takes
-- a seat whether or not the room has a limit, so a limit set later counts
-- what is already out. A seat is freed only by taking its visitor out of
-- the active set (ZREM, or the expiry sweep), once per token, so freeing
-- twice is impossible; tokens past expiresAt that the sweep has not reached
-- yet do not count.
local function seats_held(p, now)
  return redis.call('ZCOUNT', p .. 'active', '(' .. now, '+inf') +
    num(redis.call('HGET', p .. 'stats', 'sold'), 0)
end

-- Seats held against the room's seats; 0 seats means no limit.
local function sold_out(p, cfg, now)
  local seats = num(cfg.seats, 0)
  if seats <= 0 then return false end
  return seats_held(p, now) >= seats
end
