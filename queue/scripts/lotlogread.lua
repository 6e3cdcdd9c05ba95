-- lotlogread: KEYS = queue; ARGV = prefix, after, limit
-- Returns {first, entries}: first is the id of the oldest entry the
-- lottery's log still holds ("" when it holds none; above "1-0" when the
-- cap trimmed its start), entries up to limit entries after the entry
-- numbered after, as XRANGE gives them (lotlog.lua).
local k = ARGV[1] .. 'lotlog'
local first = redis.call('XRANGE', k, '-', '+', 'COUNT', 1)
local f = ''
if #first > 0 then f = first[1][1] end
local lim = tonumber(ARGV[3])
local out = {}
if lim > 0 then out = redis.call('XRANGE', k, (tonumber(ARGV[2]) + 1) .. '-0', '+', 'COUNT', lim) end
return {f, out}
