-- Gives back claims whose handler never ran: KEYS[3..] rows; ARGV: token, hand-back token, ms a row
-- outlives its lease, then the ids. A row the claim inserted is deleted; a row it took over gets its
-- attempt count back, its lease ends now and it carries the hand-back token. Returns how many.
local token, handback, keep = ARGV[1], ARGV[2], tonumber(ARGV[3])
local n = 0
for i = 3, #KEYS do
  local key = KEYS[i]
  local s, t, a = unpack(redis.call('HMGET', key, 's', 't', 'a'))
  if s == 'I' and t == token then
    if tonumber(a) <= 1 then
      redis.call('DEL', key)
    else
      redis.call('HSET', key, 'a', tostring(tonumber(a) - 1), 'lu', ms(now), 't', handback)
      redis.call('PEXPIRE', key, keep)
    end
    unindex(ARGV[i + 1])
    n = n + 1
  end
end
return {n}
