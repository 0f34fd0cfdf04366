-- Adds ARGV[3] to the current window (length ARGV[2]) if the spend stays within the limit; ARGV[4]:
-- how long the spend outlives this write. Returns the window's start, its time left, 1 if reserved.
local len, amount = tonumber(ARGV[2]), tonumber(ARGV[3])
local start, left = window(len)
local l = limit()
local reserved = 0
if l then
  local total = spent(start) + amount
  if total <= l then
    redis.call('HSET', KEYS[2], ms(start), num(total))
    keep(tonumber(ARGV[4]))
    reserved = 1
  end
end
return {ms(start), ms(left), reserved}
