-- Gives the probe lease up only while this member still holds it.
-- KEYS[1]: the lease. ARGV[1]: the member id. Returns 1 if released, else 0.
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('DEL', KEYS[1])
end
return 0
