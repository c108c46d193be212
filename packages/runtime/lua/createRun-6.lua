--[[ Create a run (HTTP or queue intake), honouring an idempotency key and the tenant's activeRuns limit.
  KEYS[1] state  KEYS[2] transcript  KEYS[3] events  KEYS[4] tenant run index (zset)  KEYS[5] idempotency key
  KEYS[6] the calls hash (layout 1)
  ARGV[5] tenant  ARGV[6] request JSON  ARGV[7] body hash  ARGV[8] idempotency TTL s (0 = no key)
  ARGV[9] initial messages (JSON array of message JSON strings)  ARGV[10] events (envelope lines)  ARGV[11] status
  ARGV[12] error JSON or ''  ARGV[13] model JSON  ARGV[14] mode  ARGV[15] metadata JSON  ARGV[16] schema version
  ARGV[17] maxWallMs (0 = none)  ARGV[18] activeRuns limit (-1 = none)  ARGV[19] retention s
  ARGV[20] events (envelope lines) of a run created failed because of the limit ('' = refuse instead)  ARGV[21] its error JSON
  ARGV[22] JSON array of the call ids the input transcript already uses (reserved: a model cannot reuse them)
  ARGV[23] the run's layout: '3' (its calls and events in the state hash), '2' (its calls there, its events in KEYS[3]) or '1'
  ARGV[24] '1' when the request has output.schema, else '0' (the `structured` field: a listing need not read the request)
  (its calls in the calls hash KEYS[6]): the older ones for builds that know only those
  Returns {'created', status}, {'exists', "<runId> <bodyHash>"} when the idempotency key or the run id already
  names a run of this tenant (a redelivered intake job), {'limited', activeRuns} when the tenant is at its activeRuns
  limit, {'taken'} when the run id is another tenant's (nothing written in those cases). ]]
if tonumber(ARGV[8]) > 0 then
  local existing = rcall('GET', KEYS[5])
  if existing then return { 'exists', existing } end
end
legacyCallsKey = KEYS[6] -- (this script's KEYS[4] is the tenant's run index)
local owner = readState({ 'tenant', 'bodyHash' }) -- (also what makes a resent createRun answer 'exists')
if owner[1] then
  if owner[1] ~= ARGV[5] then return { 'taken' } end
  return { 'exists', runId .. ' ' .. (owner[2] or '') }
end
local status, errorJson, eventsJson = ARGV[11], ARGV[12], ARGV[10]
local limit = tonumber(ARGV[18])
if limit >= 0 and status ~= 'failed' then
  local active = activeRuns(ARGV[5])
  if active >= limit then
    if ARGV[20] == '' then return { 'limited', active } end
    status, errorJson, eventsJson = 'failed', ARGV[21], ARGV[20]
  end
end
mustTransition(nil, status)
useLayout(ARGV[23] == '1' and '' or ARGV[23]) -- the layout the run is created with (AGENTLOOP_RUN_LAYOUT)
local idemKey = ''
if tonumber(ARGV[8]) > 0 then
  idemKey = KEYS[5]
  rcall('SET', idemKey, runId .. ' ' .. ARGV[7], 'EX', ARGV[8])
end
set('v', ARGV[16]); set('id', runId); set('tenant', ARGV[5]); set('status', status); set('phase', 'queued')
if status == 'failed' then set('phase', 'done') end
set('iteration', 0); set('createdAt', nowMs); set('updatedAt', nowMs); set('request', ARGV[6]); set('model', ARGV[13])
set('mode', ARGV[14]); set('metadata', ARGV[15]); set('structured', ARGV[24]); set('maxWallMs', ARGV[17]); set('error', errorJson); set('cancel', '')
set('batch', ''); set('pendingFinal', ''); set('callMode', ''); set('ret', ARGV[19]); set('idem', idemKey); set('bodyHash', ARGV[7])
if L2 then set('lay', ARGV[23]) end
local msgs = cjson.decode(ARGV[9])
if #msgs > 0 then callSliced('RPUSH', msgsKey, msgs) end
for _, id in ipairs(cjson.decode(ARGV[22])) do setCall(id, ':st', 'done') end
rcall('ZADD', KEYS[4], nowMs, runId)
emitAll(eventsJson)
commit(0)
indexStatus(ARGV[5], nil, status, nowMs, ARGV[19], idemKey) -- after the keys exist: a run created failed expires too
return { 'created', status }
