-- endsession: a gateway session's end.
-- ARGV[1] = prefix: the room's key prefix, wr:{room}:
-- ARGV[2] = visitor: the visitor's id
-- ARGV[3] = notBefore: the session's token's notBefore (Unix ms)
-- ARGV[4] = channel: the instances' revocation channel
-- ARGV[5] = key: the session's key, which the instances stop accepting
-- ARGV[6] = untilMs: until when (Unix ms) when the record is gone
-- Ends a gateway session before its time. If the visitor's token record is
-- still the one with this notBefore it goes, and with it the max-active
-- slot and the seat (a session is never spent, so its seat is held by the
-- active set alone): the next tick admits into them. Every instance hears
-- "key until" on channel, even when nothing was held any more, so none
-- keeps accepting the cookie; until is the token's cap, or untilMs when the
-- record is gone. Returns 1 if a live session ended, else 0.
local p, v = ARGV[1], ARGV[2]
local key = V.t
local nb, exp, cap = read_token(key)
local until_ms = tonumber(ARGV[6])
local ended = 0
if nb and nb == tonumber(ARGV[3]) then
  until_ms = cap
  redis.call('DEL', key)
  if redis.call('ZREM', K.active, v) == 1 then ended = 1 end
end
-- An ended session stays ended: revive.lua must not write it back.
local left = until_ms - now_ms()
if left > 0 then redis.call('SET', V.gone, ARGV[3], 'PX', left) end
redis.call('PUBLISH', ARGV[4], ARGV[5] .. ' ' .. until_ms)
return ended
