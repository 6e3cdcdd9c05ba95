-- tickrooms: what a tick visits, in one call instead of two.
-- KEYS = the set of rooms with waiting visitors, the alive marker
-- ARGV = sample, configured rooms...
-- Returns {sample, alive, flags...}: up to sample rooms of the set picked
-- at random; 1 when the alive marker is there (0: Redis has lost its data
-- since an instance last put back what it remembers); then for each
-- configured room 1 when it is in the set, else 0.
local out = {redis.call('SRANDMEMBER', KEYS[1], ARGV[1]), redis.call('EXISTS', KEYS[2])}
local n = #ARGV
for i = 2, n, 1000 do
  local flags = redis.call('SMISMEMBER', KEYS[1], unpack(ARGV, i, math.min(i + 999, n)))
  for j = 1, #flags do out[#out + 1] = flags[j] end
end
return out
