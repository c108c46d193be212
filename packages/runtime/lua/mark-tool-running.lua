--[[ Record that a call starts executing, for tools whose start must be known after a crash (retry: never).
  ARGV[5] callId  ARGV[6] tool.call event data (status running)
  Returns 1 (first start: go ahead), 0 (already started once: the caller answers outcome_unknown) or -1 (answered). ]]
local callId = ARGV[5]
local stt = rcall('HGET', callsKey, callId .. ':st')
if stt ~= 'queued' then
  if stt == 'running' then return 0 end
  return -1
end
rcall('HSET', callsKey, callId .. ':st', 'running')
emit('tool.call', ARGV[6])
commit(rcall('HGET', stateKey, 'seq'))
return 1
