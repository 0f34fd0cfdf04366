-- Forgets the windows that started more than ARGV[3] windows (length ARGV[2]) before the current one.
local len = tonumber(ARGV[2])
local start = window(len)
local oldest = start - math.max(1, tonumber(ARGV[3])) * len
local forgotten = 0
for _, field in ipairs(redis.call('HKEYS', KEYS[2])) do
  if tonumber(field) < oldest then
    redis.call('HDEL', KEYS[2], field)
    forgotten = forgotten + 1
  end
end
return {forgotten}
