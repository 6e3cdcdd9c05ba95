-- seen: signs of life.
-- ARGV[1] = prefix: the room's key prefix, wr:{room}:
-- ARGV[2] = mode: "closed" when the visitors' last push connection closed, else ""
-- ARGV[3..] = visitors: the visitors seen
-- A hub's batch of signs of life for its connected visitors (presence.lua);
-- mode "closed": the visitors' last push connection just closed.
-- Returns the room's awayAfter in ms, so the hub knows when to write again.
local p = ARGV[1]
local now = now_ms()
local cfg = load_cfg(p)
lot_begin(p, cfg.method)
local vs = {}
for i = 3, #ARGV do vs[#vs + 1] = ARGV[i] end
seen_many(p, cfg, vs, now, ARGV[2] == 'closed')
return away_ms(cfg)
