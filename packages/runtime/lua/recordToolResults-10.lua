--[[ Record the outcomes of a batch of local calls (SPEC §6) in one step: each call exactly as recordToolResult would,
  one read and one commit for all of them (common.lua, recordEntries).
  ARGV[6] JSON array of entries, one per call (recordEntries). A batch whose next iteration goes on in the same job
  records them in that iteration's start instead (startIteration's ARGV[15]).
  Returns {'recorded', per call in order: 'recorded' | 'cancelled' | 'skipped' | 'stale' | 'answered'}. ]]
local answers, st = recordEntries(cjson.decode(ARGV[6]))
commit(st[1], st[2])
return withList({ 'recorded' }, answers)
