-- The window starting at ARGV[2]: {limit or false, spent}.
return state(tonumber(ARGV[2]))
