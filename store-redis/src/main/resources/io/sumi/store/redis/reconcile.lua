-- Marks one claim for reconciliation, fenced on its token: KEYS[3] the held set, KEYS[4] the row;
-- ARGV: token, reason (optional), id. The row then never expires. Returns 1 or 0.
local key, token, reason, id = KEYS[4], ARGV[1], optional(ARGV[2]), ARGV[3]
local s, t = unpack(redis.call('HMGET', key, 's', 't'))
if s == 'I' and t == token then
  redis.call('HSET', key, 's', 'R')
  redis.call('HDEL', key, 'lu')
  if reason then redis.call('HSET', key, 'e', reason) else redis.call('HDEL', key, 'e') end
  redis.call('PERSIST', key)
  unindex(id)
  redis.call('SADD', KEYS[3], id)
  return {1}
end
return {0}
