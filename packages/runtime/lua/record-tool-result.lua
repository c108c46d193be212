--[[ Record the outcome of an executed call, exactly once.
  ARGV[5] callId  ARGV[6] outcome JSON  ARGV[7] tool.call event data JSON
  Returns 1, or 0 when the call was already answered (a duplicate delivery: nothing changes). ]]
local callId = ARGV[5]
local stt = rcall('HGET', callsKey, callId .. ':st')
if stt ~= 'queued' and stt ~= 'running' then return 0 end
rcall('HSET', callsKey, callId .. ':out', ARGV[6], callId .. ':st', 'done')
local seq = rcall('HINCRBY', stateKey, 'seq', 1)
rcall('RPUSH', eventsKey, '{"seq":' .. seq .. ',"runId":"' .. runId .. '","type":"tool.call","at":"' .. nowIso .. '","data":' .. ARGV[7] .. '}')
rcall('PUBLISH', channel, seq)
return 1
