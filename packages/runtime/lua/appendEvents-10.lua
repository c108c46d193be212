--[[ Append events (deltas, retries) while iteration ARGV[6] is calling the model ('' = any live state).
  ARGV[7] events (envelope lines)  ARGV[8] '1': these are the iteration's first deltas (remembered, so a retried call can tell
  clients to discard them)  ARGV[9] the delivery that owns the iteration's model call ('' = no fence): a delivery
  that lost it (BullMQ handed its job to another after a missed lock renewal) has its events refused
  Returns {'appended'}, or {'stale'} when the run has moved on or ended (the events are dropped). ]]
local st = rcall('HMGET', stateKey, 'status', 'iteration', 'phase', 'seq', 'watch', 'owner', 'lay', 'wh')
checkLayout(st[1], st[7])
useNotify(st[8])
if isTerminal(st[1]) then return { 'stale' } end
if ARGV[6] ~= '' and (tonumber(st[2]) ~= tonumber(ARGV[6]) or st[3] ~= 'model') then return { 'stale' } end
if ARGV[9] and ARGV[9] ~= '' and st[6] ~= ARGV[9] then return { 'stale' } end
if ARGV[8] == '1' then set('deltaIter', ARGV[6]) end
emitAll(ARGV[7])
commit(st[4], st[5])
return { 'appended' }
