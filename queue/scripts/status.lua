-- status: KEYS = queue; ARGV = prefix, seed, visitor...
-- Returns a room header {rate*1000, paused, soldOut, opensAt, waiting}
-- then code, a, b per visitor: 0 not in queue, 1 waiting (a = 0-based
-- rank), 2 admitted (a = notBefore, b = expiresAt), 3 expired, 4 pre-queue.
local p = ARGV[1]
local now = now_ms()
local cfg = load_cfg(p)
maybe_open(p, cfg, now, tonumber(ARGV[2]))
local rate = num(redis.call('HGET', p .. 'stats', 'rate'), 0)
local paused = 0
if cfg.paused == '1' then paused = 1 end
local soldout = 0
if sold_out(p, cfg) then soldout = 1 end
local out = {math.floor(rate * 1000), paused, soldout, num(cfg.opensAt, 0), redis.call('ZCARD', KEYS[1])}
local pre = p .. 'pre'
for i = 3, #ARGV do
  local v = ARGV[i]
  local nb, exp = read_token(p .. 't:' .. v)
  local code, a, b = 0, 0, 0
  if nb then
    if now < exp then code, a, b = 2, nb, exp else code = 3 end
  else
    local r = redis.call('ZRANK', KEYS[1], v)
    if r then
      code, a = 1, r
    elseif redis.call('SISMEMBER', pre, v) == 1 then
      code, a = 4, num(cfg.opensAt, 0)
    end
  end
  out[#out + 1] = code; out[#out + 1] = a; out[#out + 1] = b
end
return out
