-- consume: KEYS = token, active; ARGV = visitor, notBefore, use (1 consumes)
-- Returns {code, wait}: 1 valid (consumed when use = 1), -1 unknown or used,
-- -2 too early (wait = ms until notBefore), -3 expired.
local nb, exp = read_token(KEYS[1])
if not nb or nb ~= tonumber(ARGV[2]) then return {-1, 0} end
local now = now_ms()
if now < nb then return {-2, nb - now} end
if now >= exp then return {-3, 0} end
if ARGV[3] == '1' then
  redis.call('DEL', KEYS[1])
  redis.call('ZREM', KEYS[2], ARGV[1])
end
return {1, 0}
