--[[ Records an attempt of delivery ARGV[6] by the delivery job of generation ARGV[5] (compare-and-set on the record
  it read, ARGV[7]): the record becomes ARGV[8]; ARGV[9] '1' when the delivery is finished (delivered or given up),
  and the next one becomes the head.
  Returns {'recorded'}; {'stale'} the log is another generation's or expired, or another delivery of this job
  recorded an attempt first (nothing is written). ]]
local log = KEYS[5]
local f = rcall('HMGET', log, 'job', 'head', ARGV[6])
if f[1] ~= ARGV[5] or tonumber(f[2]) ~= tonumber(ARGV[6]) or f[3] ~= ARGV[7] then return { 'stale' } end
rcall('HSET', log, ARGV[6], ARGV[8])
if ARGV[9] == '1' then rcall('HSET', log, 'head', tonumber(ARGV[6]) + 1) end
return { 'recorded' }
