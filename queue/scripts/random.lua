-- Random numbers a caller seeds. Prelude, after settings.lua.

-- Park-Miller minimal standard generator: exact in doubles, seeded by the
-- caller (scripts must not depend on math.random's seeding).
local function next_rand(seed)
  return (seed * 16807) % 2147483647
end
