-- Give the lease back (`Command::ReleaseLease`) only while this member still holds it.
-- KEYS[1]: the lease. ARGV[1]: the holder's member id. Returns 1 if released, else 0.
if redis.call('TYPE', KEYS[1]).ok == 'string' and redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('DEL', KEYS[1])
end
return 0
