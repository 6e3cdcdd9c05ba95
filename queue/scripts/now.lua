-- prelude shared by every script: Redis TIME is the one clock, in ms.
local function now_ms()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end

-- A token record is "notBefore:expiresAt" in ms; it outlives expiresAt by a
-- retention so status can say "expired".
local function read_token(key)
  local rec = redis.call('GET', key)
  if not rec then return nil end
  local nb, exp = string.match(rec, '^(%d+):(%d+)')
  return tonumber(nb), tonumber(exp)
end
