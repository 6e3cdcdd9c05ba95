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
