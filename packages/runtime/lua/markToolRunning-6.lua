--[[ A tool-runner is about to execute a call: decide, in one step, whether it may, and record that it starts.
  ARGV[5] callId  ARGV[6] the tool.call event (status running), an envelope line
  Returns {'first'} (recorded as running, its `running` event emitted: go ahead), 'again' (it started before: a
  redelivery after a crash), 'answered' (stale job, or already answered), 'cancel' (the run ended or is being
  cancelled) or 'expired' (the run's wall-clock budget is spent). Only 'first' writes anything. ]]
local callId = ARGV[5]
local st, call = readState({ 'status', 'cancel', 'createdAt', 'maxWallMs', 'seq', 'watch' }, { callId .. ':st' })
local stt = call[1]
if not stt or stt == 'done' then return { 'answered' } end
if isTerminal(st[1]) or (st[2] and st[2] ~= '') then return { 'cancel' } end
local wall = tonumber(st[4]) or 0
if wall > 0 and tonumber(nowMs) > (tonumber(st[3]) or 0) + wall then return { 'expired' } end
if stt == 'running' then return { 'again' } end
setCall(callId, ':st', 'running')
emitAll(ARGV[6])
commit(st[5], st[6])
return { 'first' }
