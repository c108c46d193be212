--[[ Record iteration k's model response before any side effect: the assistant message is the checkpoint (a
  retried job finds the run past phase 'model' and never calls the model again for this iteration). It also moves
  the run to where the response takes it — its target — and sets that status and phase itself:
    tools      running, phase tools (the calls run, or a repair turn follows)
    paused     paused, phase paused (calls wait for a decision; the run joins the parked set)
    completed  completed, phase done (a final answer)
    failed     failed, phase done (an answer that cannot be accepted: structured output still invalid)
  ARGV[6] k  ARGV[7] assistant message JSON  ARGV[8] target  ARGV[9] state updates JSON [field, value, ...]: only
  the fields of CHECKPOINT_FIELDS (usage totals and what the response decided), never status or phase
  ARGV[10] calls JSON: [[callId, metaJson, outcomeJson or ''], ...] in the order the model listed them
  ARGV[11] events (envelope lines)  ARGV[12] parked-until score (target paused)
  ARGV[13] the delivery that owns the iteration's model call ('' = no fence): a delivery that lost it records nothing
  ARGV[14] usage increments JSON [field, increment, ...] (USAGE_FIELDS): this call's usage, added to the stored totals
  Returns {'recorded'}, {'stale'} when iteration k is no longer calling the model, or {'ids_taken', callId, ...}
  (nothing written) when call ids of the batch are already used by the run (a provider reused them: the caller
  renames them and checkpoints again). ]]
local TARGETS = { tools = { 'running', 'tools' }, paused = { 'paused', 'paused' }, completed = { 'completed', 'done' }, failed = { 'failed', 'done' } }
local USAGE_FIELDS = { promptTokens = 1, completionTokens = 2, reasoningTokens = 3, cachedTokens = 4, totalTokens = 5, costUsd = 6, llmCalls = 7 }
local CHECKPOINT_FIELDS = {
  iterUsage = true,
  stopReason = true, output = true, outputJson = true, error = true, outputRepair = true,
  batch = true, pendingFinal = true, rfp = true, rcount = true, pending = true, pausedUntil = true,
}
local target = TARGETS[ARGV[8]]
if not target then error('checkpointResponse: unknown target ' .. tostring(ARGV[8])) end
local calls = cjson.decode(ARGV[10])
local stFields = {}
for i, c in ipairs(calls) do stFields[i] = c[1] .. ':st' end
local st, callSt = readState({ 'status', 'phase', 'iteration', 'seq', 'watch', 'owner',
  'promptTokens', 'completionTokens', 'reasoningTokens', 'cachedTokens', 'totalTokens', 'costUsd', 'llmCalls' }, stFields)
if isTerminal(st[1]) or st[2] ~= 'model' or tonumber(st[3]) ~= tonumber(ARGV[6]) then return { 'stale' } end
if ARGV[13] and ARGV[13] ~= '' and st[6] ~= ARGV[13] then return { 'stale' } end
local taken = {}
for i, c in ipairs(calls) do
  if callSt[i] then taken[#taken + 1] = c[1] end
end
if #taken > 0 then return withList({ 'ids_taken' }, taken) end
local u = cjson.decode(ARGV[9])
for i = 1, #u, 2 do
  if not CHECKPOINT_FIELDS[u[i]] then error('checkpointResponse: ' .. tostring(u[i]) .. ' is not a field a checkpoint sets') end
end
mustTransition(st[1], target[1])
local len = rcall('RPUSH', msgsKey, ARGV[7])
set('batchMsg', len - 1)
if ARGV[8] == 'paused' then rcall('ZADD', parkedKey, ARGV[12], runId) end
for i = 1, #u, 2 do set(u[i], u[i + 1]) end
local inc = cjson.decode(ARGV[14] or '[]')
for i = 1, #inc, 2 do
  local slot = USAGE_FIELDS[inc[i]]
  if not slot then error('checkpointResponse: ' .. tostring(inc[i]) .. ' is not a usage field') end
  local total = (tonumber(st[6 + slot]) or 0) + (tonumber(inc[i + 1]) or 0)
  if inc[i] == 'costUsd' then set(inc[i], string.format('%.10f', total)) else set(inc[i], total) end
end
if st[1] ~= target[1] then set('status', target[1]) end
set('phase', target[2])
set('updatedAt', nowMs)
for _, c in ipairs(calls) do
  setCall(c[1], '', c[2])
  if c[3] ~= '' then
    setCall(c[1], ':out', c[3]); setCall(c[1], ':st', 'done')
  else
    setCall(c[1], ':st', 'queued')
  end
end
emitAll(ARGV[11])
commit(st[4], st[5])
return { 'recorded' }
