--[[ Read a run's events after seq ARGV[5], in seq order, from wherever its layout keeps them: fields 'e:<seq>' of
  the state hash (layout 3), or the event list KEYS[3] (seq n at index n-1). A follower usually reads the few
  events of one step: the first read takes the layout, the last seq and the next READ_AHEAD events in one HMGET.
  Returns {'events', envelope JSON...} (none when the run is gone). ]]
local READ_AHEAD = 32
local after = tonumber(ARGV[5]) or 0
local fields = { 'lay', 'seq' }
for i = after + 1, after + READ_AHEAD do fields[#fields + 1] = 'e:' .. i end
local r = rcall('HMGET', stateKey, unpack(fields))
if r[1] ~= LAYOUT3 then return withList({ 'events' }, rcall('LRANGE', eventsKey, after, -1)) end
local last = tonumber(r[2]) or 0
local out = { 'events' }
-- (a field is missing only where a process that knows no layout 3 wrote the run: skipped, never a null)
for i = after + 1, math.min(last, after + READ_AHEAD) do
  if r[2 + i - after] then out[#out + 1] = r[2 + i - after] end
end
if last > after + READ_AHEAD then
  local rest = {}
  for i = after + READ_AHEAD + 1, last do rest[#rest + 1] = 'e:' .. i end
  for _, v in ipairs(hmgetSliced(stateKey, rest)) do
    if v then out[#out + 1] = v end
  end
end
return out
