--[[ Record the outcome of an executed call, exactly once.
  ARGV[5] callId  ARGV[6] outcome JSON  ARGV[7] its tool.call event, an envelope line
  Returns {'recorded'}, or {'answered'} when the call was already answered (a duplicate delivery: nothing changes). ]]
local callId = ARGV[5]
local stt = rcall('HGET', callsKey, callId .. ':st')
if stt ~= 'queued' and stt ~= 'running' then return { 'answered' } end
rcall('HSET', callsKey, callId .. ':out', ARGV[6], callId .. ':st', 'done')
emitAll(ARGV[7])
commit(rcall('HGET', stateKey, 'seq'))
return { 'recorded' }
