-- Take the lease (`Command::TakeLease`).
-- KEYS[1]: the lease. ARGV[1]: the holder's member id; ARGV[2]: the lease's length in ms.
-- Returns {1, ms} when this member holds the lease now, else {0, the holder's PTTL}. A
-- lease is absent unless it is a string holding a member id (16 lowercase hex digits)
-- with an expiry; one that would outlast this member's own lease length is cut to it. So a
-- lease key with garbage, of another type or without a TTL never blocks the fleet's
-- probes for longer than one probe timeout.
local ms = tonumber(ARGV[2])
local kind = redis.call('TYPE', KEYS[1]).ok
if kind == 'string' then
  local holder = redis.call('GET', KEYS[1])
  local ttl = redis.call('PTTL', KEYS[1])
  if holder == ARGV[1] then
    redis.call('SET', KEYS[1], ARGV[1], 'PX', ms)
    return {1, ms}
  end
  if #holder == 16 and not string.find(holder, '[^0-9a-f]') and ttl > 0 then
    if ttl > ms then
      redis.call('PEXPIRE', KEYS[1], ms)
      ttl = ms
    end
    return {0, ttl}
  end
end
if kind ~= 'none' then
  redis.call('DEL', KEYS[1])
end
redis.call('SET', KEYS[1], ARGV[1], 'PX', ms)
return {1, ms}
