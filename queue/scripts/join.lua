-- join: KEYS = queue; ARGV = prefix, visitor, seed, channel
-- Returns {code, a, b, new}: 1 waiting (a = 0-based rank), 2 admitted (a =
-- notBefore, b = expiresAt), 4 in the pre-queue before opening (a = opensAt).
-- new = 1 when a ticket (or pre-queue place) was taken.
local p, v = ARGV[1], ARGV[2]
local now = now_ms()
local cfg = load_cfg(p)
maybe_open(p, cfg, now, tonumber(ARGV[3]), ARGV[4])
local nb, exp = read_token(p .. 't:' .. v)
if nb then
  if now < exp then return {2, nb, exp, 0} end
  redis.call('DEL', p .. 't:' .. v) -- expired unused: a new ticket at the back
end
local r = redis.call('ZRANK', KEYS[1], v)
if r then return {1, r, 0, 0} end
local opens = num(cfg.opensAt, 0)
if opens > now then
  local added = redis.call('SADD', p .. 'pre', v)
  return {4, opens, 0, added}
end
local s = redis.call('INCR', p .. 'seq')
redis.call('ZADD', KEYS[1], 'NX', s, v)
return {1, redis.call('ZRANK', KEYS[1], v), 0, 1}
