--[[ Shared helpers, prepended to every run script (BullMQ's @include, done by the loader).
  Every key a script touches is declared in its KEYS, built by the key space (protocol's DeploymentKeys.runScript);
  no script builds a key name. Run scripts take the same ten keys:
    KEYS[1] state hash   KEYS[2] transcript list   KEYS[3] compressions list   KEYS[4] webhook delivery log
    KEYS[5..10] the deployment's parked, resuming, queued and running runs, the retention schedule, the outbox
  and a script that may change the run's status eight more (DeploymentKeys.runStatusScript):
    KEYS[11] the tenant's runs   KEYS[12..17] the tenant's runs in each status (STATUS_KEY: status -> its index)
    KEYS[18] (IDEM_KEY) the run's idempotency key (or a placeholder)
  and the same first ARGV:
    ARGV[1] runId   ARGV[2] now (ISO)   ARGV[3] now (ms)   ARGV[4] events pub/sub channel
    ARGV[5] the tenant the status keys were built for ('' = none given): a run of another tenant (a run id reused
    after retention, a stale cache of the caller) is refused before anything is written (KEYS_STALE: the caller
    reads the run's tenant again and retries)
  A script reads what it needs in one HMGET (readState), queues state updates with set() and events with
  emitAll()/emit(), and ends with commit(): one HSET of the state (the event sequence and the events themselves included), and one PUBLISH while a client follows the run (its `watch` lease, set by the api's SSE
  handler, is in the future).
  The run's calls and events live in its state hash too (checkLayout). Every event is appended under
  the same atomic step as the state change it reports.
  Events are built whole by the caller (RunStore): an envelope without its seq, `,"runId":…,"type":…,"at":…,"data":…}`,
  one per line of an ARGV; the script only sequences them (prepends `{"seq":n`). The few events only a script can
  know (a call it answers, the iteration a run ends in) are built in TypeScript too, as templates the script fills
  in (fillTemplate, emit()).
  Every script answers {outcome, value...} with an outcome its entry in scripts.ts (SCRIPTS) lists. ]]
local rcall = redis.call
local stateKey, msgsKey, compressionsKey, webhooksKey = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local parkedKey, resumingKey, queuedKey, runningKey, retentionKey, outboxKey = KEYS[5], KEYS[6], KEYS[7], KEYS[8], KEYS[9], KEYS[10]
local runId, nowIso, nowMs, channel, keysTenant = ARGV[1], ARGV[2], ARGV[3], ARGV[4], ARGV[5]
local updates, events = {}, {}

-- Redis' Lua refuses unpack() of more than a few thousand values, and a model may send thousands of calls: long
-- argument lists go in slices (an even size, so field/value pairs stay together).
local SLICE = 1000
local function callSliced(cmd, key, list)
  local last
  for i = 1, #list, SLICE do last = rcall(cmd, key, unpack(list, i, math.min(i + SLICE - 1, #list))) end
  return last
end
local function hmgetSliced(key, fields)
  local out = {}
  for i = 1, #fields, SLICE do
    for _, v in ipairs(rcall('HMGET', key, unpack(fields, i, math.min(i + SLICE - 1, #fields)))) do out[#out + 1] = v end
  end
  return out
end
-- {head..., list...} without unpack()
local function withList(head, list)
  for _, v in ipairs(list) do head[#head + 1] = v end
  return head
end

-- A run's calls are fields of its state hash — 'c:<id>' its meta, then ':st' its status, ':out' its outcome, ':dec' a
-- decision — and so are its events ('e:<seq>'): a step reads the run and its calls in one HMGET and writes them, with
-- its events, in one HSET. This is the only layout (`lay` LAYOUT, set at creation; run-state.ts RUN_LAYOUT). A run of layout 1 or 2, made by a
-- build before 2026-12-03, is refused (checkLayout): drain those before rolling this build out (docs/OPERATIONS.md).
-- A future layout gets new script names (BullMQ-style versions), never a branch inside these scripts.
local function checkLayout(status, lay)
  if status and lay ~= LAYOUT then
    error('LEGACY_LAYOUT run ' .. runId .. ' is stored in layout ' .. tostring(lay or '1') .. ' of an earlier build; this build serves layout ' .. LAYOUT .. ' only: drain old runs first (docs/OPERATIONS.md)')
  end
end
local function cf(callId, suffix) return 'c:' .. callId .. (suffix or '') end

-- What commit() needs to move the run between status indexes, as the script's own first read saw it.
local STATUS_INFO = { 'status', 'tenant', 'createdAt', 'ret', 'idem', 'tv', 'src', 'threadId', 'phase' }
local statusInfo

-- The status keys (KEYS[11..18]) name the tenant and the idempotency key of the run as the caller knew it: a run of
-- another tenant, or another idempotency key, is refused before any write. (createRun answers another tenant's run
-- itself: it turns the check off.)
local statusKeysChecked = true
local function checkStatusKeys()
  if not statusKeysChecked or not keysTenant or keysTenant == '' or not statusInfo[1] then return end
  local idem = statusInfo[5] or ''
  if statusInfo[2] ~= keysTenant or (idem ~= '' and idem ~= KEYS[IDEM_KEY]) then
    error('KEYS_STALE run ' .. runId .. ': its tenant or idempotency key is not the one its keys were built for')
  end
end

-- The tenant's index of runs in `status` (declared in KEYS by a script that may change the run's status).
local function statusIndex(status)
  local key = KEYS[STATUS_KEY[status] or 0]
  if not key then error('run ' .. runId .. ': a status change to ' .. tostring(status) .. ' by a script not given the status keys') end
  return key
end

-- A run with `notify`: the event types it delivers, as ',run.paused,run.completed,' (its `wh` field, set at creation
-- and read by every script's first read); nil for other runs, which pay nothing more than that field's read.
local notifyTypes
local function useNotify(wh)
  if wh and wh ~= '' then notifyTypes = wh end
end

-- The script's one read: HMGET of the state `fields` with what commit() needs to reindex a status change and the
-- run's layout, and `callFields` (e.g. '<id>:st') read in the same command. Returns the state values
-- (in `fields` order) and the call values.
local function readState(fields, callFields)
  local all = withList(withList({}, fields), STATUS_INFO)
  all[#all + 1] = 'wh'
  all[#all + 1] = 'lay'
  local n0 = #all
  for _, f in ipairs(callFields or {}) do all[#all + 1] = 'c:' .. f end
  local r = hmgetSliced(stateKey, all)
  useNotify(r[n0 - 1])
  statusInfo = {}
  for i = 1, #STATUS_INFO do statusInfo[i] = r[#fields + i] end
  checkLayout(statusInfo[1], r[n0])
  checkStatusKeys()
  local calls = {}
  for i = 1, #(callFields or {}) do calls[i] = r[n0 + i] end
  return r, calls
end

-- `fields` with the run's own fields (STATE_FIELDS, compiled in from run-state.ts) after them: for a step that
-- returns the state, read in its one HMGET (stateAfter).
local function withStateFields(fields)
  return withList(withList({}, fields), STATE_FIELDS)
end

-- The state after this step, as field, value pairs (never the run's calls): what the first read (withStateFields,
-- the state fields after its first `offset` values) saw, with what commit() wrote over it. Call after commit().
local function stateAfter(read, offset)
  local h = {}
  for i, f in ipairs(STATE_FIELDS) do
    if read[offset + i] then h[f] = read[offset + i] end
  end
  -- (the numbers scripts set are integers: %.17g writes them digit for digit, as redis.call stores them)
  for i = 1, #updates, 2 do
    local v = updates[i + 1]
    h[updates[i]] = type(v) == 'number' and string.format('%.17g', v) or v
  end
  local out = {}
  for _, f in ipairs(STATE_FIELDS) do
    if h[f] then out[#out + 1] = f; out[#out + 1] = h[f] end
  end
  return out
end

local function set(field, value)
  updates[#updates + 1] = field
  updates[#updates + 1] = value
end

-- A call field, written by commit() with the state. A call's status (`suffix` ':st') changes only as protocol's
-- CALL_TRANSITIONS (compiled in as CALL_STATES) lists, from `from` (its status as the script read it; nil: unknown).
local function setCall(callId, suffix, value, from)
  if suffix == ':st' then
    local was = from or 'unknown'
    if was ~= value and not (CALL_STATES[was] and CALL_STATES[was][value]) then
      error('ILLEGAL_CALL_TRANSITION run ' .. runId .. ' call ' .. callId .. ': ' .. was .. ' -> ' .. value)
    end
  end
  set(cf(callId, suffix), value)
end

--[[ The few events only a step can know, each because its content is read in the same atomic step (a caller's earlier
  read could be stale), are built in TypeScript all the same: their data builders render templates (event-templates.ts,
  compiled in as EVENT_TEMPLATES, and CLOSED's), and the script only fills in what it read:
    tool.call of a call answered without running (closeCall, CLOSED[kind].event) or decided (applyDecisions, the
      caller's template per decision): the call's name and arguments, from its record;
    iteration.completed of a run ending mid-iteration (completeIteration): the iteration and its usage are the state's
      at the end (a cancel, a reconciler or a failed job ends a run without reading it first);
    run.resumed (applyDecisions): the decisions of every request, the earlier ones recorded by other steps.
  A template is JSON with a slot `\1name\1` where a value goes (JSON text never holds a raw control character);
  `values` are JSON texts by slot name. (A function's replacement is used as it is: a '%' in a value is no escape.) ]]
local function fillTemplate(template, values)
  return (string.gsub(template, '\1(%w+)\1', function(name)
    return values[name] or error('fillTemplate: no value for slot ' .. name)
  end))
end

-- An event this script built itself (its data JSON), in the envelope the callers' events have (eventLines').
local function emit(etype, dataJson)
  events[#events + 1] = fillTemplate(EVENT_TEMPLATES.envelope, { runId = cjson.encode(runId), type = cjson.encode(etype), at = cjson.encode(nowIso), data = dataJson })
end

-- A call's tool.call event, from its data template: the call's id, name and arguments as shown, from its record `meta`.
local function emitToolCall(template, callId, meta)
  emit('tool.call', fillTemplate(template, { callId = cjson.encode(callId), name = cjson.encode(meta.name), display = meta.display }))
end

-- events the caller built: envelopes without their seq, one per line (JSON text never holds a raw newline)
local function emitAll(lines)
  if lines == nil or lines == '' then return end
  for line in string.gmatch(lines, '[^\n]+') do events[#events + 1] = line end
end

local function isTerminal(status)
  return status == 'completed' or status == 'failed' or status == 'cancelled'
end

-- A finished run: every key of it expires after its retention, and so does its idempotency key (never later than
-- its own 24 h); the sweeper removes its index entries when the retention zset says it is due.
local function expireRun(tenant, retentionS, idemKey, tv)
  rcall('EXPIRE', stateKey, retentionS)
  rcall('EXPIRE', msgsKey, retentionS)
  if (tonumber(tv) or 0) > 0 then rcall('EXPIRE', compressionsKey, retentionS) end
  if notifyTypes then rcall('EXPIRE', webhooksKey, retentionS) end -- (the relay creates it with the run's TTL when it comes later)
  if idemKey and idemKey ~= '' then rcall('EXPIRE', KEYS[IDEM_KEY], retentionS, 'LT') end -- (checkStatusKeys: it is idemKey)
  rcall('ZADD', retentionKey, tonumber(nowMs) + retentionS * 1000, runId .. '|' .. tenant)
end

-- The outbox: what a run tells the outside world, written by the step that makes the transition it reports, so a
-- crash can neither lose a report nor send one for a transition that did not happen. The relay (OutboxRelay) turns
-- each entry into its job: 'R|<runId>' the `results` job of a run created by queue intake (src 'q') that ended;
-- 'E|<runId>' a thread's run that ended (its messages join the thread; the next waiting run starts).
-- 'W|<runId>|<seq>|<type>' a webhook delivery of event seq (a run with notify: see notifyOutbox).
local function toOutbox(entry)
  rcall('RPUSH', outboxKey, entry)
end

-- Every event of this step whose type the run's notify lists (events are sequenced from seq + 1) goes to the outbox.
-- An event's tail starts `,"runId":"<runId>","type":"`, so its type starts at a fixed offset.
local function notifyOutbox(seq)
  local typeAt = #runId + 21
  for i, tail in ipairs(events) do
    local etype = string.match(tail, '^([^"]+)"', typeAt)
    if etype and string.find(notifyTypes, ',' .. etype .. ',', 1, true) then toOutbox('W|' .. runId .. '|' .. (seq + i) .. '|' .. etype) end
  end
end

-- Moves the run from its tenant's index of status `from` to that of `to` (same score: createdAt), so that listing
-- by status and counting active runs never read the tenant's history. A run that finishes starts its retention and,
-- when a backend enqueued it (src 'q'), reports its end to the outbox.
local function indexStatus(tenant, from, to, createdAt, retentionS, idemKey, tv, src, threadId)
  if from == to then return end
  if from then rcall('ZREM', statusIndex(from), runId) end
  rcall('ZADD', statusIndex(to), createdAt, runId)
  -- queued runs of every tenant, for the reconciler that re-adds a first job its creator did not live to add
  if to == 'queued' then rcall('ZADD', queuedKey, createdAt, runId) end
  if from == 'queued' then rcall('ZREM', queuedKey, runId) end
  -- running runs of every tenant, for the reconciler that finds a run whose job is gone
  if to == 'running' then rcall('ZADD', runningKey, nowMs, runId) end
  if from == 'running' then rcall('ZREM', runningKey, runId) end
  local ret = tonumber(retentionS) or 0
  if isTerminal(to) and ret > 0 then expireRun(tenant, ret, idemKey, tv) end
  if isTerminal(to) and src == 'q' then toOutbox('R|' .. runId) end
  if isTerminal(to) and threadId and threadId ~= '' then toOutbox('E|' .. runId) end
end

-- Runs of the tenant (whose status keys the script was given) that count against activeRuns.
local function activeRuns()
  return rcall('ZCARD', statusIndex('queued')) + rcall('ZCARD', statusIndex('running')) + rcall('ZCARD', statusIndex('paused'))
end

-- A status change the transition table (protocol's STATUS_TRANSITIONS, compiled in as TRANSITIONS) does not list
-- stops the script with an error. Scripts call it after their own checks and before their first write.
local function mustTransition(from, to)
  from = from or 'created'
  if from ~= to and not (TRANSITIONS[from] and TRANSITIONS[from][to]) then
    error('ILLEGAL_TRANSITION run ' .. runId .. ': ' .. from .. ' -> ' .. to)
  end
end

-- A phase change the phase table (protocol's PHASE_TRANSITIONS, compiled in as PHASES) does not list stops the script.
local function mustPhase(from, to)
  from = from or 'created'
  if from ~= to and not (PHASES[from] and PHASES[from][to]) then
    error('ILLEGAL_PHASE run ' .. runId .. ': ' .. from .. ' -> ' .. to)
  end
end

-- `watch`: the run's watch lease (ms), read by the script's own first read: nobody follows the run, nobody is told.
local function commit(seq, watch)
  seq = tonumber(seq) or 0
  local newStatus, newPhase, statusChange
  for i = 1, #updates, 2 do
    local field = updates[i]
    if field == 'status' then newStatus = updates[i + 1] end
    if field == 'phase' then newPhase = updates[i + 1] end
    local writers = FIELD_WRITERS[field] -- (protocol's RUN_FIELD_WRITERS: who may set or clear a control field)
    if writers and not writers[updates[i + 1] == '' and 'clear' or 'set'][SCRIPT] then
      error('ILLEGAL_WRITE run ' .. runId .. ': ' .. SCRIPT .. ' may not ' .. (updates[i + 1] == '' and 'clear ' or 'set ') .. field)
    end
  end
  if newPhase then mustPhase((statusInfo or rcall('HMGET', stateKey, unpack(STATUS_INFO)))[9], newPhase) end
  if newStatus then -- every status change of an existing run passes here (create indexes a new run itself)
    local cur = statusInfo or rcall('HMGET', stateKey, unpack(STATUS_INFO))
    mustTransition(cur[1], newStatus) -- (each script checked before its first write; this is the last guard)
    statusChange = cur
  end
  local n = #events
  if n > 0 then
    for i, tail in ipairs(events) do set('e:' .. (seq + i), '{"seq":' .. (seq + i) .. tail) end
    set('seq', seq + n)
    if notifyTypes then notifyOutbox(seq) end
  end
  if statusChange and statusChange[2] then indexStatus(statusChange[2], statusChange[1], newStatus, statusChange[3], statusChange[4], statusChange[5], statusChange[6], statusChange[7], statusChange[8]) end
  if #updates > 0 then callSliced('HSET', stateKey, updates) end
  if n > 0 and (tonumber(watch) or 0) >= tonumber(nowMs) then rcall('PUBLISH', channel, seq + n) end
end

-- A run that ends inside iteration `it` (during its model call, its batch or its pause) reports that iteration's
-- iteration.completed before its terminal event, as a run ending through an answer does (SPEC §4): with no usage when
-- it ends during its model call (that call's usage is not known).
local function completeIteration(it, phase, iterUsage)
  it = tonumber(it) or 0
  if it < 1 or phase == 'done' or phase == 'queued' then return end
  if phase ~= 'model' and iterUsage and iterUsage ~= '' then
    emit('iteration.completed', fillTemplate(EVENT_TEMPLATES.iterationCompleted, { iteration = string.format('%d', it), usage = iterUsage }))
  else
    emit('iteration.completed', fillTemplate(EVENT_TEMPLATES.iterationCompletedNoUsage, { iteration = string.format('%d', it) }))
  end
end

-- A thread run's transcript (JSON texts): its leading `systemCount` system messages, the thread's conversation so far
-- (whose call ids it reserves: a model cannot reuse them), then the rest of its own messages.
local function withThread(own, systemCount, threadMsgs)
  local msgs = {}
  for i = 1, systemCount do msgs[#msgs + 1] = own[i] end
  for _, m in ipairs(threadMsgs) do
    msgs[#msgs + 1] = m
    local calls = cjson.decode(m).toolCalls
    if type(calls) == 'table' then for _, c in ipairs(calls) do setCall(c.id, ':st', 'done') end end
  end
  for i = systemCount + 1, #own do msgs[#msgs + 1] = own[i] end
  return msgs
end

-- Names of the calls this step answered without running them (returned, for the tool-call metrics).
local closedNames = {}

-- Answer a call that will not run, for reason `kind` (CLOSED, compiled in from closed-calls.ts: its outcome, its content
-- and its tool.call event's template). Returns the content the model sees.
local function closeCall(callId, kind)
  local answer = CLOSED[kind]
  if not answer then error('closeCall: unknown kind ' .. tostring(kind)) end
  local meta = cjson.decode(rcall('HGET', stateKey, cf(callId)))
  closedNames[#closedNames + 1] = meta.name
  rcall('HSET', stateKey, cf(callId, ':out'), answer.outcome, cf(callId, ':st'), 'done')
  emitToolCall(answer.event, callId, meta)
  return answer.content
end

-- The batch's outcomes in call order (nil: unanswered), read unless the caller has them already.
local function batchOuts(batchJson, outs)
  if outs then return outs end
  if not batchJson or batchJson == '' then return {} end
  local fields = {}
  for i, id in ipairs(cjson.decode(batchJson)) do fields[i] = cf(id, ':out') end
  if #fields == 0 then return {} end
  return hmgetSliced(stateKey, fields)
end

-- The current batch's tool messages in call order (JSON strings), and how many of its calls a tool-runner executed
-- (usage.toolCalls is counted here, once per batch, rather than by every result). Calls without an outcome are
-- answered first, for reason `fill` (a CLOSED kind: run_ended when the run is ending, job_failed when their job failed).
-- `outs`: the batch's outcomes when the script's first read already fetched them.
local function batchMessages(batchJson, fill, outs)
  if not batchJson or batchJson == '' then return {}, 0 end
  local ids = cjson.decode(batchJson)
  if #ids == 0 then return {}, 0 end
  outs = batchOuts(batchJson, outs)
  local msgs, executed = {}, 0
  for i, id in ipairs(ids) do
    local content
    if outs[i] then
      local out = cjson.decode(outs[i])
      content = out.content
      if out.executed then executed = executed + 1 end
    else
      content = closeCall(id, fill)
    end
    msgs[i] = cjson.encode({ role = 'tool', toolCallId = id, content = content })
  end
  set('batch', '')
  return msgs, executed
end

-- Whether a call of the batch is still queued or executing (a mixed batch resumes only when all are answered).
local function batchInFlight(batchJson)
  if not batchJson or batchJson == '' then return false end
  local ids = cjson.decode(batchJson)
  if #ids == 0 then return false end
  local fields = {}
  for i, id in ipairs(ids) do fields[i] = cf(id, ':st') end
  for _, v in ipairs(hmgetSliced(stateKey, fields)) do
    if v == 'queued' or v == 'running' then return true end
  end
  return false
end

-- Ends the run at `status` (phase done): answers the open calls of the batch cancelled, so the transcript stays
-- paired, leaves the parked set, and reports the iteration it ends in.
local function closeBatchAndEnd(batchJson, it, phase, iterUsage, status, stopReason)
  local msgs, executed = batchMessages(batchJson, 'run_ended')
  if executed > 0 then set('toolCalls', (tonumber(rcall('HGET', stateKey, 'toolCalls')) or 0) + executed) end
  if #msgs > 0 then callSliced('RPUSH', msgsKey, msgs) end
  rcall('ZREM', parkedKey, runId)
  completeIteration(it, phase, iterUsage)
  set('status', status); set('phase', 'done'); set('stopReason', stopReason); set('pending', ''); set('updatedAt', nowMs)
end

--[[ Records the outcomes of a batch of local calls (SPEC §6), each exactly as recordToolResult would; the caller commits.
  `entries`, one per call: [callId, outcome JSON, its tool.call event line, its `running` event line or '' (as
  recordToolResult's ARGV[9]), the delivery that recorded its start or '' (its ARGV[10])]. Each call is checked on its
  own: answered already (a duplicate delivery), or running under another owner (this delivery stalled past its lock and
  the call was taken over: stale), it changes nothing; a one-step call whose run ended or is being cancelled is
  answered `cancelled`, past the wall-clock budget `skipped`. Returns the answers in call order ('recorded' |
  'cancelled' | 'skipped' | 'stale' | 'answered'), the state it read ({seq, watch}) and the outcomes it recorded, by
  call id. ]]
local function recordEntries(entries)
  local callFields = {}
  for i, e in ipairs(entries) do
    callFields[2 * i - 1] = e[1] .. ':st'
    callFields[2 * i] = e[1] .. ':own'
  end
  local st, call = readState({ 'seq', 'watch', 'status', 'cancel', 'createdAt', 'maxWallMs' }, callFields)
  local ending = isTerminal(st[3]) or (st[4] and st[4] ~= '')
  local wall = tonumber(st[6]) or 0
  local overWall = wall > 0 and tonumber(nowMs) > (tonumber(st[5]) or 0) + wall
  local answers, recorded = {}, {}
  for i, e in ipairs(entries) do
    local callId, running, owner = e[1], e[4], e[5]
    local stt, own = call[2 * i - 1], call[2 * i] or ''
    local r = 'recorded'
    if owner ~= '' and own ~= owner and (stt == 'running' or stt == 'done') then
      r = 'stale'
    elseif stt ~= 'queued' and stt ~= 'running' then
      r = 'answered'
    elseif running ~= '' and stt == 'queued' and ending then
      closeCall(callId, 'cancelled')
      r = 'cancelled'
    elseif running ~= '' and stt == 'queued' and overWall then
      closeCall(callId, 'skipped')
      set('pendingFinal', 'budget_exceeded')
      r = 'skipped'
    else
      if running ~= '' and stt == 'queued' then emitAll(running) end
      setCall(callId, ':out', e[2]); setCall(callId, ':st', 'done', stt)
      emitAll(e[3])
      recorded[callId] = e[2]
    end
    answers[i] = r
  end
  return answers, { st[1], st[2] }, recorded
end
