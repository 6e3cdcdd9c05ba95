-- fresh: runs first, before invite.lua and join.lua, in the same script.
-- ARGV[12] = settings: the settings version the caller's own gates (proof of work, join limits) were read at
-- When the room's settings changed since, the
-- join does nothing and returns {-3, version}: the caller reads the
-- settings again, checks its gates and joins again.
if ARGV[12] then
  local v = tonumber(redis.call('HGET', K.cfg, 'v') or '0')
  if v ~= tonumber(ARGV[12]) then return {-3, v, 0, 0, 0, 0, ''} end
end
