-- Extends live claims fenced on their token: KEYS[3..] rows; ARGV: token, lease ms, ms a row outlives
-- its lease, then the ids. Returns how many claims were renewed.
local token, lease, keep = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3])
local lease_until = now + lease
local n = 0
for i = 3, #KEYS do
  local key, id = KEYS[i], ARGV[i + 1]
  local s, t, fs = unpack(redis.call('HMGET', key, 's', 't', 'fs'))
  if s == 'I' and t == token then
    redis.call('HSET', key, 'lu', ms(lease_until))
    redis.call('PEXPIRE', key, lease + keep)
    redis.call('ZADD', KEYS[1], ms(lease_until), id)
    redis.call('ZADD', KEYS[2], fs, id)
    n = n + 1
  end
end
return {n}
