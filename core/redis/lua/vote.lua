-- A trip vote (wit/fleet.md, "On a local trip").
-- KEYS[1]: the votes set. ARGV[1]: the member id; ARGV[2]: the cooldown in ms.
-- Records the vote at the store's time, trims votes older than one cooldown, keeps the set
-- no longer than that, and returns the store's time in ms, then member, time pairs.
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local cooldown = tonumber(ARGV[2])
redis.call('ZADD', KEYS[1], now, ARGV[1])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now - cooldown)
redis.call('PEXPIRE', KEYS[1], cooldown)
local votes = redis.call('ZRANGE', KEYS[1], 0, -1, 'WITHSCORES')
table.insert(votes, 1, tostring(now))
return votes
