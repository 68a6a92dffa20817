-- Give the lease back (`Command::ReleaseLease`) only while this member still holds it, and
-- then tell the fleet, so that a member waiting for it asks at once.
-- KEYS[1]: the lease. ARGV[1]: the holder's member id; ARGV[2]: the channel; ARGV[3]: the
-- lease-free notice; ARGV[4]: PUBLISH, or SPUBLISH on a Redis Cluster.
-- Returns 1 if released, else 0.
if redis.call('TYPE', KEYS[1]).ok == 'string' and redis.call('GET', KEYS[1]) == ARGV[1] then
  redis.call('DEL', KEYS[1])
  redis.call(ARGV[4], ARGV[2], ARGV[3])
  return 1
end
return 0
