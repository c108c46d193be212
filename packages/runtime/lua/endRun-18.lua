--[[ End a run that is not ending through a model answer: cancellation, failure, iteration cap with 'fail', a
  context limit with nothing left to ask. Its target is a terminal status, which it sets itself (phase done).
  ARGV[6] expected iteration ('' = any)  ARGV[7] target status (completed, failed or cancelled)  ARGV[8] stop reason
  or ''  ARGV[9] error JSON or ''  ARGV[10] events (envelope lines, the terminal event last)
  Answers every open call of the batch (so the transcript stays paired), then appends the events.
  ARGV[11] the delivery that owns the iteration's model call ('' = no fence): a delivery that lost it (its job was
  handed on while it stalled) cannot end the run while the new owner streams
  Returns {'ended', names of the calls it answered cancelled...}, or {'stale'} when the run already ended or moved
  past the expected iteration. ]]
if not isTerminal(ARGV[7]) then error('endRun: ' .. tostring(ARGV[7]) .. ' is not a terminal status') end
local st = readState({ 'status', 'iteration', 'batch', 'seq', 'phase', 'iterUsage', 'watch', 'owner' })
if isTerminal(st[1]) then return { 'stale' } end
if ARGV[11] and ARGV[11] ~= '' and (st[8] or '') ~= ARGV[11] then return { 'stale' } end
if ARGV[6] ~= '' and tonumber(st[2]) ~= tonumber(ARGV[6]) then return { 'stale' } end
mustTransition(st[1], ARGV[7])
closeBatchAndEnd(st[3], st[2], st[5], st[6], ARGV[7], ARGV[8])
set('error', ARGV[9])
emitAll(ARGV[10])
commit(st[4], st[7])
return withList({ 'ended' }, closedNames)
