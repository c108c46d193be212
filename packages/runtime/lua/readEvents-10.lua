--[[ Read a page of a run's events: those after seq ARGV[6], in seq order, up to ARGV[7] seqs, from fields 'e:<seq>'
  of the state hash. A follower usually reads the few events of one step: the first read takes the last seq and the
  next READ_AHEAD events in one HMGET.
  Returns {'events', through, last, envelope JSON...}: `through` the last seq this page covers (the next page reads
  after it), `last` the run's last seq (through = last: caught up). A seq whose field is missing (never written by
  this build; a gap must not stall a reader) is covered and skipped: never a null, and the next page starts past it.
  A run that is gone has no events: through = ARGV[6], last = 0. ]]
local READ_AHEAD = 32
local after = tonumber(ARGV[6]) or 0
local pageSize = math.max(1, tonumber(ARGV[7]) or 500)
local fields = { 'status', 'lay', 'seq' }
for i = after + 1, after + math.min(READ_AHEAD, pageSize) do fields[#fields + 1] = 'e:' .. i end
local r = rcall('HMGET', stateKey, unpack(fields))
checkLayout(r[1], r[2])
local last = tonumber(r[3]) or 0
local through = math.max(after, math.min(last, after + pageSize))
local out = { 'events', through, last }
for i = after + 1, math.min(through, after + READ_AHEAD) do
  if r[3 + i - after] then out[#out + 1] = r[3 + i - after] end
end
if through > after + READ_AHEAD then
  local rest = {}
  for i = after + READ_AHEAD + 1, through do rest[#rest + 1] = 'e:' .. i end
  for _, v in ipairs(hmgetSliced(stateKey, rest)) do
    if v then out[#out + 1] = v end
  end
end
return out
