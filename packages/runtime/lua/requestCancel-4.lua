--[[ Mark a run for cancellation. The process holding its current step ends it (aborting streams and tools);
  a run with no step in flight (paused) is ended here.
  ARGV[5] reason  ARGV[6] events (envelope lines) of the direct end (run.cancelled)
  KEYS[3] the deployment's parked-runs zset (a parked run leaves it)
  Returns {'terminal'} (already finished: 409), {'ended', names of the calls it cancelled...} (ended here) or
  {'requested'}. ]]
local st = readState({ 'status', 'cancel', 'batch', 'seq', 'iteration', 'phase', 'iterUsage', 'watch' })
if isTerminal(st[1]) then return { 'terminal' } end
if st[2] == '' then set('cancel', ARGV[5]) end
set('updatedAt', nowMs)
if st[1] == 'paused' then
  mustTransition(st[1], 'cancelled')
  closeBatchAndEnd(st[3], st[5], st[6], st[7], 'cancelled', 'cancelled')
  emitAll(ARGV[6])
  commit(st[4], st[8])
  return withList({ 'ended' }, closedNames)
end
commit(st[4], st[8])
return { 'requested' }
