--[[ Read a run's events after seq ARGV[5], in seq order, from wherever its layout keeps them: fields 'e:<seq>' of
  the state hash (layout 3), or the event list KEYS[3] (seq n at index n-1).
  Returns {'events', envelope JSON...} (none when the run is gone). ]]
local after = tonumber(ARGV[5]) or 0
local st = rcall('HMGET', stateKey, 'lay', 'seq')
if st[1] ~= LAYOUT3 then return withList({ 'events' }, rcall('LRANGE', eventsKey, after, -1)) end
local fields = {}
for i = after + 1, tonumber(st[2]) or 0 do fields[#fields + 1] = 'e:' .. i end
local out = { 'events' }
for _, v in ipairs(hmgetSliced(stateKey, fields)) do
  if v then out[#out + 1] = v end
end
return out
