-- consume: what Redis runs, byte for byte (EVALSHA sends the SHA-1 of this
-- file). Generated from scripts/consume.lua, after the functions it calls of
-- the prelude: those of scripts/clock.lua and scripts/token.lua, by
--   go test ./queue -run TestScriptsGenerated -update
-- Edit those files, not this one.
--
-- KEYS[1] = wr:{room}:q
-- KEYS[2] = wr:{room}:t:<visitor>
-- KEYS[3] = wr:{room}:seen
-- KEYS[4] = wr:{room}:aseen
-- KEYS[5] = wr:{room}:active
-- KEYS[6] = wr:{room}:stats
-- KEYS[7] = wr:{room}:spent:<visitor>
-- KEYS[8] = wr:{room}:gone:<visitor>
--
-- ARGV[1] = prefix: the room's key prefix, wr:{room}:
-- ARGV[2] = visitor: the visitor's id
-- ARGV[3] = notBefore: the token's notBefore (Unix ms), which its record must hold
-- ARGV[4] = mode: 0 check, 1 use up, 2 check and slide
-- ARGV[5] = idleMs: how far a slide pushes the expiry, in ms
-- ARGV[6] = retentionMs: how long a record outlives its token, in ms

-- The clock. Prelude shared by every script, after lotlog.lua. Keys of a
-- room are built from the prefix "wr:{room}:" (ARGV[1]); KEYS[1] is always
-- a key of that slot, so a cluster routes the script to the node holding
-- every key it touches.

-- Redis TIME is the one clock, in ms.
local function now_ms()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end

-- Entry token records. Prelude, after clock.lua.

-- A token record is "notBefore:expiresAt:cap" in ms. expiresAt slides with
-- use up to cap. The record outlives expiresAt by a retention so that status
-- can say "expired".
local function read_token(key)
  local rec = redis.call('GET', key)
  if not rec then return nil end
  local nb, exp, cap = string.match(rec, '^(%d+):(%d+):?(%d*)')
  nb, exp = tonumber(nb), tonumber(exp)
  cap = tonumber(cap) or exp
  return nb, exp, cap
end

-- consume: checks, spends or slides an entry token.
-- mode 0 checks, 1 uses the token up, 2 checks and slides its expiry to
-- min(now + idle, cap). Returns {code, a}: 1 valid (a = expiresAt), -1
-- unknown or used, -2 too early (a = ms until notBefore), -3 expired; a
-- valid answer also carries the cap as its third value. The reply is read
-- by consumeReply in replies.go, field for field.
local p, v, mode = ARGV[1], ARGV[2], ARGV[4]
local key = KEYS[2]
local nb, exp, cap = read_token(key)
if not nb or nb ~= tonumber(ARGV[3]) then return {-1, 0} end
local now = now_ms()
if now < nb then return {-2, nb - now} end
if now >= exp then return {-3, 0} end
-- Using or checking a token is a sign of life, and a token once used is
-- no longer an unused one whose slot could be taken back (presence.lua):
-- a gateway session that reads a long page keeps its slot.
redis.call('ZADD', KEYS[3], 'XX', now, v)
redis.call('ZREM', KEYS[4], v)
if mode == '1' then
  redis.call('DEL', key)
  -- A used token stays used for as long as its record could have lived
  -- (its cap and the retention after it): revive.lua, which writes back
  -- the records Redis lost, reads these markers, so a check or a touch
  -- after the token's idle expiry cannot bring it back.
  local keep = cap - now + tonumber(ARGV[6])
  -- Frees a max-active slot; the seat stays held, as sold. The spent
  -- marker lets one Restore of this very token take the seat back.
  if redis.call('ZREM', KEYS[5], v) == 1 then
    redis.call('HINCRBY', KEYS[6], 'sold', 1)
    redis.call('SET', KEYS[7], nb, 'PX', keep)
  else
    redis.call('SET', KEYS[8], nb, 'PX', keep)
  end
elseif mode == '2' then
  local idle = tonumber(ARGV[5])
  local new_exp = math.min(now + idle, cap)
  if new_exp > exp then
    local ttl = redis.call('PTTL', key)
    redis.call('SET', key, nb .. ':' .. new_exp .. ':' .. cap, 'PX', ttl + (new_exp - exp))
    redis.call('ZADD', KEYS[5], 'XX', new_exp, v)
    exp = new_exp
  end
end
return {1, exp, cap}

