-- Repair the generation counter (`Command::Repair`).
-- KEYS[1]: the counter. ARGV[1]: the least generation it must hold (a decimal).
-- A counter holds a generation when it is a string of at most 16 digits, without a sign or
-- leading zero, below 2^53 (what every member parses alike). One that does not, or holds
-- less than ARGV[1], is set to ARGV[1]. Returns the generation the counter holds.
local floor = tonumber(ARGV[1])
if redis.call('TYPE', KEYS[1]).ok == 'string' then
  local text = redis.call('GET', KEYS[1])
  if string.find(text, '^[1-9][0-9]*$') and #text <= 16 then
    local gen = tonumber(text)
    if gen < 9007199254740992 and gen >= floor then
      return text
    end
  end
end
redis.call('DEL', KEYS[1])
redis.call('SET', KEYS[1], ARGV[1])
return ARGV[1]
