-- Queueing methods (the cfg field method). Prelude, after presence.lua.
--   fifo         the default: tickets in order
--   passthrough  no crowd: a new visitor is admitted at its join, with a
--                token (so sessions and analytics work as under a queue);
--                the tick admits whoever still waits, up to PASS_BATCH a
--                tick, whatever max-active says; seats still count
--   reject       closed: a new visitor's join answers closed with the
--                operator's message; visitors already in keep their place
--                and go on being admitted
-- A change of method moves nobody: tickets are kept, so a return to fifo
-- goes on in ticket order.
local PASS_BATCH = 1000

-- join_method answers a join of a visitor who holds no place yet when the
-- method says so: {6, 0, 0, 0, message} closed, or {2, notBefore,
-- expiresAt, 1} admitted at once. nil: join as usual.
local function join_method(p, cfg, v, now, ttl_ms, max_ms, keep_ms)
  local m = cfg.method
  if m == 'reject' then return {6, 0, 0, 0, 0, num(cfg.v, 0), cfg.message or ''} end
  if m ~= 'passthrough' or sold_out(p, cfg, now) then return nil end
  local ttl = num(cfg.ttlMs, ttl_ms)
  local exp = now + ttl
  local cap = now + math.max(num(cfg.maxMs, max_ms), ttl)
  redis.call('SET', p .. 't:' .. v, now .. ':' .. exp .. ':' .. cap, 'PX', cap - now + keep_ms)
  redis.call('ZADD', p .. 'active', exp, v)
  redis.call('HINCRBY', p .. 'stats', 'admitted', 1)
  admitted_seen(p, cfg, {v}, now)
  keep_while_used(p, cfg, cap - now + keep_ms)
  local paused = 0
  if cfg.paused == '1' then paused = 1 end
  return {2, now, exp, 1, paused, num(cfg.v, 0), cfg.message or ''}
end
