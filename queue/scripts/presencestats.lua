-- presencestats: the room's presence figures.
-- ARGV[1] = prefix: the room's key prefix, wr:{room}:
-- ARGV[2] = limit: the most unseen visitors looked at
-- The reply is read by decodePresenceStats in replies.go, field for field.
-- Returns {on, waitingPresent, away, back, reclaimed/min, skipped/min,
-- dropped/min, reclaimed, skipped, dropped, madeup/min, madeup}. Away
-- counts the queued visitors unseen for awayAfter (looking at no more than
-- limit unseen visitors) and those set aside.
local p = ARGV[1]
local now = now_ms()
local cfg = load_cfg(p)
local on = 0
if presence_on(cfg) then on = 1 end
local queued = redis.call('ZCARD', KEYS[1])
local back = redis.call('ZCARD', K.back)
local away = redis.call('ZCARD', K.away)
local stale = 0
if on == 1 then
  local vs = redis.call('ZRANGEBYSCORE', K.seen, '-inf', '(' .. (now - away_ms(cfg)), 'LIMIT', 0, tonumber(ARGV[2]))
  for i = 1, #vs, ZADD_CHUNK do
    local chunk = {}
    for j = i, math.min(i + ZADD_CHUNK - 1, #vs) do chunk[#chunk + 1] = vs[j] end
    local s = redis.call('ZMSCORE', KEYS[1], unpack(chunk))
    for j = 1, #chunk do
      if s[j] then stale = stale + 1 end
    end
  end
end
local st = redis.call('HMGET', K.stats, 'reclaimed', 'skipped', 'dropped', 'madeup')
return {on, queued + back - stale, stale + away, back,
  per_minute(p, 'reclaimed', now), per_minute(p, 'skipped', now), per_minute(p, 'dropped', now),
  num(st[1], 0), num(st[2], 0), num(st[3], 0), per_minute(p, 'madeup', now), num(st[4], 0)}
