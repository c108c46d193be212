--[[ Answer a call that must not run, for reason `kind` (closed-calls.ts CLOSED_CALLS: cancelled, outcome_unknown, skipped
  — the run then finalizes —, job_failed, no_runner).
  ARGV[6] callId  ARGV[7] kind  ARGV[8] the owner the caller saw running the call ('' = any): when another delivery
  has taken the call over since, nothing changes  ARGV[9] the delivery answering it ('' = none): it owns the answered call
  from here on, so the result of the delivery it answered for (stalled, not dead) is refused as stale
  Returns {'closed'}, {'answered'} when the call was already answered, or {'stale'} (ARGV[8] no longer owns it). ]]
local callId = ARGV[6]
local st, call = readState({ 'seq', 'watch' }, { callId .. ':st', callId .. ':own' })
local stt = call[1]
if not stt or stt == 'done' then return { 'answered' } end
if ARGV[8] and ARGV[8] ~= '' and (call[2] or '') ~= ARGV[8] then return { 'stale' } end
if ARGV[9] and ARGV[9] ~= '' then setCall(callId, ':own', ARGV[9]) end
closeCall(callId, ARGV[7])
if ARGV[7] == 'skipped' then set('pendingFinal', 'budget_exceeded') end
commit(st[1], st[2])
return { 'closed' }
