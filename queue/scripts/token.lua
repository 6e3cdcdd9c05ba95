-- Entry token records. Prelude, after clock.lua.

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
