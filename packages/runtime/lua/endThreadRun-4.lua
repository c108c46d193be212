--[[ A thread's active run ended: its own messages join the thread's conversation, and the next run waiting on the
  thread (if any) becomes its active run. Idempotent: a repeat (the relay after a crash) finds another run active and
  changes nothing. Run on the thread's keys alone (a run and its thread need not share a slot: ARCHITECTURE, Threads).
  KEYS[1] the thread's hash  KEYS[2] its runs  KEYS[3] its messages  KEYS[4] its waiting runs
  ARGV[1] the run that ended (then the head arguments every script takes)  ARGV[6] its own messages, a JSON array of
  message JSON texts (no system prompts)  ARGV[7] the thread's retention (s), counted from its last run's end
  Returns {'next', runId} — the thread's active run now, which the caller starts when it still waits — or {'idle'}
  (nothing active: the thread expires after its retention unless a new run comes). ]]
local ended = ARGV[1]
local active = rcall('HGET', KEYS[1], 'active')
if active ~= ended then
  if active and active ~= '' then return { 'next', active } end
  return { 'idle' }
end
local own = cjson.decode(ARGV[6])
if #own > 0 then callSliced('RPUSH', KEYS[3], own) end
local nextRun = rcall('LPOP', KEYS[4])
if nextRun then
  rcall('HSET', KEYS[1], 'active', nextRun)
  return { 'next', nextRun }
end
rcall('HDEL', KEYS[1], 'active')
rcall('HSET', KEYS[1], 'endedAt', nowMs)
for i = 1, 4 do rcall('EXPIRE', KEYS[i], ARGV[7]) end
return { 'idle' }
