-- Raises the fleet generation to at least ARGV[1]: a store restarted empty would otherwise
-- hand out generations every member has already applied, and fences them as stale.
-- KEYS[1]: the generation counter. Returns the generation the store now holds.
local gen = tonumber(redis.call('GET', KEYS[1]) or '0') or 0
local floor = tonumber(ARGV[1])
if gen < floor then
  redis.call('SET', KEYS[1], ARGV[1])
  return floor
end
return gen
