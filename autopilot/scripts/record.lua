-- record: an origin's health samples, added to the counts of the room's
-- current second (by Redis TIME, so every instance adds to the same one).
-- KEYS[1] = wr:{room}:ap: the room's autopilot state (named so that the
--           call goes to the room's slot; not touched)
-- ARGV[1] = prefix: the room's key prefix, wr:{room}:
-- ARGV[2] = ttl: seconds the second's counts are kept
-- ARGV[3..] = field, increment pairs: n (samples), e (errors), b<i>
--           (successful samples in latency bucket i)
-- The second's hash is wr:{room}:ap:s:<unix second>. Returns the second.
local t = redis.call('TIME')
local k = ARGV[1] .. 'ap:s:' .. t[1]
for i = 3, #ARGV, 2 do
  redis.call('HINCRBY', k, ARGV[i], ARGV[i + 1])
end
redis.call('EXPIRE', k, ARGV[2])
return tonumber(t[1])
