--[[ Mark a run for cancellation. The process holding its current step ends it (aborting streams and tools);
  a run with no step in flight (paused) is ended here.
  ARGV[5] reason  ARGV[6] events JSON for the direct end (run.cancelled)
  Returns 'terminal' (already finished: 409), 'ended' (ended here) or 'requested'. ]]
local st = rcall('HMGET', stateKey, 'status', 'cancel')
if isTerminal(st[1]) then return 'terminal' end
if st[2] == '' then rcall('HSET', stateKey, 'cancel', ARGV[5], 'updatedAt', nowMs) end
if st[1] == 'paused' then
  absorbBatch('cancelled')
  rcall('HSET', stateKey, 'status', 'cancelled', 'phase', 'done', 'stopReason', 'cancelled', 'pending', '', 'updatedAt', nowMs)
  emitAll(ARGV[6])
  publish()
  return 'ended'
end
return 'requested'
