-- Registers the configured limit ARGV[2]: the fleet's limit unless one set at run time over the same
-- configuration is kept. Returns the fleet's limit.
local configured = tonumber(ARGV[2])
local c = redis.call('HGET', KEYS[1], 'c')
if not c or tonumber(c) ~= configured then
  redis.call('HSET', KEYS[1], 'l', num(configured), 'c', num(configured), 'u', ms(now))
end
return {num(limit())}
