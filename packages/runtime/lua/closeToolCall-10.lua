--[[ Answer a call that must not run: 'cancelled' (the run is ending), 'outcome_unknown' (cut off mid-execution and
  not retryable), 'skipped' (the run's wall-clock budget is spent; the run then finalizes), 'job_failed' (its job failed for good),
  'no_runner' (no runner of its pool took its job up within the pool's bound).
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
if ARGV[7] == 'cancelled' then
  closeCall(callId, 'cancelled', 'cancelled', 'The run was cancelled before this call ran.', false)
elseif ARGV[7] == 'job_failed' then
  closeCall(callId, 'error', 'tool_error', 'The tool call could not be executed: its job failed.', true)
elseif ARGV[7] == 'no_runner' then
  closeCall(callId, 'error', 'tool_error', 'No tool-runner of its pool took this call up in time (the pool may have no running runner).', true)
elseif ARGV[7] == 'outcome_unknown' then
  closeCall(callId, 'error', 'outcome_unknown', 'The worker executing this call stopped mid-execution and the tool must not be retried: its outcome is unknown.', false)
else
  closeCall(callId, 'skipped', 'skipped', 'Skipped: the run exceeded its wall-clock budget (maxWallMs).', false)
  set('pendingFinal', 'budget_exceeded')
end
commit(st[1], st[2])
return { 'closed' }
