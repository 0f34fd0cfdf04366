-- Shared by every spend-store script (prepended to each). KEYS[1]: the budget's limit (hash: l the
-- fleet's limit, c the limit last configured, u when it changed), KEYS[2]: its spend (hash: field the
-- window's start in epoch ms, value what the window has spent), both under the budget's hash tag.
-- ARGV[1]: '' to name windows by the server's clock (TIME), or a time in epoch ms (a test's window clock).
local now, late
if ARGV[1] == '' then
  local t = redis.call('TIME')
  now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
  -- Microseconds past the millisecond: a window's time left is rounded down, never up.
  late = tonumber(t[2]) % 1000 > 0 and 1 or 0
else
  now, late = tonumber(ARGV[1]), 0
end
local function ms(x) return string.format('%.0f', x) end
-- Doubles as text that reads back to the same double, so Lua, Java and the JDBC store add alike.
local function num(x) return string.format('%.17g', x) end
-- The current window of length len: its start and how long it has left, in ms.
local function window(len)
  local start = math.floor(now / len) * len
  return start, start + len - now - late
end
local function limit()
  local l = redis.call('HGET', KEYS[1], 'l')
  if l then return tonumber(l) end
  return false
end
local function spent(start) return tonumber(redis.call('HGET', KEYS[2], ms(start)) or '0') end
-- The spend outlives its last write by at least keep ms (never shortened).
local function keep(ms_)
  if redis.call('PTTL', KEYS[2]) < ms_ then redis.call('PEXPIRE', KEYS[2], ms_) end
end
-- The window's spend and the limit: {limit or false, spent}.
local function state(start)
  local l = limit()
  if not l then return {false, '0'} end
  return {num(l), num(spent(start))}
end
