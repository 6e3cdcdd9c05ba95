-- status: KEYS = queue; ARGV = token key prefix, visitor...
-- Returns code, a, b per visitor: 0 not in queue, 1 waiting (a = 0-based
-- rank), 2 admitted (a = notBefore, b = expiresAt), 3 expired.
local out = {}
local now = now_ms()
for i = 2, #ARGV do
  local v = ARGV[i]
  local nb, exp = read_token(ARGV[1] .. v)
  if nb then
    if now < exp then
      out[#out + 1] = 2; out[#out + 1] = nb; out[#out + 1] = exp
    else
      out[#out + 1] = 3; out[#out + 1] = 0; out[#out + 1] = 0
    end
  else
    local r = redis.call('ZRANK', KEYS[1], v)
    if r then
      out[#out + 1] = 1; out[#out + 1] = r; out[#out + 1] = 0
    else
      out[#out + 1] = 0; out[#out + 1] = 0; out[#out + 1] = 0
    end
  end
end
return out
