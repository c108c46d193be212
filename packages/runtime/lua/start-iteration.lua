--[[ Start iteration k: compare-and-set from (iteration k-1, phase ARGV[6]) to (iteration k, phase model).
  Appends the previous batch's tool messages in call order, then an optional instruction message.
  ARGV[5] k  ARGV[6] expected phase  ARGV[7] call mode ('tools' or the finalize reason)  ARGV[8] extra message JSON or ''
  ARGV[9] events JSON
  Returns 1, or 0 when the run is not where the caller expected. ]]
local st = rcall('HMGET', stateKey, 'status', 'phase', 'iteration', 'cancel')
local k = tonumber(ARGV[5])
if isTerminal(st[1]) or st[4] ~= '' or st[2] ~= ARGV[6] or tonumber(st[3]) ~= k - 1 then return 0 end
absorbBatch('error')
if ARGV[8] ~= '' then rcall('RPUSH', msgsKey, ARGV[8]) end
rcall('HSET', stateKey, 'iteration', k, 'phase', 'model', 'status', 'running', 'callMode', ARGV[7], 'updatedAt', nowMs)
emitAll(ARGV[9])
publish()
return 1
