-- Adds ARGV[3] to the window starting at ARGV[2] whatever the limit; ARGV[4]: how long the spend
-- outlives this write.
local start = tonumber(ARGV[2])
redis.call('HSET', KEYS[2], ms(start), num(spent(start) + tonumber(ARGV[3])))
keep(tonumber(ARGV[4]))
return {1}
