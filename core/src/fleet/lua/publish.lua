-- Publish an event (`Command::Publish`): at once, send it on the channel, store it as the
-- fleet's last event, clear the trip votes (they led to it, or are older than it) and the
-- lease's waiters (a new generation ends every wait). It is sent first: a store whose ACL
-- denies the publish then stores nothing either (a script's writes before an error stay).
-- KEYS[1]: the event; KEYS[2]: the votes; KEYS[3] (optional): the waiters. ARGV[1]: the channel;
-- ARGV[2]: the line; ARGV[3]: the event's TTL in ms, 0 for none (a close); ARGV[4]:
-- PUBLISH, or SPUBLISH on a Redis Cluster (sharded: the channel shares the keys' slot).
-- Returns how many received it.
local received = redis.call(ARGV[4], ARGV[1], ARGV[2])
local ttl = tonumber(ARGV[3])
if ttl > 0 then
  redis.call('SET', KEYS[1], ARGV[2], 'PX', ttl)
else
  redis.call('SET', KEYS[1], ARGV[2])
end
redis.call('DEL', KEYS[2])
if #KEYS >= 3 then
  redis.call('DEL', KEYS[3])
end
return received
