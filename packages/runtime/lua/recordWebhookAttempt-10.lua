--[[ Records an attempt of delivery ARGV[7] by the delivery job of generation ARGV[6] (compare-and-set on the record
  it read, ARGV[8]): the record becomes ARGV[9]; ARGV[10] '1' when the delivery is finished (delivered or given up),
  and the next one becomes the head.
  Returns {'recorded'}; {'stale'} the log is another generation's or expired, or another delivery of this job
  recorded an attempt first (nothing is written). ]]
local log = webhooksKey
local f = rcall('HMGET', log, 'job', 'head', ARGV[7])
if f[1] ~= ARGV[6] or tonumber(f[2]) ~= tonumber(ARGV[7]) or f[3] ~= ARGV[8] then return { 'stale' } end
rcall('HSET', log, ARGV[7], ARGV[9])
if ARGV[10] == '1' then rcall('HSET', log, 'head', tonumber(ARGV[7]) + 1) end
return { 'recorded' }
