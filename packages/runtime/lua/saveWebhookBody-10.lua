--[[ Keeps the body of delivery ARGV[7], built for its first attempt, so that every attempt sends the same bytes.
  ARGV[6] the delivery job's generation  ARGV[8] the body
  Returns {'saved', body}: the body kept (one saved before wins); {'stale'} the log is another generation's, moved past
  that delivery, or expired. ]]
local log = webhooksKey
local f = rcall('HMGET', log, 'job', 'head')
if f[1] ~= ARGV[6] or tonumber(f[2]) ~= tonumber(ARGV[7]) then return { 'stale' } end
rcall('HSETNX', log, 'b:' .. ARGV[7], ARGV[8])
return { 'saved', rcall('HGET', log, 'b:' .. ARGV[7]) }
