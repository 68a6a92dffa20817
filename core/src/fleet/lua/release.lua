-- Give the lease back (`Command::ReleaseLease`) only while this holder still has it, and
-- then wake one member waiting for it, so that it asks at once and nobody else asks.
-- KEYS[1]: the lease; KEYS[2]: the waiters. ARGV[1]: the holder (member id and session,
-- 32 hex digits); ARGV[2]: the fleet's channel; ARGV[3]: the lease-free notice; ARGV[4]:
-- PUBLISH, or SPUBLISH on a Redis Cluster; ARGV[5]: the prefix of the holders' own
-- channels.
-- The notice goes to the longest waiter's own channel; a waiter nobody listens for (it
-- left, or runs a version without one) is dropped and the next is tried, four at most.
-- With no waiter that hears it, the notice goes on the fleet's channel: every waiting
-- member asks; so it does when called without KEYS[2]. Returns 1 if released, else 0.
if redis.call('TYPE', KEYS[1]).ok ~= 'string' or redis.call('STRLEN', KEYS[1]) > 64 then
  return 0
end
if string.match(redis.call('GET', KEYS[1]), '^([0-9a-f]+) ') ~= ARGV[1] then
  return 0
end
redis.call('DEL', KEYS[1])
if #KEYS >= 2 and ARGV[5] and redis.call('TYPE', KEYS[2]).ok == 'zset' then
  for _ = 1, 4 do
    local next = redis.call('ZPOPMIN', KEYS[2])
    if #next == 0 then
      break
    end
    if string.find(next[1], '^[0-9a-f]+$') and #next[1] == 32 and
        redis.call(ARGV[4], ARGV[5] .. next[1], ARGV[3]) > 0 then
      return 1
    end
  end
end
redis.call(ARGV[4], ARGV[2], ARGV[3])
return 1
