-- Renew the lease (`Command::RenewLease`) while this member still holds it.
-- KEYS[1]: the lease. ARGV[1]: the holder's member id; ARGV[2]: the lease's length in ms.
-- Returns 1 if renewed, 0 if another member, nobody, or something else holds the key.
if redis.call('TYPE', KEYS[1]).ok == 'string' and redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('PEXPIRE', KEYS[1], ARGV[2])
end
return 0
