--[[ Record the outcome of an executed call, exactly once, by the delivery that owns it.
  ARGV[6] callId  ARGV[7] outcome JSON  ARGV[8] its tool.call event, an envelope line
  ARGV[9] the call's `running` event (an envelope line) when its start was not recorded first ('' otherwise): a read
  tool that is safe to retry runs without a separate start step, and this step makes the checks that one would
  have — a run that ended or is being cancelled gets the call answered `cancelled`, a spent wall-clock budget
  `skipped` (the result of a read is discarded, nothing else happened) — then emits `running` before the result.
  ARGV[10] the delivery that recorded the start (job id @ lock token; '' with ARGV[9]): a call running under another
  owner — this delivery stalled past its lock and its job was handed on — is not recorded.
  ARGV[11] the other calls of the call's batch, space-separated ('' = none), when the batch was published without a
  flow parent (ToolJob.batch): the answer says whether they are all answered too, read in this step's one HMGET.
  Returns {'recorded', '1' when the other calls of ARGV[11] are all answered, else '0'}, {'closed', status} (answered
  cancelled or skipped instead), {'stale', owner} (another delivery took the call over, or answered it, while this
  one stalled: nothing changes), or {'answered'} when the call was already answered (a duplicate delivery: nothing
  changes). ]]
local callId = ARGV[6]
local callFields = { callId .. ':st', callId .. ':own' }
for other in string.gmatch(ARGV[11] or '', '%S+') do callFields[#callFields + 1] = other .. ':st' end
local st, call = readState({ 'seq', 'watch', 'status', 'cancel', 'createdAt', 'maxWallMs' }, callFields)
local stt, own = call[1], call[2] or ''
if ARGV[10] ~= '' and own ~= ARGV[10] and (stt == 'running' or stt == 'done') then return { 'stale', own } end
if stt ~= 'queued' and stt ~= 'running' then return { 'answered' } end
if ARGV[9] ~= '' and stt == 'queued' then
  if isTerminal(st[3]) or (st[4] and st[4] ~= '') then
    closeCall(callId, 'cancelled')
    commit(st[1], st[2])
    return { 'closed', 'cancelled' }
  end
  local wall = tonumber(st[6]) or 0
  if wall > 0 and tonumber(nowMs) > (tonumber(st[5]) or 0) + wall then
    closeCall(callId, 'skipped')
    set('pendingFinal', 'budget_exceeded')
    commit(st[1], st[2])
    return { 'closed', 'skipped' }
  end
  emitAll(ARGV[9])
end
setCall(callId, ':out', ARGV[7]); setCall(callId, ':st', 'done', stt)
emitAll(ARGV[8])
commit(st[1], st[2])
-- (a call the run does not know reads false: nothing to wait for)
local last = '1'
for i = 3, #call do
  if call[i] and call[i] ~= 'done' then last = '0' end
end
return { 'recorded', last }
