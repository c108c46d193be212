--[[ A new delivery of the job that owns iteration k's model call takes it over: BullMQ handed the job on (the worker
  died, or missed a lock renewal and may still be running). Compare-and-set on (iteration k, phase model, owner):
  from here on the appends and the checkpoint of the earlier delivery are refused (fenced by owner), so two
  deliveries never interleave their deltas or both record a response. When the earlier delivery had sent deltas of
  this iteration, the same step tells clients to drop them (ARGV[9], `llm.retry` with discardOutput): no delta of the
  earlier delivery can come between the claim and that event.
  ARGV[6] k  ARGV[7] the owner the caller read  ARGV[8] the new owner (job id @ lock token)
  ARGV[9] the llm.retry event (an envelope line) to emit when deltas of iteration k were sent
  Returns {'claimed', discarded (1 when the event was emitted, else 0)}, or {'stale'} when the iteration moved on or
  another delivery claimed it first. ]]
local st = readState({ 'status', 'phase', 'iteration', 'owner', 'deltaIter', 'seq', 'watch' })
if isTerminal(st[1]) or st[2] ~= 'model' or tonumber(st[3]) ~= tonumber(ARGV[6]) or (st[4] or '') ~= ARGV[7] then return { 'stale' } end
set('owner', ARGV[8])
local discarded = 0
if ARGV[9] ~= '' and tonumber(st[5]) == tonumber(ARGV[6]) then
  emitAll(ARGV[9])
  discarded = 1
end
commit(st[6], st[7])
return { 'claimed', discarded }
