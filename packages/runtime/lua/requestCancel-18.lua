--[[ Mark a run for cancellation. The process holding its current step ends it (aborting streams and tools);
  a run with no step in flight (paused) is ended here.
  ARGV[6] reason  ARGV[7] events (envelope lines) of the direct end (run.cancelled)
  Returns {'terminal'} (already finished: 409), {'ended', names of the calls it cancelled...} (ended here) or
  {'requested'}. ]]
local st = readState({ 'status', 'cancel', 'batch', 'seq', 'iteration', 'phase', 'iterUsage', 'watch' })
if isTerminal(st[1]) then return { 'terminal' } end
if st[2] == '' then set('cancel', ARGV[6]) end
set('updatedAt', nowMs)
if st[1] == 'paused' then
  mustTransition(st[1], 'cancelled')
  closeBatchAndEnd(st[3], st[5], st[6], st[7], 'cancelled', 'cancelled')
  emitAll(ARGV[7])
  commit(st[4], st[8])
  return withList({ 'ended' }, closedNames)
end
commit(st[4], st[8])
return { 'requested' }
