-- Sets the fleet's limit to ARGV[2] (a change at run time); a budget not registered yet is
-- registered with it as its configured limit.
local l = num(tonumber(ARGV[2]))
if redis.call('HEXISTS', KEYS[1], 'c') == 1 then
  redis.call('HSET', KEYS[1], 'l', l, 'u', ms(now))
else
  redis.call('HSET', KEYS[1], 'l', l, 'c', l, 'u', ms(now))
end
return {1}
