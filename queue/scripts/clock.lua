-- The clock. Prelude shared by every script, after lotlog.lua. Keys of a
-- room are built from the prefix "wr:{room}:" (ARGV[1]); KEYS[1] is always
-- a key of that slot, so a cluster routes the script to the node holding
-- every key it touches.

-- Redis TIME is the one clock, in ms.
local function now_ms()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
