-- Take the lease (`Command::TakeLease`).
-- KEYS[1]: the lease; KEYS[2]: the waiters. ARGV[1]: the holder's member id; ARGV[2]: the
-- lease's length in ms.
-- Returns {1, ms} when this member holds the lease now, else {0, the holder's PTTL}. A
-- lease is absent unless it is a string holding a member id (16 lowercase hex digits)
-- with an expiry; one that would outlast this member's own lease length is cut to it. So a
-- lease key with garbage, of another type or without a TTL never blocks the fleet's
-- probes for longer than one probe timeout.
-- A member turned down joins the waiters (at the store's time of its first ask, at most
-- 64, for three lease lengths), so that the holder's release wakes the longest waiter
-- alone; the member that takes the lease leaves them. Called without KEYS[2], it queues
-- nobody (that member is woken by the notice on the fleet's channel).
local ms = tonumber(ARGV[2])
local queue = #KEYS >= 2
local function waiters()
  local kind = redis.call('TYPE', KEYS[2]).ok
  if kind ~= 'none' and kind ~= 'zset' then
    redis.call('DEL', KEYS[2])
  end
end
local function granted()
  if queue then
    waiters()
    redis.call('ZREM', KEYS[2], ARGV[1])
  end
  return {1, ms}
end
local kind = redis.call('TYPE', KEYS[1]).ok
if kind == 'string' then
  local holder = redis.call('GET', KEYS[1])
  local ttl = redis.call('PTTL', KEYS[1])
  if holder == ARGV[1] then
    redis.call('SET', KEYS[1], ARGV[1], 'PX', ms)
    return granted()
  end
  if #holder == 16 and not string.find(holder, '[^0-9a-f]') and ttl > 0 then
    if ttl > ms then
      redis.call('PEXPIRE', KEYS[1], ms)
      ttl = ms
    end
    if queue then
      waiters()
      if redis.call('ZCARD', KEYS[2]) < 64 then
        local t = redis.call('TIME')
        local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
        redis.call('ZADD', KEYS[2], 'NX', now, ARGV[1])
      end
      redis.call('PEXPIRE', KEYS[2], 3 * ms)
    end
    return {0, ttl}
  end
end
if kind ~= 'none' then
  redis.call('DEL', KEYS[1])
end
redis.call('SET', KEYS[1], ARGV[1], 'PX', ms)
return granted()
