--[[ A tool-runner is about to execute a call: decide, in one step, whether it may, and record that it starts.
  ARGV[6] callId  ARGV[7] the tool.call event (status running), an envelope line
  ARGV[8] this delivery (job id @ lock token): it owns the call once it records the start
  ARGV[9] the owner this delivery takes the call over from ('' = none): a redelivery of a call that was running
  under a delivery that lost its job (crashed, or stalled past its lock)
  Returns {'first'} (recorded as running under this owner, its `running` event emitted: go ahead), {'taken'} (taken
  over from ARGV[9]: run it again), {'owned', owner} (running under another delivery: the caller decides whether it
  is the stale one), 'answered' (stale job, or already answered), 'cancel' (the run ended or is being cancelled) or
  'expired' (the run's wall-clock budget is spent). Only 'first' and 'taken' write anything. ]]
local callId = ARGV[6]
local st, call = readState({ 'status', 'cancel', 'createdAt', 'maxWallMs', 'seq', 'watch' }, { callId .. ':st', callId .. ':own' })
local stt, own = call[1], call[2] or ''
if not stt or stt == 'done' then return { 'answered' } end
if isTerminal(st[1]) or (st[2] and st[2] ~= '') then return { 'cancel' } end
local wall = tonumber(st[4]) or 0
if wall > 0 and tonumber(nowMs) > (tonumber(st[3]) or 0) + wall then return { 'expired' } end
if stt == 'running' then
  if own == ARGV[8] then return { 'first' } end
  if ARGV[9] == '' or own ~= ARGV[9] then return { 'owned', own } end
  setCall(callId, ':own', ARGV[8])
  commit(st[5], st[6])
  return { 'taken' }
end
setCall(callId, ':st', 'running', stt)
setCall(callId, ':own', ARGV[8])
emitAll(ARGV[7])
commit(st[5], st[6])
return { 'first' }
