--[[ Record the outcome of an executed call, exactly once.
  ARGV[5] callId  ARGV[6] outcome JSON  ARGV[7] tool.call event data JSON
  Returns 1, or 0 when the call was already answered (a duplicate delivery: nothing changes). ]]
local callId = ARGV[5]
local stt = rcall('HGET', callsKey, callId .. ':st')
if stt ~= 'queued' and stt ~= 'running' then return 0 end
rcall('HSET', callsKey, callId .. ':out', ARGV[6], callId .. ':st', 'done')
local st = rcall('HMGET', stateKey, 'seq', 'toolCalls')
set('toolCalls', (tonumber(st[2]) or 0) + 1)
emit('tool.call', ARGV[7])
commit(st[1])
return 1
