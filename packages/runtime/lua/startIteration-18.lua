--[[ Start iteration k: compare-and-set from (iteration k-1, phase ARGV[7]) to (iteration k, phase model).
  Appends the previous batch's tool messages in call order, then an optional instruction message.
  ARGV[6] k  ARGV[7] expected phase  ARGV[8] call mode ('tools' or the finalize reason)  ARGV[9] extra message JSON or ''
  ARGV[10] events (envelope lines)  ARGV[11] the pendingFinal the caller decided on (it must not have changed since)
  ARGV[12] '1': also return the state hash after the start (a caller that did not read it first)
  ARGV[13] the id of the job starting the iteration: it owns the model call (only it, or a retry of it, may resume it)
  ARGV[14] the batch (JSON call ids) the caller believes the run has, or '': its outcomes are read with the state
  ARGV[15] the outcomes of the batch's local calls to record first (recordEntries' entries), or '': an iteration that
  goes on in the job that ran them records them here, in one step with the start (not with ARGV[12] '1')
  ARGV[16] '' or the delivery that checkpointed iteration k-1 (a start sent right behind that checkpoint, in the same
  round trip): unless the run is at k-1's tools under that owner (its checkpoint was refused, or has not run), nothing is
  recorded and the start is refused ('stale', every result answered 'answered': the caller still holds them)
  ARGV[17] '' or a count: return the whole transcript in place of the appended messages when it has at most that many
  (a caller that holds none of it: the first iteration's job, which would read it next)
  A run waiting on its thread (thrWait) does not start: the thread's relay makes it startable first.
  Returns {'started', transcript length (-1 when nothing was appended), usage.toolCalls, resumed (0 no, 1 yes, 2 yes and the
  transcript was edited), number of appended messages, appended message JSON..., [state field, value...]},
  {'stale'} when the run is not where the caller expected (the caller reloads the state and decides again), or {'waiting'} when a
  call of the batch is unanswered: still running (another delivery — the one that records it, or the job its completion
  triggers — starts the iteration), or its tool job failed for good (the caller answers it and starts again). With
  ARGV[15], every outcome ends with the record's answers (recordEntries), which stand whatever the start decided. ]]
local answers, recorded = {}, {}
if (ARGV[16] or '') ~= '' then
  local at = rcall('HMGET', stateKey, 'owner', 'phase', 'iteration')
  if at[1] ~= ARGV[16] or at[2] ~= ARGV[7] or tonumber(at[3]) ~= tonumber(ARGV[6]) - 1 then
    local out = { 'stale' }
    for _ = 1, #cjson.decode((ARGV[15] or '') ~= '' and ARGV[15] or '[]') do out[#out + 1] = 'answered' end
    return out
  end
end
if (ARGV[15] or '') ~= '' then
  local recordedAnswers, _, outcomes = recordEntries(cjson.decode(ARGV[15]))
  answers, recorded = recordedAnswers, outcomes
end
local fields = { 'status', 'phase', 'iteration', 'cancel', 'batch', 'seq', 'pendingFinal', 'toolCalls', 'resuming', 'edited', 'watch', 'thrWait' }
local nRead = #fields
local hint = ARGV[14] or ''
local hinted = {}
if hint ~= '' then for _, id in ipairs(cjson.decode(hint)) do hinted[#hinted + 1] = id .. ':out' end end
if ARGV[12] == '1' then fields = withStateFields(fields) end
local st, hintedOuts = readState(fields, hinted)
local k = tonumber(ARGV[6])
-- not started: what was recorded first still stands
local function refused(outcome)
  if #answers > 0 then commit(st[6], st[11]) end
  return withList({ outcome }, answers)
end
if isTerminal(st[1]) or st[1] == 'paused' or st[4] ~= '' or st[12] == '1' or st[2] ~= ARGV[7] or tonumber(st[3]) ~= k - 1 or (st[7] or '') ~= ARGV[11] then return refused('stale') end
if st[9] == '1' and #answers > 0 then return refused('stale') end -- a resumed batch is not recorded with its start
if st[9] == '1' and batchInFlight(st[5]) then return { 'waiting' } end -- only a resumed batch has calls outside this job's flow
local outs -- the batch's outcomes, when the caller's guess of the batch was right
if hint ~= '' and hint == st[5] then outs = hintedOuts end
if #answers > 0 then -- the outcomes just recorded are in this step's writes, not yet in the hash
  outs = batchOuts(st[5], outs)
  for i, id in ipairs((st[5] or '') ~= '' and cjson.decode(st[5]) or {}) do if recorded[id] then outs[i] = recorded[id] end end
end
-- A call of a batch not resumed is unanswered only while a delivery still runs it (a local call, taken over from a
-- delivery that stalled past its lock: that one must not start the iteration and answer the call job_failed under the
-- one running it) or when its tool job failed for good (the flow parent answers it, then starts again).
if st[9] ~= '1' then
  outs = batchOuts(st[5], outs)
  for i = 1, #outs do if not outs[i] then return refused('waiting') end end
end
mustTransition(st[1], 'running')
local msgs, executed = batchMessages(st[5], 'job_failed', outs)
local resumed = 0
if st[9] == '1' then
  resumed = 1
  if st[10] == '1' then resumed = 2 end -- a decision rewrote the transcript's arguments
  set('resuming', ''); set('edited', '')
  rcall('ZREM', resumingKey, runId)
end
local toolCalls = (tonumber(st[8]) or 0) + executed
set('toolCalls', toolCalls)
if ARGV[9] ~= '' then msgs[#msgs + 1] = ARGV[9] end
local len = -1 -- unknown: nothing appended
if #msgs > 0 then len = callSliced('RPUSH', msgsKey, msgs) end
set('iteration', k); set('phase', 'model'); set('callMode', ARGV[8]); set('updatedAt', nowMs); set('owner', ARGV[13] or '')
if st[1] ~= 'running' then set('status', 'running') end -- a status change (reindexed by commit) only from queued
emitAll(ARGV[10])
commit(st[6], st[11])
local upTo = tonumber(ARGV[17] or '') or 0
if upTo > 0 then
  local n = len >= 0 and len or rcall('LLEN', msgsKey)
  if n <= upTo then msgs, len = rcall('LRANGE', msgsKey, 0, -1), n end
end
local out = withList({ 'started', len, toolCalls, resumed, #msgs }, msgs)
if ARGV[12] == '1' then withList(out, stateAfter(st, nRead)) end
return withList(out, answers)
