--[[ End a run that is not ending through a model answer: cancellation, failure, iteration cap with 'fail'.
  ARGV[5] expected iteration ('' = any)  ARGV[6] status  ARGV[7] stop reason or ''  ARGV[8] error JSON or ''
  ARGV[9] events JSON (the terminal event last)  ARGV[10] cancel tool calls still open ('1') or not
  Answers every open call of the batch (so the transcript stays paired), then appends the events.
  Returns 1, or 0 when the run already ended or moved past the expected iteration. ]]
local st = rcall('HMGET', stateKey, 'status', 'iteration')
if isTerminal(st[1]) then return 0 end
if ARGV[5] ~= '' and tonumber(st[2]) ~= tonumber(ARGV[5]) then return 0 end
absorbBatch('cancelled')
rcall('HSET', stateKey, 'status', ARGV[6], 'phase', 'done', 'stopReason', ARGV[7], 'error', ARGV[8], 'pending', '', 'updatedAt', nowMs)
emitAll(ARGV[9])
publish()
return 1
