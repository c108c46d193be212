--[[ Apply decisions to a paused run, whole or not at all; when the last pending call is decided, flip the run to
  resuming exactly once.
  KEYS[5] parked-runs zset  KEYS[6] resuming-runs zset
  ARGV[5] expected iteration  ARGV[6] decisions JSON: [[callId, action, outcomeJson or '', metaJson or '', eventJson], ...]
  ARGV[7] the assistant message edit: JSON {callId: newArgumentsText} or ''
  Returns {'resumed', approvedCallIds...}, {'waiting', remainingCallIds...}, {'not_paused'}, or {'conflict', callId}. ]]
local st = rcall('HMGET', stateKey, 'status', 'iteration', 'pending', 'seq', 'batchMsg', 'batch')
if st[1] ~= 'paused' or tonumber(st[2]) ~= tonumber(ARGV[5]) then return { 'not_paused' } end
local pending = cjson.decode(st[3])
local isPending = {}
for _, p in ipairs(pending) do isPending[p.callId] = true end
local decisions = cjson.decode(ARGV[6])
local seen = {}
for _, d in ipairs(decisions) do
  local id = d[1]
  if not isPending[id] or seen[id] or rcall('HEXISTS', callsKey, id .. ':dec') == 1 then return { 'conflict', id } end
  seen[id] = true
end
for _, d in ipairs(decisions) do
  local id, action = d[1], d[2]
  rcall('HSET', callsKey, id .. ':dec', action)
  if d[3] ~= '' then rcall('HSET', callsKey, id .. ':out', d[3], id .. ':st', 'done') end
  if d[4] ~= '' then rcall('HSET', callsKey, id, d[4]) end
  emit('tool.call', d[5])
end
if ARGV[7] ~= '' then
  local idx = tonumber(st[5])
  local msg = cjson.decode(rcall('LINDEX', msgsKey, idx))
  local edits = cjson.decode(ARGV[7])
  for _, c in ipairs(msg.toolCalls) do
    if edits[c.id] then c.arguments = edits[c.id] end
  end
  rcall('LSET', msgsKey, idx, cjson.encode(msg))
  set('edited', '1')
end
local remaining = {}
for _, p in ipairs(pending) do
  if rcall('HEXISTS', callsKey, p.callId .. ':dec') == 0 then remaining[#remaining + 1] = p.callId end
end
if #remaining > 0 then
  commit(st[4])
  return { 'waiting', unpack(remaining) }
end
-- the last decision: resume exactly once
local all, approved = {}, {}
for _, p in ipairs(pending) do
  local action = rcall('HGET', callsKey, p.callId .. ':dec')
  all[#all + 1] = '{"callId":' .. cjson.encode(p.callId) .. ',"action":"' .. action .. '"}'
  if action == 'approve' then approved[#approved + 1] = p.callId end
end
emit('run.resumed', '{"decisions":[' .. table.concat(all, ',') .. ']}')
set('status', 'running'); set('phase', 'tools'); set('pending', ''); set('resuming', '1'); set('updatedAt', nowMs)
rcall('ZREM', KEYS[5], runId)
rcall('ZADD', KEYS[6], nowMs, runId)
commit(st[4])
return { 'resumed', unpack(approved) }
