-- The room's settings. Prelude, after token.lua.

-- The room's settings: those fields of the cfg hash that the script
-- reads, as a table of those that are set. When a script is generated
-- (cfgReadLua, scriptgen_test.go) CFG_NAMES becomes the names of the fields its
-- text reads as cfg.<field>, the version v first, and CFG_TABLE the table
-- of their values by name: a call asks for a few fields by name with one
-- HMGET and builds one small table, instead of reading every field the
-- room set and keeping those the schema declares. Every configured room
-- has a version, so a room without one is a room nobody configured: an
-- empty table.
local function load_cfg(p)
  local f = redis.call('HMGET', K.cfg, CFG_NAMES)
  if not f[1] then return {} end
  return CFG_TABLE
end

local function num(v, default)
  local n = tonumber(v)
  if n == nil then return default end
  return n
end
