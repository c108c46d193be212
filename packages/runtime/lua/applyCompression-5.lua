--[[ Replace the transcript the model sees (prefix + history from an index) — compare-and-set on the iteration
  calling the model and on the transcript version — and keep a record of the last three compressions.
  KEYS[5] compressions list
  ARGV[5] k  ARGV[6] expected transcript version  ARGV[7] prefix messages JSON  ARGV[8] first kept history index
  ARGV[9] compression record JSON  ARGV[10] events (envelope lines)
  Returns {'applied', new transcript version}, or {'stale'} when the run or its transcript moved on. ]]
local st = rcall('HMGET', stateKey, 'status', 'phase', 'iteration', 'tv', 'seq', 'watch', 'lay', 'wh')
checkLayout(st[1], st[7])
useNotify(st[8])
if isTerminal(st[1]) or st[2] ~= 'model' or tonumber(st[3]) ~= tonumber(ARGV[5]) or (tonumber(st[4]) or 0) ~= tonumber(ARGV[6]) then return { 'stale' } end
local tv = (tonumber(st[4]) or 0) + 1
set('viewPrefix', ARGV[7]); set('viewFrom', ARGV[8]); set('tv', tv); set('updatedAt', nowMs)
rcall('LPUSH', KEYS[5], ARGV[9])
rcall('LTRIM', KEYS[5], 0, 2)
emitAll(ARGV[10])
commit(st[5], st[6])
return { 'applied', tv }
