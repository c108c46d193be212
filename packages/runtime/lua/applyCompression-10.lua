--[[ Replace the transcript the model sees (prefix + history from an index) — compare-and-set on the iteration
  calling the model and on the transcript version — and keep a record of the last three compressions.
  ARGV[6] k  ARGV[7] expected transcript version  ARGV[8] prefix messages JSON  ARGV[9] first kept history index
  ARGV[10] compression record JSON  ARGV[11] events (envelope lines)
  Returns {'applied', new transcript version}, or {'stale'} when the run or its transcript moved on. ]]
local st = rcall('HMGET', stateKey, 'status', 'phase', 'iteration', 'tv', 'seq', 'watch', 'lay', 'wh')
checkLayout(st[1], st[7])
useNotify(st[8])
if isTerminal(st[1]) or st[2] ~= 'model' or tonumber(st[3]) ~= tonumber(ARGV[6]) or (tonumber(st[4]) or 0) ~= tonumber(ARGV[7]) then return { 'stale' } end
local tv = (tonumber(st[4]) or 0) + 1
set('viewPrefix', ARGV[8]); set('viewFrom', ARGV[9]); set('tv', tv); set('updatedAt', nowMs)
rcall('LPUSH', compressionsKey, ARGV[10])
rcall('LTRIM', compressionsKey, 0, 2)
emitAll(ARGV[11])
commit(st[5], st[6])
return { 'applied', tv }
