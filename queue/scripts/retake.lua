-- retake: what an instance remembers of a room, put back.
-- ARGV[1] = prefix: the room's key prefix, wr:{room}:
-- ARGV[2] = room: the room's name
-- ARGV[3] = channel: the room's channel (a leading '!': SPUBLISH, see publish.lua)
-- ARGV[4] = head: the last public ticket admitted
-- ARGV[5] = headBorn: when the room's state that head is of began (Unix ms)
-- ARGV[6] = seqFloor: the least the public ticket counter may be
-- ARGV[7] = pHead: the last priority ticket admitted
-- ARGV[8] = pSeqFloor: the least the priority ticket counter may be
-- ARGV[9] = done: bytes of the bitmap of the public tickets done with, as Redis stores it ("" none; mark_done, done.lua)
-- ARGV[10] = pDone: the same of the priority tickets
-- ARGV[11] = doneAt: the byte of the public bitmap that done starts at
-- ARGV[12] = pDoneAt: the byte of the priority bitmap that pDone starts at
-- ARGV[13] = nCfg: the number of settings pairs that follow (-1: none remembered)
-- ARGV[14..] = rest: nCfg settings field/value pairs, then visitor, seq, issuedAt, band (0 public, 1 priority) for each ticket to take back
-- Puts back what an instance remembers of a room whose state Redis lost (a
-- restart without persistence, or a failover that lost the last writes):
-- the settings when they are missing, the last admitted ticket and the
-- ticket counter of each band (public, and priority: priority.lua), and the
-- places of visitors who come back with a signed ticket, each at its
-- original score in its band. Every part only ever raises or fills in, so
-- any number of instances may call it at once, any number of times.
-- The reply is read by decodeRetake in replies.go, field for field.
-- Returns {settingsRestored, retaken, removed}.
local p, room, channel = ARGV[1], ARGV[2], ARGV[3]
local head_born = tonumber(ARGV[5])
local ncfg = tonumber(ARGV[13])
local first = 14 + math.max(ncfg, 0) * 2
local now = now_ms()
local stats = K.stats
local retook = K.retook

-- Settings first: nothing of this room may be admitted under defaults.
local restored = 0
if ncfg >= 0 and redis.call('EXISTS', K.cfg) == 0 then
  redis.call('HSET', K.cfg, 'v', 1)
  if ncfg > 0 then redis.call('HSET', K.cfg, unpack(ARGV, 14, first - 1)) end
  restored = 1
  publish(channel, '{"type":"config","room":"' .. room .. '"}')
end

-- A random room logs what changes its draw (lotlog.lua).
lot_begin(p, redis.call('HGET', K.cfg, 'method'))

-- The tickets the instance knows were done with join those Redis knows.
-- A visitor taken back since the loss (retook) whose ticket turns out done
-- leaves the queue again: an instance that knew less let it back in.
local merged = false
for i, k in ipairs({'done', 'pdone'}) do
  if ARGV[8 + i] ~= '' then
    redis.call('SETRANGE', K.donein, tonumber(ARGV[10 + i]), ARGV[8 + i])
    redis.call('BITOP', 'OR', K[k], K[k], K.donein)
    redis.call('DEL', K.donein)
    merged = true
  end
end
local removed = 0
if merged then
  local back = redis.call('HGETALL', retook)
  for i = 1, #back, 2 do
    local v, score = back[i], tonumber(back[i + 1])
    if tonumber(redis.call('ZSCORE', KEYS[1], v)) == score and is_done(p, score) then
      removed = removed + redis.call('ZREM', KEYS[1], v)
      lot_tickets('remove', 'restore', {score})
    end
  end
end

-- born is when this room's state began (join sets it): a ticket taken
-- before it was taken from state that is gone.
local born = tonumber(redis.call('HGET', stats, 'born'))
if not born then
  born = now
  redis.call('HSET', stats, 'born', born)
end
-- Each band's tickets count on their own: head and floor are tickets of
-- the band, and its scores are ticket - base.
local bands = {
  [0] = {head = tonumber(ARGV[4]), seq_floor = tonumber(ARGV[6]), fh = 'head', ff = 'floor', ctr = 'seq', base = 0},
  [1] = {head = tonumber(ARGV[7]), seq_floor = tonumber(ARGV[8]), fh = 'phead', ff = 'pfloor', ctr = 'pseq', base = PRIO_BASE},
}
for _, b in pairs(bands) do
  -- floor: the last ticket admitted before the state was lost; admitted:
  -- the last one admitted since.
  b.floor = num(redis.call('HGET', stats, b.ff), 0)
  b.admitted = num(redis.call('HGET', stats, b.fh), 0)
  b.top = 0
  if b.head > 0 then
    if head_born ~= born then
      if b.head > b.floor then
        b.floor = b.head
        redis.call('HSET', stats, b.ff, b.floor)
      end
    elseif b.head > b.admitted then
      -- Admissions of this state that Redis lost (a failover): their
      -- visitors were told, and must not come in twice.
      b.admitted = b.head
      redis.call('HSET', stats, b.fh, b.head)
    end
  end
  -- Visitors in the queue who were already let in: tickets at or under
  -- the floor (taken back by an instance that knew less), and tickets at
  -- or under the admitted head that are no late comer taken back.
  local upto = math.max(b.floor, b.admitted)
  if upto > 0 then
    local lo = '(0'
    if b.base > 0 then lo = '-inf' end
    local low = redis.call('ZRANGEBYSCORE', KEYS[1], lo, upto - b.base)
    for _, v in ipairs(low) do
      local s = tonumber(redis.call('ZSCORE', KEYS[1], v)) + b.base
      if s <= b.floor or not redis.call('HGET', retook, v) then
        removed = removed + redis.call('ZREM', KEYS[1], v)
        lot_tickets('remove', 'restore', {s - b.base})
      end
    end
  end
end

local retaken = 0
for i = first, #ARGV, 4 do
  local v, s, iat = ARGV[i], tonumber(ARGV[i + 1]), tonumber(ARGV[i + 2])
  local b = bands[tonumber(ARGV[i + 3])] or bands[0]
  local score = s - b.base
  local lost
  if iat < born then lost = s > b.floor else lost = s > b.admitted end
  if lost and tonumber(redis.call('GET', p .. 'left:' .. v) or '') == score then lost = false end
  -- Admitted or dropped once: never again (mark_done, done.lua).
  if lost and is_done(p, score) then lost = false end
  -- A room no operator configured keeps its state (and so what it knows
  -- of done tickets) a day past its last use (keep_while_used): a ticket
  -- older than that may be one whose state is gone, and is not taken back.
  if lost and iat < now - idle_ms and next(load_cfg(p)) == nil then lost = false end
  if lost and not redis.call('ZSCORE', KEYS[1], v) and redis.call('EXISTS', p .. 't:' .. v) == 0
      and redis.call('SISMEMBER', K.pre, v) == 0 and redis.call('SISMEMBER', K.drawpool, v) == 0
      and not redis.call('ZSCORE', K.ppre, v)
      and not redis.call('ZSCORE', K.away, v) and not redis.call('ZSCORE', K.back, v)
      and redis.call('EXISTS', p .. 'dropped:' .. v) == 0 then
    redis.call('ZADD', KEYS[1], 'NX', score, v)
    lot_tickets('add', 'restore', {score})
    if b.base > 0 then redis.call('ZADD', K.pmark, 'NX', 0, mark_member(s)) end
    redis.call('HSET', retook, v, score)
    redis.call('PEXPIRE', retook, 86400000)
    retaken = retaken + 1
  end
  if s > b.top then b.top = s end
end

-- New tickets go behind every ticket of their band that was ever given.
for _, b in pairs(bands) do
  local want = math.max(b.seq_floor, b.top, b.floor, b.admitted)
  if want > num(redis.call('GET', K[b.ctr]), 0) then redis.call('SET', K[b.ctr], want) end
end
return {restored, retaken, removed}
