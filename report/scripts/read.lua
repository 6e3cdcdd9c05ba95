-- read: the hour hashes in KEYS, each as HGETALL gives it.
local out = {}
for i, k in ipairs(KEYS) do out[i] = redis.call('HGETALL', k) end
return out
