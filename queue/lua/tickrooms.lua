-- tickrooms: what Redis runs, byte for byte (EVALSHA sends the SHA-1 of this
-- file). Generated from scripts/tickrooms.lua, by
--   go test ./queue -run TestScriptsGenerated -update
-- Edit those files, not this one.
--
-- KEYS[1] = wr:{rooms}:waiting
-- KEYS[2] = wr:{rooms}:alive
--
-- ARGV[1] = sample: how many rooms of the set to pick at random
-- ARGV[2..] = configured: the configured rooms, each flagged in the reply

-- tickrooms: what a tick visits, in one call instead of two.
-- KEYS = the set of rooms with waiting visitors, the alive marker
-- Returns {sample, alive, flags...}: up to sample rooms of the set picked
-- at random; the alive marker ("" when it is gone: Redis has lost its data
-- since an instance last put back what it remembers; another value than
-- the one an instance saw last: Redis lost it and another instance put
-- back first); then for each configured room 1 when it is in the set,
-- else 0.
local out = {redis.call('SRANDMEMBER', KEYS[1], ARGV[1]), redis.call('GET', KEYS[2]) or ''}
local n = #ARGV
for i = 2, n, 1000 do
  local flags = redis.call('SMISMEMBER', KEYS[1], unpack(ARGV, i, math.min(i + 999, n)))
  for j = 1, #flags do out[#out + 1] = flags[j] end
end
return out

