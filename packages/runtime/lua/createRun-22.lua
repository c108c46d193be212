--[[ Create a run (HTTP or queue intake), honouring an idempotency key and the tenant's activeRuns limit.
  KEYS[1..18] the keys of a run script that changes the run's status (common.lua): KEYS[11] the tenant's run index,
  KEYS[IDEM_KEY] the idempotency key (a placeholder without one)  KEYS[19..22] the thread's hash, runs, messages and waiting list (DeploymentKeys.thread;
  placeholders when the run has no thread)
  ARGV[6] the run, one JSON object (CreateRunArgs in create-run-args.ts): tenant, request (JSON text), bodyHash,
  idemTtl (s, 0 = no key), messages (message JSON texts), events (envelope lines), status, error (JSON text or ''), model
  (JSON text), mode, metadata (JSON text), v (schema version), maxWallMs (0 = none), activeLimit (-1 = none),
  retention (s), limitedEvents (envelope lines of a run created failed at the limit; '' = refuse instead), limitedError,
  reservedIds (call ids the input transcript already uses: a model cannot reuse them), structured ('1' when the request has output.schema), src ('q': a
  backend enqueued it on `requests`: its end is reported on `results`; '' otherwise), threadId ('' = none),
  tp (the W3C traceparent of the run's root span, '' = tracing off), threadPolicy, systemCount (the leading system messages of `messages`: the thread's conversation goes after them),
  threadBusyEvents / threadBusyError (a queue-intake run refused by a busy thread is created failed; '' = refuse)
  Threads (SPEC §2): one run per thread at a time, decided here, atomically with the creation. A free thread's run
  becomes its active run and starts with the thread's conversation before its input; a busy thread's run is refused
  (reject), or waits (enqueue, interrupt: `thrWait`, not in the queued index) until the relay starts it when the runs
  ahead of it ended (ThreadStore). wh and whUrl (a run with notify: the event types it delivers as ',type,…,' and its
  URL; '' otherwise)
  Returns {'created', status, the thread's active run when this one waits for it ('' otherwise), the tenant's queued
  runs now (this one included: the rank of its first job, read here to save the publisher a round trip)}, {'thread_busy',
  active run} (reject), {'exists', "<runId> <bodyHash>"} when the idempotency key or the run id already
  names a run of this tenant (a redelivered intake job), {'limited', activeRuns} when the tenant is at its activeRuns
  limit, {'taken'} when the run id is another tenant's (nothing written in those cases). ]]
local a = cjson.decode(ARGV[6])
if tonumber(a.idemTtl) > 0 then
  local existing = rcall('GET', KEYS[IDEM_KEY])
  if existing then return { 'exists', existing } end
end
statusKeysChecked = false -- (another tenant's run id is answered 'taken' below)
local owner = readState({ 'tenant', 'bodyHash' }) -- (also what makes a resent createRun answer 'exists')
if owner[1] then
  if owner[1] ~= a.tenant then return { 'taken' } end
  return { 'exists', runId .. ' ' .. (owner[2] or '') }
end
local status, errorJson, eventsJson = a.status, a.error, a.events
local limit = tonumber(a.activeLimit)
if limit >= 0 and status ~= 'failed' then
  local active = activeRuns()
  if active >= limit then
    if a.limitedEvents == '' then return { 'limited', active } end
    status, errorJson, eventsJson = 'failed', a.limitedError, a.limitedEvents
  end
end
local thread, waitsFor, threadMsgs = a.threadId or '', '', {}
if thread ~= '' and status ~= 'failed' then
  local active = rcall('HGET', KEYS[19], 'active')
  if active and active ~= '' then
    if a.threadPolicy ~= 'reject' then
      waitsFor = active
    elseif a.threadBusyEvents == '' then
      return { 'thread_busy', active }
    else
      status, errorJson, eventsJson = 'failed', a.threadBusyError, a.threadBusyEvents
    end
  else
    threadMsgs = rcall('LRANGE', KEYS[21], 0, -1)
  end
end
mustTransition(nil, status)
local idemKey = ''
if tonumber(a.idemTtl) > 0 then
  idemKey = KEYS[IDEM_KEY]
  rcall('SET', idemKey, runId .. ' ' .. a.bodyHash, 'EX', a.idemTtl)
end
set('v', a.v); set('id', runId); set('tenant', a.tenant); set('status', status); set('phase', 'queued')
if status == 'failed' then set('phase', 'done') end
set('iteration', 0); set('createdAt', nowMs); set('updatedAt', nowMs); set('request', a.request); set('model', a.model)
set('mode', a.mode); set('metadata', a.metadata); set('structured', a.structured); set('maxWallMs', a.maxWallMs); set('error', errorJson); set('cancel', '')
set('batch', ''); set('pendingFinal', ''); set('callMode', ''); set('ret', a.retention); set('idem', idemKey); set('bodyHash', a.bodyHash)
set('src', a.src)
if a.tp and a.tp ~= '' then set('tp', a.tp) end
if a.wh ~= '' then set('wh', a.wh); set('whUrl', a.whUrl); useNotify(a.wh) end
set('lay', LAYOUT)
local msgs = a.messages
if #threadMsgs > 0 then msgs = withThread(msgs, tonumber(a.systemCount) or 0, threadMsgs) end
if #msgs > 0 then callSliced('RPUSH', msgsKey, msgs) end
for _, id in ipairs(a.reservedIds) do setCall(id, ':st', 'done') end
if thread ~= '' then
  set('threadId', thread)
  if status ~= 'failed' then
    rcall('RPUSH', KEYS[20], runId)
    for i = 19, 22 do rcall('PERSIST', KEYS[i]) end -- a thread expires from its last run's end, not during a run
    if waitsFor ~= '' then
      set('thrWait', '1')
      rcall('RPUSH', KEYS[22], runId)
    else
      rcall('HSET', KEYS[19], 'active', runId, 'tenant', a.tenant)
      set('thrFrom', (tonumber(a.systemCount) or 0) + #threadMsgs)
    end
  end
end
rcall('ZADD', KEYS[11], nowMs, runId)
emitAll(eventsJson)
commit(0)
indexStatus(a.tenant, nil, status, nowMs, a.retention, idemKey, 0, a.src, '') -- after the keys exist: a run created failed expires (and reports) too
if waitsFor ~= '' then rcall('ZREM', queuedKey, runId) end -- it starts when the thread's relay starts it
return { 'created', status, waitsFor, rcall('ZCARD', statusIndex('queued')) }
