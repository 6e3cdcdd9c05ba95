-- lottery: the lottery's seed.
-- ARGV[1] = prefix: the room's key prefix, wr:{room}:
-- ARGV[2] = op: commit, end or read
-- ARGV[3] = seed: a new secret seed (commit)
-- ARGV[4] = commitment: its SHA-256 (commit)
-- The lottery's seed record (lotc: seed, commit, at, endedAt; method.lua
-- draws with it). op "commit" stores a new secret seed and its commitment
-- unless one is stored and the lottery has not ended; op "end" marks the
-- stored seed's lottery as ended (the room left the random method), so it
-- may be revealed and the next lottery gets a new seed; op "read" changes
-- nothing. Returns {seed, commit, at, endedAt} ("" when none).
local c = K.lotc
local op = ARGV[2]
local now = now_ms()
if op == 'commit' then
  if not (redis.call('HEXISTS', c, 'seed') == 1 and redis.call('HEXISTS', c, 'endedAt') == 0) then
    redis.call('DEL', c)
    redis.call('HSET', c, 'seed', ARGV[3], 'commit', ARGV[4], 'at', now)
  end
elseif op == 'end' then
  if redis.call('HEXISTS', c, 'seed') == 1 and redis.call('HEXISTS', c, 'endedAt') == 0 then
    redis.call('HSET', c, 'endedAt', now)
  end
end
local d = redis.call('HMGET', c, 'seed', 'commit', 'at', 'endedAt')
return {d[1] or '', d[2] or '', d[3] or '0', d[4] or '0'}
