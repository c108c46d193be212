--[[ A run that waited on its thread becomes startable (the runs ahead of it ended): its transcript becomes its system
  prompt, the thread's conversation so far, then its own input — and it joins the queued index, so the queued-run
  reconciler publishes its first job should the caller die before it does. Compare-and-set on `thrWait`.
  ARGV[6] the thread's messages, a JSON array of message JSON texts
  Returns {'started'}, or {'stale'} (it no longer waits: started before, or never waited). ]]
local st = readState({ 'thrWait', 'status', 'createdAt', 'seq', 'watch' })
if st[1] ~= '1' then return { 'stale' } end
local own = rcall('LRANGE', msgsKey, 0, -1)
local n = 0
while n < #own and cjson.decode(own[n + 1]).role == 'system' do n = n + 1 end
local msgs = withThread(own, n, cjson.decode(ARGV[6]))
rcall('DEL', msgsKey)
if #msgs > 0 then callSliced('RPUSH', msgsKey, msgs) end
set('thrWait', ''); set('thrFrom', #msgs - (#own - n)); set('updatedAt', nowMs)
if st[2] == 'queued' then rcall('ZADD', queuedKey, st[3], runId) end
commit(st[4], st[5])
return { 'started' }
