-- Claims messages: KEYS[3..] their rows; ARGV: token, lease ms, ms a row outlives its lease, then per
-- row its id and fingerprint (optional). Returns each row after the claim.
local token, lease, keep = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3])
local lease_until = now + lease
-- Claims whose holder vanished (no completion, release or renewal) leave the live index here, a few per call.
local ended = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', ms(now), 'LIMIT', 0, 16)
for _, id in ipairs(ended) do unindex(id) end
local out = {}
for i = 3, #KEYS do
  local key, id, fp = KEYS[i], ARGV[2 * i - 2], optional(ARGV[2 * i - 1])
  local s = redis.call('HGET', key, 's')
  local claimed = false
  if not s then
    redis.call('HSET', key, 's', 'I', 't', token, 'lu', ms(lease_until), 'a', '1', 'fs', ms(now))
    if fp then redis.call('HSET', key, 'fp', fp) end
    claimed = true
  elseif s == 'I' and tonumber(redis.call('HGET', key, 'lu')) <= now then
    redis.call('HSET', key, 't', token, 'lu', ms(lease_until))
    redis.call('HINCRBY', key, 'a', 1)
    claimed = true
  end
  if claimed then
    redis.call('PEXPIRE', key, lease + keep)
    redis.call('ZADD', KEYS[1], ms(lease_until), id)
    redis.call('ZADD', KEYS[2], redis.call('HGET', key, 'fs'), id)
  end
  out[#out + 1] = row(key)
end
return out
