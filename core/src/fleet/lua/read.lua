-- Read (the member protocol's `Command::Read`): the fleet's state as stored.
-- KEYS[1]: the event; KEYS[2]: the generation counter. ARGV[1]: the longest value read.
-- Returns {event, the event's PTTL in ms, generation}, nil for an absent key. A key that
-- holds another type than a string, or a string longer than ARGV[1], comes back as an
-- empty string: no reader takes that for an event or a generation, so it is counted and
-- repaired, and a hostile or broken store can neither make the read fail nor make every
-- member fetch a huge value at every read.
local longest = tonumber(ARGV[1])
local function value(key)
  local kind = redis.call('TYPE', key).ok
  if kind == 'none' then
    return false
  elseif kind ~= 'string' or redis.call('STRLEN', key) > longest then
    return ''
  end
  return redis.call('GET', key)
end
return {value(KEYS[1]), redis.call('PTTL', KEYS[1]), value(KEYS[2])}
