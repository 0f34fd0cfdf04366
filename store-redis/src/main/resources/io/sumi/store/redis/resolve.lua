-- Resolves a row held for reconciliation: KEYS[3] the held set, KEYS[4] the row; ARGV: 'complete'
-- or 'delete', retention ms, id. Returns 1, or 0 if the row is not held.
local key, how, retention, id = KEYS[4], ARGV[1], tonumber(ARGV[2]), ARGV[3]
if redis.call('HGET', key, 's') ~= 'R' then return {0} end
if how == 'complete' then
  redis.call('HSET', key, 's', 'C', 'pa', ms(now))
  redis.call('HDEL', key, 'lu')
  redis.call('PEXPIRE', key, retention)
else
  redis.call('DEL', key)
end
redis.call('SREM', KEYS[3], id)
return {1}
