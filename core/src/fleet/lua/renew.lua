-- Renew the lease (`Command::RenewLease`) while this holder still has it.
-- KEYS[1]: the lease. ARGV[1]: the holder (member id and session, 32 hex digits); ARGV[2]:
-- the lease's length in ms.
-- Returns 1 if renewed to that length from the store's time now, 0 if another holder,
-- nobody, or something else has the key, or this holder's lease ran out (`take.lua` says
-- what the lease holds).
if redis.call('TYPE', KEYS[1]).ok ~= 'string' or redis.call('STRLEN', KEYS[1]) > 64 then
  return 0
end
local who, expiry = string.match(redis.call('GET', KEYS[1]), '^([0-9a-f]+) ([0-9]+)$')
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
if who ~= ARGV[1] or #expiry > 16 or tonumber(expiry) <= now then
  return 0
end
redis.call('SET', KEYS[1], ARGV[1] .. ' ' .. (now + tonumber(ARGV[2])))
return 1
