--[[ End a run that is not ending through a model answer: cancellation, failure, iteration cap with 'fail'.
  ARGV[5] expected iteration ('' = any)  ARGV[6] status  ARGV[7] stop reason or ''  ARGV[8] error JSON or ''
  ARGV[9] events JSON (the terminal event last)
  Answers every open call of the batch (so the transcript stays paired), then appends the events.
  KEYS[5] the deployment's parked-runs zset (a parked run leaves it)
  Returns {1, names of the calls it answered cancelled...}, or 0 when the run already ended or moved past the
  expected iteration. ]]
local st = rcall('HMGET', stateKey, 'status', 'iteration', 'batch', 'seq', 'phase', 'iterUsage')
if isTerminal(st[1]) then return 0 end
if ARGV[5] ~= '' and tonumber(st[2]) ~= tonumber(ARGV[5]) then return 0 end
mustTransition(st[1], ARGV[6])
local msgs, executed = batchMessages(st[3], 'cancelled')
  if executed > 0 then set('toolCalls', (tonumber(rcall('HGET', stateKey, 'toolCalls')) or 0) + executed) end
if #msgs > 0 then callSliced('RPUSH', msgsKey, msgs) end
rcall('ZREM', KEYS[5], runId)
completeIteration(st[2], st[5], st[6])
set('status', ARGV[6]); set('phase', 'done'); set('stopReason', ARGV[7]); set('error', ARGV[8]); set('pending', ''); set('updatedAt', nowMs)
emitAll(ARGV[9])
commit(st[4])
return withList({ 1 }, closedNames)
