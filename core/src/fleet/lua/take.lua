-- Take the lease (`Command::TakeLease`).
-- KEYS[1]: the lease; KEYS[2]: the waiters. ARGV[1]: the holder (its member id and
-- session, 32 lowercase hex digits); ARGV[2]: the lease's length in ms.
-- Returns {1, ms} when this holder has the lease now, else {0, the lease's time left}.
-- The lease is the string `<holder> <until>`, `<until>` the store's time in ms when it
-- runs out. It carries no TTL, so a store that evicts only keys with one (a volatile-*
-- maxmemory-policy, a cache shared with the fleet) never evicts it while a probe is out.
-- Anything else (garbage, another type, a lease that ran out) is absent; one that claims
-- longer than this holder's own lease length is cut to it, so nothing stored blocks the
-- fleet's probes for longer than one probe timeout.
-- A holder turned down joins the waiters (at the store's time of its first ask, at most
-- 64, for three lease lengths), so that the release wakes the longest waiter alone; the
-- holder that takes the lease leaves them. Called without KEYS[2], it queues nobody (that
-- member is woken by the notice on the fleet's channel).
local ms = tonumber(ARGV[2])
local queue = #KEYS >= 2
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local function waiters()
  local kind = redis.call('TYPE', KEYS[2]).ok
  if kind ~= 'none' and kind ~= 'zset' then
    redis.call('DEL', KEYS[2])
  end
end
local function granted()
  redis.call('SET', KEYS[1], ARGV[1] .. ' ' .. (now + ms))
  if queue then
    waiters()
    redis.call('ZREM', KEYS[2], ARGV[1])
  end
  return {1, ms}
end
local holder, left = nil, 0
if redis.call('TYPE', KEYS[1]).ok == 'string' and redis.call('STRLEN', KEYS[1]) <= 64 then
  local who, expiry = string.match(redis.call('GET', KEYS[1]), '^([0-9a-f]+) ([0-9]+)$')
  if who and #who == 32 and #expiry <= 16 then
    holder, left = who, tonumber(expiry) - now
  end
end
if holder == nil or left <= 0 or holder == ARGV[1] then
  return granted()
end
if left > ms then
  redis.call('SET', KEYS[1], holder .. ' ' .. (now + ms))
  left = ms
end
if queue then
  waiters()
  if redis.call('ZCARD', KEYS[2]) < 64 then
    redis.call('ZADD', KEYS[2], 'NX', now, ARGV[1])
  end
  redis.call('PEXPIRE', KEYS[2], 3 * ms)
end
return {0, left}
