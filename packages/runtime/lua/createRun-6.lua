--[[ Create a run (HTTP or queue intake), honouring an idempotency key and the tenant's activeRuns limit.
  KEYS[1] state  KEYS[2] transcript  KEYS[3] events  KEYS[4] tenant run index (zset)  KEYS[5] idempotency key
  KEYS[6] the calls hash (layout 1)
  ARGV[5] the run, one JSON object (CreateRunArgs in create-run-args.ts): tenant, request (JSON text), bodyHash,
  idemTtl (s, 0 = no key), messages (message JSON texts), events (envelope lines), status, error (JSON text or ''), model
  (JSON text), mode, metadata (JSON text), v (schema version), maxWallMs (0 = none), activeLimit (-1 = none),
  retention (s), limitedEvents (envelope lines of a run created failed at the limit; '' = refuse instead), limitedError,
  reservedIds (call ids the input transcript already uses: a model cannot reuse them), layout ('3', '2' or '1': the
  older ones for builds that know only those), structured ('1' when the request has output.schema), src ('q': a
  backend enqueued it on `requests`: its end is reported on `results`; '' otherwise), wh and whUrl (a run with notify:
  the event types it delivers as ',type,…,' and its URL; '' otherwise)
  Returns {'created', status}, {'exists', "<runId> <bodyHash>"} when the idempotency key or the run id already
  names a run of this tenant (a redelivered intake job), {'limited', activeRuns} when the tenant is at its activeRuns
  limit, {'taken'} when the run id is another tenant's (nothing written in those cases). ]]
local a = cjson.decode(ARGV[5])
if tonumber(a.idemTtl) > 0 then
  local existing = rcall('GET', KEYS[5])
  if existing then return { 'exists', existing } end
end
legacyCallsKey = KEYS[6] -- (this script's KEYS[4] is the tenant's run index)
local owner = readState({ 'tenant', 'bodyHash' }) -- (also what makes a resent createRun answer 'exists')
if owner[1] then
  if owner[1] ~= a.tenant then return { 'taken' } end
  return { 'exists', runId .. ' ' .. (owner[2] or '') }
end
local status, errorJson, eventsJson = a.status, a.error, a.events
local limit = tonumber(a.activeLimit)
if limit >= 0 and status ~= 'failed' then
  local active = activeRuns(a.tenant)
  if active >= limit then
    if a.limitedEvents == '' then return { 'limited', active } end
    status, errorJson, eventsJson = 'failed', a.limitedError, a.limitedEvents
  end
end
mustTransition(nil, status)
useLayout(a.layout == '1' and '' or a.layout) -- the layout the run is created with (AGENTLOOP_RUN_LAYOUT)
local idemKey = ''
if tonumber(a.idemTtl) > 0 then
  idemKey = KEYS[5]
  rcall('SET', idemKey, runId .. ' ' .. a.bodyHash, 'EX', a.idemTtl)
end
set('v', a.v); set('id', runId); set('tenant', a.tenant); set('status', status); set('phase', 'queued')
if status == 'failed' then set('phase', 'done') end
set('iteration', 0); set('createdAt', nowMs); set('updatedAt', nowMs); set('request', a.request); set('model', a.model)
set('mode', a.mode); set('metadata', a.metadata); set('structured', a.structured); set('maxWallMs', a.maxWallMs); set('error', errorJson); set('cancel', '')
set('batch', ''); set('pendingFinal', ''); set('callMode', ''); set('ret', a.retention); set('idem', idemKey); set('bodyHash', a.bodyHash)
set('src', a.src)
if a.wh ~= '' then set('wh', a.wh); set('whUrl', a.whUrl); useNotify(a.wh) end
if L2 then set('lay', a.layout) end
local msgs = a.messages
if #msgs > 0 then callSliced('RPUSH', msgsKey, msgs) end
for _, id in ipairs(a.reservedIds) do setCall(id, ':st', 'done') end
rcall('ZADD', KEYS[4], nowMs, runId)
emitAll(eventsJson)
commit(0)
indexStatus(a.tenant, nil, status, nowMs, a.retention, idemKey, 0, a.src) -- after the keys exist: a run created failed expires (and reports) too
return { 'created', status }
