-- One consumer's gauges: KEYS[3] the held set. Returns the first claim of its oldest live claim (or
-- false), the server's now, and how many rows are held for reconciliation.
local ended = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', ms(now))
for _, id in ipairs(ended) do unindex(id) end
local oldest = false
for _, id in ipairs(redis.call('ZRANGE', KEYS[1], 0, -1)) do
  local fs = tonumber(redis.call('ZSCORE', KEYS[2], id))
  if fs and (not oldest or fs < oldest) then oldest = fs end
end
if oldest then oldest = ms(oldest) end
return {oldest, ms(now), redis.call('SCARD', KEYS[3])}
