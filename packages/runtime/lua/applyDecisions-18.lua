--[[ Apply decisions to a paused run, whole or not at all; when the last pending call is decided, flip the run to
  resuming exactly once. The caller reads nothing first: ownership, status and every decision are checked here.
  ARGV[6] expected iteration or '' (any)   ARGV[7] the caller's tenant or '' (no check)
  ARGV[8] decisions JSON: [[callId, action, outcomeJson or '', metaJson or '', its tool.call event's template], ...]
    (event-templates.ts decisionEventTemplate: the script fills in the call's name and arguments from its record)
  ARGV[9] the assistant message with edited arguments, built whole by the caller, or ''  ARGV[10] its index  ARGV[11] the
    SHA1 of the message it was built from: the edit applies only over that text (cjson would turn its [] into {})
  Returns {'resumed', #names, tool names of the decided calls..., #approved, approvedCallIds..., state field,
  value...}, {'waiting', #names, names..., remainingCallIds...},
  {'not_found'}, {'not_paused', status}, {'conflict', callId}, {'invalid', callId, pauseType}, or {'edit_stale'} (the
  message changed since the caller read it: read it again). ]]
local st = readState(withStateFields({ 'status', 'iteration', 'pending', 'seq', 'batchMsg', 'batch', 'tenant', 'watch' }))
if not st[1] or (ARGV[7] ~= '' and st[7] ~= ARGV[7]) then return { 'not_found' } end
if st[1] ~= 'paused' or (ARGV[6] ~= '' and tonumber(st[2]) ~= tonumber(ARGV[6])) then return { 'not_paused', st[1] } end
local pending = cjson.decode(st[3])
local pauseTypeOf = {}
for _, p in ipairs(pending) do pauseTypeOf[p.callId] = p.pauseType end
local decisions = cjson.decode(ARGV[8])
local seen = {}
for _, d in ipairs(decisions) do
  local id, action = d[1], d[2]
  local pauseType = pauseTypeOf[id]
  if not pauseType or seen[id] or rcall('HEXISTS', stateKey, cf(id, ':dec')) == 1 then return { 'conflict', id } end
  local client = pauseType == 'requires_client_execution'
  if (action == 'approve' and client) or (action == 'submit_result' and not client) then return { 'invalid', id, pauseType } end
  seen[id] = true
end
if ARGV[9] ~= '' and (tonumber(ARGV[10]) ~= tonumber(st[5]) or redis.sha1hex(rcall('LINDEX', msgsKey, tonumber(st[5])) or '') ~= ARGV[11]) then
  return { 'edit_stale' }
end
mustTransition(st[1], 'running') -- (if this request completes the decisions; checked before any write)
local names = {}
for _, d in ipairs(decisions) do
  local id, action = d[1], d[2]
  local meta = cjson.decode(rcall('HGET', stateKey, cf(id)))
  names[#names + 1] = meta.name
  rcall('HSET', stateKey, cf(id, ':dec'), action)
  if d[3] ~= '' then rcall('HSET', stateKey, cf(id, ':out'), d[3], cf(id, ':st'), 'done') end
  if d[4] ~= '' then rcall('HSET', stateKey, cf(id), d[4]) end
  emitToolCall(d[5], id, meta) -- (meta as it was: an edited call's original arguments)
end
if ARGV[9] ~= '' then
  rcall('LSET', msgsKey, tonumber(st[5]), ARGV[9])
  set('edited', '1')
end
local remaining = {}
for _, p in ipairs(pending) do
  if rcall('HEXISTS', stateKey, cf(p.callId, ':dec')) == 0 then remaining[#remaining + 1] = p.callId end
end
if #remaining > 0 then
  commit(st[4], st[8])
  local out = { 'waiting', #names }
  for _, n in ipairs(names) do out[#out + 1] = n end
  for _, id in ipairs(remaining) do out[#out + 1] = id end
  return out
end
-- the last decision: resume exactly once
local all, approved = {}, {}
for _, p in ipairs(pending) do
  local action = rcall('HGET', stateKey, cf(p.callId, ':dec'))
  all[#all + 1] = fillTemplate(EVENT_TEMPLATES.resumedDecision, { callId = cjson.encode(p.callId), action = cjson.encode(action) })
  if action == 'approve' then approved[#approved + 1] = p.callId end
end
emit('run.resumed', fillTemplate(EVENT_TEMPLATES.runResumed, { decisions = table.concat(all, ',') })) -- (a JSON array's items)
set('status', 'running'); set('phase', 'tools'); set('pending', ''); set('resuming', '1'); set('updatedAt', nowMs)
rcall('ZREM', parkedKey, runId)
rcall('ZADD', resumingKey, nowMs, runId)
commit(st[4], st[8])
-- the state as it is now, for the publisher's plan of the resumed iteration (no second read)
local out = { 'resumed', #names }
for _, n in ipairs(names) do out[#out + 1] = n end
out[#out + 1] = #approved
for _, id in ipairs(approved) do out[#out + 1] = id end
withList(out, stateAfter(st, 8))
return out
