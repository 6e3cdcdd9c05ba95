-- joinroom: the start of every join, before join.lua and in the same
-- script: what a join reads and does about the room, whoever joins. A
-- batch of joins (joinbatch.lua) runs it once for all of them.
-- ARGV[1] = prefix: the room's key prefix, wr:{room}:
-- ARGV[3] = seed: a random seed for an opening's draw
-- ARGV[4] = channel: the room's channel (a leading '!': SPUBLISH, see publish.lua)
local p = ARGV[1]
local now = now_ms()
local cfg = load_cfg(p)
lot_walk(p, cfg, KEYS[1], now)
local paused = 0
if cfg.paused == '1' then paused = 1 end
local draw_next, undrawn_left = maybe_open(p, cfg, now, tonumber(ARGV[3]), ARGV[4])
