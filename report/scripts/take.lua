-- take: the joins of admitted visitors, each read once and deleted.
-- KEYS the room's join hashes, newest first; ARGV the visitors. Returns
-- each visitor's join ('' when none is known).
local out = {}
for i, v in ipairs(ARGV) do
  local val = false
  for _, k in ipairs(KEYS) do
    val = redis.call('HGET', k, v)
    if val then
      redis.call('HDEL', k, v)
      break
    end
  end
  out[i] = val or ''
end
return out
