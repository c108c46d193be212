--[[ A tool-runner is about to execute a call.
  KEYS as every run script. ARGV[5] callId  ARGV[6] retry policy ('safe' | 'never')
  Returns 'run' (execute; second value = attempt), 'done' (already answered: reuse the recorded result, never
  execute again), or 'missing' (no such call: stale job). Calls of a cancelled run are answered `cancelled`,
  a call cut off mid-execution with retry 'never' is answered `outcome_unknown`, and a call that starts after
  the run's wall-clock budget is answered `skipped`. ]]
local callId = ARGV[5]
local stt = rcall('HGET', callsKey, callId .. ':st')
if not stt then return { 'missing', 0 } end
if stt == 'done' then return { 'done', 0 } end
local st = rcall('HMGET', stateKey, 'status', 'cancel', 'createdAt', 'maxWallMs')
if isTerminal(st[1]) or st[2] ~= '' then
  closeCall(callId, 'cancelled', 'cancelled', 'The run was cancelled before this call ran.', false)
  publish()
  return { 'done', 0 }
end
if stt == 'running' and ARGV[6] == 'never' then
  closeCall(callId, 'error', 'outcome_unknown', 'The worker executing this call stopped mid-execution and the tool must not be retried: its outcome is unknown.', false)
  publish()
  return { 'done', 0 }
end
local wall = tonumber(st[4] or '0') or 0
if wall > 0 and tonumber(nowMs) > tonumber(st[3]) + wall then
  closeCall(callId, 'skipped', 'skipped', 'Skipped: the run exceeded its wall-clock budget (maxWallMs).', false)
  rcall('HSET', stateKey, 'pendingFinal', 'budget_exceeded')
  publish()
  return { 'done', 0 }
end
local attempt = rcall('HINCRBY', callsKey, callId .. ':n', 1)
if stt == 'queued' then
  rcall('HSET', callsKey, callId .. ':st', 'running')
  emit('tool.call', toolCallEvent(callId, cjson.decode(rcall('HGET', callsKey, callId)), 'running'))
  publish()
end
return { 'run', attempt }
