-- Vote (`Command::Vote`): this member's trip, and every vote that counts.
-- KEYS[1]: the votes set. ARGV[1]: the signed entry; ARGV[2]: the window in ms (the
-- cooldown); ARGV[3]: the most entries kept; ARGV[4]: the longest entry kept, in bytes.
-- Records the entry at the store's time, drops what is older than the window, longer than
-- an entry can be, or beyond the newest ARGV[3], and returns the store's time in ms, then
-- entry, time pairs. A key of another type is replaced: it holds no vote.
local kind = redis.call('TYPE', KEYS[1]).ok
if kind ~= 'none' and kind ~= 'zset' then
  redis.call('DEL', KEYS[1])
end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local window = tonumber(ARGV[2])
local most = tonumber(ARGV[3])
local longest = tonumber(ARGV[4])
redis.call('ZADD', KEYS[1], now, ARGV[1])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now - window)
redis.call('ZREMRANGEBYRANK', KEYS[1], 0, -(most + 1))
redis.call('PEXPIRE', KEYS[1], window)
local votes = {tostring(now)}
local stored = redis.call('ZRANGE', KEYS[1], 0, -1, 'WITHSCORES')
for i = 1, #stored, 2 do
  if #stored[i] <= longest then
    votes[#votes + 1] = stored[i]
    votes[#votes + 1] = stored[i + 1]
  else
    redis.call('ZREM', KEYS[1], stored[i])
  end
end
return votes
