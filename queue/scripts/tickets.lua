-- The public ticket counter. Prelude, after idle.lua.

-- The ticket counter must stay ahead of every ticket in the queue even if
-- it expired while the room sat idle with visitors (or was lost).
local function ensure_seq(p, q)
  if redis.call('EXISTS', K.seq) == 1 then return end
  local top = redis.call('ZRANGE', q, -1, -1, 'WITHSCORES')
  if top[2] and tonumber(top[2]) > 0 then redis.call('SET', K.seq, top[2]) end
end
