-- invite: runs before the join script's body, in the same script, so a
-- code's use is recorded atomically with the join it admits.
-- ARGV[8] = code: the code's id ("" = none)
-- ARGV[9] = uses: the joins the code admits
-- ARGV[10] = codeExpiry: the code's expiry (Unix ms)
-- ARGV[11] = priority: 1 for a priority code, else 0
-- A visitor who holds a place (queued, pre-queued, in a draw, set aside or
-- back from away, or an entry token still valid) joins as always and uses
-- nothing. Otherwise, in an invite-only room, a code is required, and a
-- priority code is taken in any room: one of its uses is taken and the
-- join below gives a ticket of the priority band (priority.lua). A priority
-- code also moves a visitor who waits in the public band (queued or
-- pre-queued) into the priority band, for one use: its public ticket is
-- given up. Nothing is used in a room whose method turns new visitors
-- away. Returns {-2, …} without a code, {-1, …} when its uses are gone.
do
  local p, v = ARGV[1], ARGV[2]
  local prio = ARGV[11] == '1' and (ARGV[8] or '') ~= ''
  local only = redis.call('HGET', K.cfg, 'inviteOnly') == '1'
  if (only or prio) and redis.call('HGET', K.cfg, 'method') ~= 'reject' then
    local score = tonumber(redis.call('ZSCORE', KEYS[1], v))
    local pre = redis.call('SISMEMBER', K.pre, v) == 1
    local holds = score ~= nil or pre or redis.call('ZSCORE', K.ppre, v) or
      redis.call('ZSCORE', K.back, v) or redis.call('ZSCORE', K.away, v) or
      (redis.call('EXISTS', K.draw) == 1 and undrawn(p, v))
    if not holds then
      local nb, exp = read_token(V.t)
      holds = nb ~= nil and now_ms() < exp
    end
    local upgrade = prio and ((score ~= nil and score > 0) or pre)
    if not holds or upgrade then
      if (ARGV[8] or '') == '' then return {-2, 0, 0, 0, 0, 0, ''} end
      -- The code's key is built here: the join's KEYS are the same with
      -- or without a code (scripts.go).
      local k = p .. 'inv:' .. ARGV[8]
      local n = redis.call('INCR', k)
      if n == 1 then redis.call('PEXPIREAT', k, tonumber(ARGV[10]) + 86400000) end
      if n > tonumber(ARGV[9]) then
        redis.call('DECR', k)
        return {-1, 0, 0, 0, 0, 0, ''}
      end
      if upgrade then
        -- The public ticket is given up for good (retake.lua).
        if score then
          redis.call('SET', V.left, score, 'PX', 86400000)
          mark_done(p, score)
          if lot_begin(p, redis.call('HGET', K.cfg, 'method')) then
            lot_tickets('remove', 'upgrade', {score})
          end
        end
        redis.call('ZREM', KEYS[1], v)
        redis.call('SREM', K.pre, v)
      end
    end
  end
end
