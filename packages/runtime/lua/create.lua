--[[ Create a run (HTTP or queue intake), honouring an idempotency key.
  KEYS[1] state  KEYS[2] transcript  KEYS[3] events  KEYS[4] tenant run index (zset)  KEYS[5] idempotency key
  ARGV[5] tenant  ARGV[6] request JSON  ARGV[7] body hash  ARGV[8] idempotency TTL s (0 = no key)
  ARGV[9] initial messages (JSON array of message JSON strings)  ARGV[10] events JSON  ARGV[11] status
  ARGV[12] error JSON or ''  ARGV[13] model JSON  ARGV[14] mode  ARGV[15] metadata JSON  ARGV[16] schema version
  ARGV[17] maxWallMs (0 = none)
  Returns {1, runId} when created, {0, "<runId> <bodyHash>"} when the idempotency key already names a run. ]]
if tonumber(ARGV[8]) > 0 then
  local existing = rcall('GET', KEYS[5])
  if existing then return { 0, existing } end
  rcall('SET', KEYS[5], runId .. ' ' .. ARGV[7], 'EX', ARGV[8])
end
set('v', ARGV[16]); set('id', runId); set('tenant', ARGV[5]); set('status', ARGV[11]); set('phase', 'queued')
set('iteration', 0); set('createdAt', nowMs); set('updatedAt', nowMs); set('request', ARGV[6]); set('model', ARGV[13])
set('mode', ARGV[14]); set('metadata', ARGV[15]); set('maxWallMs', ARGV[17]); set('error', ARGV[12]); set('cancel', '')
set('batch', ''); set('pendingFinal', ''); set('callMode', '')
local msgs = cjson.decode(ARGV[9])
for i = 1, #msgs, 1000 do
  rcall('RPUSH', msgsKey, unpack(msgs, i, math.min(i + 999, #msgs)))
end
rcall('ZADD', KEYS[4], nowMs, runId)
emitAll(ARGV[10])
commit(0)
return { 1, runId }
