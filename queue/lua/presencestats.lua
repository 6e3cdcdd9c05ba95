-- presencestats: what Redis runs, byte for byte (EVALSHA sends the SHA-1 of
-- this file). Generated from scripts/presencestats.lua, after the functions
-- it calls of the prelude: those of scripts/clock.lua, scripts/settings.lua,
-- scripts/opening.lua and scripts/presence.lua, by
--   go test ./queue -run TestScriptsGenerated -update
-- Edit those files, not this one.
--
-- KEYS[1] = wr:{room}:q
-- KEYS[2] = wr:{room}:cfg
-- KEYS[3] = wr:{room}:stats
-- KEYS[4] = wr:{room}:seq
-- KEYS[5] = wr:{room}:pseq
-- KEYS[6] = wr:{room}:pmark
-- KEYS[7] = wr:{room}:active
-- KEYS[8] = wr:{room}:tick
-- KEYS[9] = wr:{room}:pre
-- KEYS[10] = wr:{room}:ppre
-- KEYS[11] = wr:{room}:back
-- KEYS[12] = wr:{room}:away
-- KEYS[13] = wr:{room}:awayt
-- KEYS[14] = wr:{room}:seen
-- KEYS[15] = wr:{room}:aseen
-- KEYS[16] = wr:{room}:closed
-- KEYS[17] = wr:{room}:owed
-- KEYS[18] = wr:{room}:done
-- KEYS[19] = wr:{room}:pdone
-- KEYS[20] = wr:{room}:donein
-- KEYS[21] = wr:{room}:retook
-- KEYS[22] = wr:{room}:draw
-- KEYS[23] = wr:{room}:drawc
-- KEYS[24] = wr:{room}:drawkey
-- KEYS[25] = wr:{room}:drawlist
-- KEYS[26] = wr:{room}:drawpool
-- KEYS[27] = wr:{room}:lotc
-- KEYS[28] = wr:{room}:lotl
-- KEYS[29] = wr:{room}:lotlog
--
-- ARGV[1] = prefix: the room's key prefix, wr:{room}:
-- ARGV[2] = limit: the most unseen visitors looked at

local K = {q = KEYS[1], cfg = KEYS[2], stats = KEYS[3], seq = KEYS[4], pseq = KEYS[5], pmark = KEYS[6], active = KEYS[7], tick = KEYS[8], pre = KEYS[9], ppre = KEYS[10], back = KEYS[11], away = KEYS[12], awayt = KEYS[13], seen = KEYS[14], aseen = KEYS[15], closed = KEYS[16], owed = KEYS[17], done = KEYS[18], pdone = KEYS[19], donein = KEYS[20], retook = KEYS[21], draw = KEYS[22], drawc = KEYS[23], drawkey = KEYS[24], drawlist = KEYS[25], drawpool = KEYS[26], lotc = KEYS[27], lotl = KEYS[28], lotlog = KEYS[29]}
local V = {t = KEYS[30], spent = KEYS[31], gone = KEYS[32], left = KEYS[33], dropped = KEYS[34]}
-- The clock. Prelude shared by every script, after lotlog.lua. Keys of a
-- room are built from the prefix "wr:{room}:" (ARGV[1]); KEYS[1] is always
-- a key of that slot, so a cluster routes the script to the node holding
-- every key it touches.

-- Redis TIME is the one clock, in ms.
local function now_ms()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end

-- The room's settings. Prelude, after token.lua.

-- The room's settings: those fields of the cfg hash that the script
-- reads, as a table of those that are set. When a script is generated
-- (cfgReadLua, scriptgen_test.go) CFG_NAMES becomes the names of the fields its
-- text reads as cfg.<field>, the version v first, and CFG_TABLE the table
-- of their values by name: a call asks for a few fields by name with one
-- HMGET and builds one small table, instead of reading every field the
-- room set and keeping those the schema declares. Every configured room
-- has a version, so a room without one is a room nobody configured: an
-- empty table.
local function load_cfg(p)
  local f = redis.call('HMGET', K.cfg, "v", "presence", "awayMs")
  if not f[1] then return {} end
  return {v = f[1] or nil, presence = f[2] or nil, awayMs = f[3] or nil}
end

local function num(v, default)
  local n = tonumber(v)
  if n == nil then return default end
  return n
end

-- The opening of a room with a pre-queue, and its draw. Prelude, after
-- random.lua and after draw.lua and lotlog.lua, whose functions it calls.

local ZADD_CHUNK = 500 -- members per ZADD call (Lua's stack bounds unpack)

-- Presence: who is still there. Prelude shared by every script (after
-- done.lua).
--
-- Keys of the room (prefix p):
--   seen    zset  visitor -> last sign of life (ms): a join, a poll, a push
--                 connection opening or closing, and every awayAfter/3
--                 while one is open (the hubs write those in batches)
--   aseen   zset  admitted visitors -> last sign of life; a token whose
--                 visitor is gone for awayAfter gives its slot back
--   away    zset  visitors set aside -> last sign of life: their turn came
--                 (or their slot was taken back) while they were away
--   awayt   hash  visitor -> ticket, for those in away (0 = had a token)
--   back    zset  visitors who came back from away -> ticket: admitted
--                 first, in the next tick
--   dropped:V str V was away for dropAfter and lost the place; a status
--                 says expired (reason away) until it joins again
--   owed    zset  tokens taken back unused (V:notBefore) -> when: each is
--                 an admission the protected system never saw, made up by
--                 one more admission in a later tick (owed_extra)
--   closed  zset  visitors whose last push connection closed -> when (a
--                 hub writes it); any other sign of life (a poll, a join,
--                 a connection open) takes them out. One still in it when
--                 its turn comes is set aside as if away, though not yet
--                 unseen for awayAfter: nobody knows it is there, and
--                 its turn is not lost (it goes first as soon as it shows
--                 up, as one set aside does), while a turn given to it
--                 would likely be capacity unused
-- A visitor the room never saw (it joined before presence was on, or came
-- through the pre-queue and was forgotten meanwhile) counts as present.
local AWAY_MS = 60000

local function presence_on(cfg) return cfg.presence ~= 'off' end
local function away_ms(cfg) return num(cfg.awayMs, AWAY_MS) end

-- The count over the last 60 s, the minute before weighed by how much of
-- it the window still covers.
local function per_minute(p, f, now)
  local m = redis.call('HMGET', K.stats, f .. ':m', f .. ':c', f .. ':p')
  local minute = math.floor(now / 60000)
  local frac = (now % 60000) / 60000
  local at, c, prev = num(m[1], -1), num(m[2], 0), num(m[3], 0)
  if at == minute then return math.floor(c + prev * (1 - frac) + 0.5) end
  if at == minute - 1 then return math.floor(c * (1 - frac) + 0.5) end
  return 0
end

-- presencestats: the room's presence figures.
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

