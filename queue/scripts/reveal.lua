-- reveal: the room's draw.
-- ARGV[1] = prefix: the room's key prefix, wr:{room}:
-- ARGV[2] = offset: the first id of the sorted list to return
-- ARGV[3] = limit: the most ids to return
-- Returns {seed, commit, committedAt, openedAt, n, doneAt, ids}: seed is
-- "" when the room has no draw. The caller shows the seed and ids only
-- when openedAt is set (the draw has run); ids are the sorted list from
-- offset, at most limit of them.
local p = ARGV[1]
local d = redis.call('HMGET', K.drawc, 'seed', 'commit', 'at', 'openedAt', 'n', 'doneAt')
local ids = {}
if d[4] then
  local off, lim = tonumber(ARGV[2]), tonumber(ARGV[3])
  if lim > 0 then ids = redis.call('ZRANGE', K.drawlist, off, off + lim - 1) end
end
return {d[1] or '', d[2] or '', d[3] or '0', d[4] or '0', d[5] or '0', d[6] or '', ids}
