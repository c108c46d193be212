--[[ Record the outcomes of a batch of local calls (SPEC §6) in one step: each call exactly as recordToolResult would,
  one read and one commit for all of them (the cheapest path of a batch whose calls all ran in the iteration).
  ARGV[6] JSON array of entries, one per call: [callId, outcome JSON, its tool.call event line, its `running` event
  line or '' (as recordToolResult's ARGV[9]), the delivery that recorded its start or '' (its ARGV[10])].
  Each call is checked on its own: answered already (a duplicate delivery), or running under another owner (this
  delivery stalled past its lock and the call was taken over: stale), it changes nothing; a one-step call whose run
  ended or is being cancelled is answered `cancelled`, past the wall-clock budget `skipped`.
  Returns {'recorded', per call in order: 'recorded' | 'cancelled' | 'skipped' | 'stale' | 'answered'}. ]]
local entries = cjson.decode(ARGV[6])
local callFields = {}
for i, e in ipairs(entries) do
  callFields[2 * i - 1] = e[1] .. ':st'
  callFields[2 * i] = e[1] .. ':own'
end
local st, call = readState({ 'seq', 'watch', 'status', 'cancel', 'createdAt', 'maxWallMs' }, callFields)
local ending = isTerminal(st[3]) or (st[4] and st[4] ~= '')
local wall = tonumber(st[6]) or 0
local overWall = wall > 0 and tonumber(nowMs) > (tonumber(st[5]) or 0) + wall
local out = { 'recorded' }
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
  end
  out[#out + 1] = r
end
commit(st[1], st[2])
return out
