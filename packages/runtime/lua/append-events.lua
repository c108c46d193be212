--[[ Append events (deltas, retries) while iteration ARGV[5] is calling the model ('' = any live state).
  ARGV[6] events JSON  ARGV[7] mark deltas of this iteration as sent ('1') or not
  Returns 1, or 0 when the run has moved on or ended (the events are dropped). ]]
local st = rcall('HMGET', stateKey, 'status', 'iteration', 'phase')
if isTerminal(st[1]) then return 0 end
if ARGV[5] ~= '' and (tonumber(st[2]) ~= tonumber(ARGV[5]) or st[3] ~= 'model') then return 0 end
if ARGV[7] == '1' then rcall('HSET', stateKey, 'deltaIter', ARGV[5]) end
emitAll(ARGV[6])
publish()
return 1
