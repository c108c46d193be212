--[[ Record iteration k's model response before any side effect: the assistant message is the checkpoint (a
  retried job finds the run in phase 'tools' and never calls the model again for this iteration).
  ARGV[5] k  ARGV[6] assistant message JSON  ARGV[7] state updates JSON (usage totals, status/phase, batch, …)
  ARGV[8] calls JSON: [[callId, metaJson, outcomeJson or ''], ...] in the order the model listed them
  ARGV[9] events JSON  ARGV[10] parked-until score ('' = the run does not pause)
  KEYS[5] the deployment's parked-runs zset (a pausing run is added with its expiry as score)
  Returns 1, 0 when iteration k is no longer calling the model, or {callId, ...} (nothing written) when call ids of
  the batch are already used by the run (a provider reused them: the caller renames them and checkpoints again). ]]
local st = rcall('HMGET', stateKey, 'status', 'phase', 'iteration', 'seq')
if isTerminal(st[1]) or st[2] ~= 'model' or tonumber(st[3]) ~= tonumber(ARGV[5]) then return 0 end
local calls = cjson.decode(ARGV[8])
local taken = {}
for _, c in ipairs(calls) do
  if rcall('HEXISTS', callsKey, c[1] .. ':st') == 1 then taken[#taken + 1] = c[1] end
end
if #taken > 0 then return taken end
local u = cjson.decode(ARGV[7])
for i = 1, #u, 2 do
  if u[i] == 'status' then mustTransition(st[1], u[i + 1]) end
end
local len = rcall('RPUSH', msgsKey, ARGV[6])
set('batchMsg', len - 1)
if ARGV[10] ~= '' then rcall('ZADD', KEYS[5], ARGV[10], runId) end
for i = 1, #u, 2 do set(u[i], u[i + 1]) end
set('updatedAt', nowMs)
local fields = {}
for _, c in ipairs(calls) do
  fields[#fields + 1] = c[1]; fields[#fields + 1] = c[2]
  if c[3] ~= '' then
    fields[#fields + 1] = c[1] .. ':out'; fields[#fields + 1] = c[3]
    fields[#fields + 1] = c[1] .. ':st'; fields[#fields + 1] = 'done'
  else
    fields[#fields + 1] = c[1] .. ':st'; fields[#fields + 1] = 'queued'
  end
end
if #fields > 0 then callSliced('HSET', callsKey, fields) end
emitAll(ARGV[9])
commit(st[4])
return 1
