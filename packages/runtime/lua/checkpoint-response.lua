--[[ Record iteration k's model response before any side effect (a retried job reuses it).
  ARGV[5] k  ARGV[6] response JSON  ARGV[7] assistant message JSON
  ARGV[8] prompt  ARGV[9] completion  ARGV[10] reasoning  ARGV[11] total tokens  ARGV[12] cost USD
  ARGV[13] outcome: 'final' or 'tools'  ARGV[14] stop reason  ARGV[15] output
  ARGV[16] calls JSON: [[callId, metaJson, outcomeJson or ''], ...] in the order the model listed them
  ARGV[17] batch JSON (call ids)  ARGV[18] pendingFinal  ARGV[19] repeat fingerprint  ARGV[20] repeat count
  ARGV[21] events JSON  ARGV[22] this call's usage JSON (reported by iteration.completed)
  Returns 1, or 0 when iteration k is no longer calling the model. ]]
local st = rcall('HMGET', stateKey, 'status', 'phase', 'iteration')
if isTerminal(st[1]) or st[2] ~= 'model' or tonumber(st[3]) ~= tonumber(ARGV[5]) then return 0 end
rcall('HSET', respKey, ARGV[5], ARGV[6])
rcall('RPUSH', msgsKey, ARGV[7])
rcall('HINCRBY', stateKey, 'promptTokens', ARGV[8])
rcall('HINCRBY', stateKey, 'completionTokens', ARGV[9])
rcall('HINCRBY', stateKey, 'reasoningTokens', ARGV[10])
rcall('HINCRBY', stateKey, 'totalTokens', ARGV[11])
rcall('HINCRBYFLOAT', stateKey, 'costUsd', ARGV[12])
rcall('HINCRBY', stateKey, 'llmCalls', 1)
rcall('HSET', stateKey, 'iterUsage', ARGV[22])
if ARGV[13] == 'final' then
  rcall('HSET', stateKey, 'status', 'completed', 'phase', 'done', 'stopReason', ARGV[14], 'output', ARGV[15], 'updatedAt', nowMs)
else
  for _, c in ipairs(cjson.decode(ARGV[16])) do
    rcall('HSET', callsKey, c[1], c[2])
    if c[3] ~= '' then
      rcall('HSET', callsKey, c[1] .. ':out', c[3], c[1] .. ':st', 'done')
    else
      rcall('HSET', callsKey, c[1] .. ':st', 'queued')
    end
  end
  rcall('HSET', stateKey, 'phase', 'tools', 'batch', ARGV[17], 'pendingFinal', ARGV[18], 'rfp', ARGV[19], 'rcount', ARGV[20], 'updatedAt', nowMs)
end
emitAll(ARGV[21])
publish()
return 1
