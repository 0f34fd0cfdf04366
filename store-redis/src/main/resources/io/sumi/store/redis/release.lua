-- Releases claims fenced on their token (the lease ends now): KEYS[3..] rows; ARGV: token, ms a row
-- outlives its lease, error (optional), then the ids. Returns how many rows were released.
local token, keep, err = ARGV[1], tonumber(ARGV[2]), optional(ARGV[3])
local n = 0
for i = 3, #KEYS do
  local key = KEYS[i]
  local s, t = unpack(redis.call('HMGET', key, 's', 't'))
  if s == 'I' and t == token then
    redis.call('HSET', key, 'lu', ms(now))
    if err then redis.call('HSET', key, 'e', err) else redis.call('HDEL', key, 'e') end
    redis.call('PEXPIRE', key, keep)
    unindex(ARGV[i + 1])
    n = n + 1
  end
end
return {n}
