-- Shared by every ledger script (prepended to each). KEYS[1], KEYS[2]: the consumer's live-claim index
-- (member: message id, score: lease end) and first-claim index (score: first claim), both in the
-- consumer's hash slot like its rows. Every time is the server's (TIME), in milliseconds.
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local function ms(x) return string.format('%.0f', x) end
local FIELDS = {'s', 't', 'lu', 'a', 'fp', 'e', 'fs', 'pa'}
local function row(key) return redis.call('HMGET', key, unpack(FIELDS)) end
local function unindex(id)
  redis.call('ZREM', KEYS[1], id)
  redis.call('ZREM', KEYS[2], id)
end
-- An optional text argument: '0' for none, '1' followed by the text.
local function optional(arg)
  if string.sub(arg, 1, 1) == '1' then return string.sub(arg, 2) end
  return false
end
