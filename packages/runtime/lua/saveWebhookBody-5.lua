--[[ Keeps the body of delivery ARGV[6], built for its first attempt, so that every attempt sends the same bytes.
  ARGV[5] the delivery job's generation  ARGV[7] the body
  Returns {'saved', body}: the body kept (one saved before wins); {'stale'} the log is another generation's, moved past
  that delivery, or expired. ]]
local log = KEYS[5]
local f = rcall('HMGET', log, 'job', 'head')
if f[1] ~= ARGV[5] or tonumber(f[2]) ~= tonumber(ARGV[6]) then return { 'stale' } end
rcall('HSETNX', log, 'b:' .. ARGV[6], ARGV[7])
return { 'saved', rcall('HGET', log, 'b:' .. ARGV[6]) }
