-- The current window (length ARGV[2]): its start, its time left, the limit or false, its spend.
local start, left = window(tonumber(ARGV[2]))
local s = state(start)
return {ms(start), ms(left), s[1], s[2]}
