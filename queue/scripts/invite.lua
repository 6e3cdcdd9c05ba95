-- invite: runs before the join script's body, in the same script, so a
-- code's use is recorded atomically with the join it admits.
-- ARGV[8..10] = code id ("" = none), the joins it admits, its expiry (ms).
-- A visitor who holds a place (queued, pre-queued, or an entry token still
-- valid) joins as always and uses nothing. Otherwise, in an invite-only
-- room, a code is required and one of its uses is taken. Returns
-- {-2, …} without a code, {-1, …} when its uses are gone.
do
  local p, v = ARGV[1], ARGV[2]
  if redis.call('HGET', p .. 'cfg', 'inviteOnly') == '1' then
    local holds = redis.call('ZSCORE', KEYS[1], v) or redis.call('SISMEMBER', p .. 'pre', v) == 1
    if not holds then
      local nb, exp = read_token(p .. 't:' .. v)
      holds = nb ~= nil and now_ms() < exp
    end
    if not holds then
      if (ARGV[8] or '') == '' then return {-2, 0, 0, 0, 0, 0, ''} end
      local k = p .. 'inv:' .. ARGV[8]
      local n = redis.call('INCR', k)
      if n == 1 then redis.call('PEXPIREAT', k, tonumber(ARGV[10]) + 86400000) end
      if n > tonumber(ARGV[9]) then
        redis.call('DECR', k)
        return {-1, 0, 0, 0, 0, 0, ''}
      end
    end
  end
end
