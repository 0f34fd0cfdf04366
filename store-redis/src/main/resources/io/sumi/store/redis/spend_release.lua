-- Takes ARGV[3] back from the window starting at ARGV[2], if the window is still kept.
local field = ms(tonumber(ARGV[2]))
local s = redis.call('HGET', KEYS[2], field)
if not s then return {0} end
redis.call('HSET', KEYS[2], field, num(tonumber(s) - tonumber(ARGV[3])))
return {1}
