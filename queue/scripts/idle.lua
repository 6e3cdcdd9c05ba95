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
  if not longest_ms and not created and redis.call('PTTL', K.seq) > ttl - KEEP_EVERY_MS then return end
  for _, k in ipairs({K.seq, K.pseq, K.pmark, K.stats, K.active, K.done, K.pdone}) do
    redis.call('PEXPIRE', k, ttl)
  end
end
