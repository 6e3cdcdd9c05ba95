-- The auditable draw (commit-reveal). Prelude, loaded before opening.lua.
--
-- When a room gets opensAt, the server stores a secret seed and publishes
-- the SHA-256 of it (the drawc hash: seed, commit, at). At opening, the
-- pre-queue's visitors are placed in the order of
--   SHA-1 hex of (seed .. ':' .. visitor id), ascending (ties by id),
-- a deterministic function of the seed and the list of ids, so anyone can
-- recompute it once the seed and the sorted list are revealed. The draw
-- runs in slices (maybe_open in opening.lua): first each slice of the pool is
-- keyed (drawkey, members "key:id" at one score, so they sort by key),
-- then the keyed visitors are placed a slice at a time in key order. The
-- list of ids is kept in drawlist (one score: sorted by id) for the reveal.

-- draw_seed returns the room's committed seed, or makes an uncommitted
-- one from fallback (a room that opened without opensAt ever set). It
-- marks the draw as started with its opening moment and size.
local function draw_start(p, fallback, opens, n)
  local c = K.drawc
  local seed = redis.call('HGET', c, 'seed')
  if not seed or redis.call('HEXISTS', c, 'openedAt') == 1 then
    seed = 'x' .. fallback
    redis.call('DEL', c)
    redis.call('HSET', c, 'seed', seed, 'commit', '')
  end
  redis.call('DEL', K.drawlist, K.drawkey)
  redis.call('HSET', c, 'openedAt', opens, 'n', n)
  return seed
end

-- draw_key_slice keys a slice of the pool's members (ZADD chunk size
-- chunk), and records them in the revealed list.
local function draw_key_slice(p, seed, members, chunk)
  for i = 1, #members, chunk do
    local keyed, listed = {}, {}
    for j = i, math.min(i + chunk - 1, #members) do
      local m = members[j]
      keyed[#keyed + 1] = 0
      keyed[#keyed + 1] = redis.sha1hex(seed .. ':' .. m) .. ':' .. m
      listed[#listed + 1] = 0
      listed[#listed + 1] = m
    end
    redis.call('ZADD', K.drawkey, unpack(keyed))
    redis.call('ZADD', K.drawlist, unpack(listed))
  end
end

-- draw_done marks the draw complete; the list is kept for a week for the
-- reveal.
local function draw_done(p)
  redis.call('HSET', K.drawc, 'doneAt', redis.call('TIME')[1])
  redis.call('PEXPIRE', K.drawlist, 7 * 86400000)
end
