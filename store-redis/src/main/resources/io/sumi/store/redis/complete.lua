-- Completes claims fenced on their token: KEYS[3..] rows; ARGV: token, retention ms, reply (optional,
-- for one row), then the ids. Returns how many rows were completed.
local token, retention, reply = ARGV[1], tonumber(ARGV[2]), optional(ARGV[3])
local n = 0
for i = 3, #KEYS do
  local key = KEYS[i]
  local s, t = unpack(redis.call('HMGET', key, 's', 't'))
  if s == 'I' and t == token then
    redis.call('HSET', key, 's', 'C', 'pa', ms(now))
    redis.call('HDEL', key, 'lu', 'e')
    if reply then redis.call('HSET', key, 'r', reply) end
    redis.call('PEXPIRE', key, retention)
    unindex(ARGV[i + 1])
    n = n + 1
  end
end
return {n}
