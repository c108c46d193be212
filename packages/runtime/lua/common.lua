--[[ Shared helpers, prepended to every run script (BullMQ's @include, done by the loader).
  Run scripts take the same five keys:
    KEYS[1] state hash   KEYS[2] transcript list   KEYS[3] event list   KEYS[4] calls hash   KEYS[5] responses hash
  and the same first ARGV:
    ARGV[1] runId   ARGV[2] now (ISO)   ARGV[3] now (ms)   ARGV[4] events pub/sub channel
  Every event is appended here, under the same atomic step as the state change it reports. ]]
local rcall = redis.call
local stateKey, msgsKey, eventsKey, callsKey, respKey = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5]
local runId, nowIso, nowMs, channel = ARGV[1], ARGV[2], ARGV[3], ARGV[4]
local lastSeq = nil

local function emit(etype, dataJson)
  lastSeq = rcall('HINCRBY', stateKey, 'seq', 1)
  rcall('RPUSH', eventsKey, '{"seq":' .. lastSeq .. ',"runId":"' .. runId .. '","type":"' .. etype .. '","at":"' .. nowIso .. '","data":' .. dataJson .. '}')
end

-- events: a JSON array of [type, dataJson] pairs built by the caller
local function emitAll(eventsJson)
  if eventsJson == nil or eventsJson == '' or eventsJson == '[]' then return end
  for _, e in ipairs(cjson.decode(eventsJson)) do emit(e[1], e[2]) end
end

local function publish()
  if lastSeq then rcall('PUBLISH', channel, lastSeq) end
end

local function isTerminal(status)
  return status == 'completed' or status == 'failed' or status == 'cancelled'
end

local function toolCallEvent(callId, meta, status, extra)
  return '{"callId":' .. cjson.encode(callId) .. ',"name":' .. cjson.encode(meta.name) .. ',"arguments":' .. meta.display ..
    ',"status":"' .. status .. '"' .. (extra or '') .. '}'
end

-- Answer a call that will not run (cancelled, skipped, outcome_unknown): record the outcome, emit its final event.
local function closeCall(callId, status, code, message, retryable)
  local meta = cjson.decode(rcall('HGET', callsKey, callId))
  local err = { code = code, message = message, retryable = retryable }
  local content = cjson.encode({ ok = false, error = err })
  rcall('HSET', callsKey, callId .. ':out', cjson.encode({ status = status, content = content, error = err }), callId .. ':st', 'done')
  emit('tool.call', toolCallEvent(callId, meta, status, ',"error":' .. cjson.encode(err)))
  return content
end

-- Append the current batch's tool messages in call order. Calls without an outcome are answered first:
-- `cancelled` when the run is ending (fill = 'cancelled'), `tool_error` when their job failed (fill = 'error').
local function absorbBatch(fill)
  local batchJson = rcall('HGET', stateKey, 'batch')
  if not batchJson or batchJson == '' then return nil end
  local ids = cjson.decode(batchJson)
  local contents = {}
  for i, id in ipairs(ids) do
    local out = rcall('HGET', callsKey, id .. ':out')
    if out then
      contents[i] = cjson.decode(out).content
    elseif fill == 'cancelled' then
      contents[i] = closeCall(id, 'cancelled', 'cancelled', 'The run was cancelled before this call finished.', false)
    else
      contents[i] = closeCall(id, 'error', 'tool_error', 'The tool call could not be executed: its job failed.', true)
    end
  end
  for i, id in ipairs(ids) do
    rcall('RPUSH', msgsKey, cjson.encode({ role = 'tool', toolCallId = id, content = contents[i] }))
  end
  rcall('HSET', stateKey, 'batch', '')
end
