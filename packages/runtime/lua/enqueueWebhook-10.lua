--[[ Records a webhook delivery in the run's delivery log and names the job that works the log off: the relay's step
  for an outbox entry 'W|<runId>|<seq>|<type>', and the step of a delivery job that failed for good.
  KEYS[4] the run's delivery log, a hash: 'n' how many deliveries; '<i>' delivery i's record (WebhookRecord JSON, i
  from 1, oldest first); 's:<seq>' the i of event seq's delivery (an entry relayed twice is one delivery); 'b:<i>' its
  body once built (every attempt sends the same bytes); 'head' the oldest delivery not finished (delivered or given
  up): deliveries go one at a time, in order; 'job' the generation of the one delivery job that works the log off (''
  while nothing is pending); 'gen' the last generation.
  ARGV[6] the event's seq ('' = no new delivery)  ARGV[7] its record (JSON)  ARGV[8] a generation whose job failed for
  good ('' = none): the log is no longer its
  Returns {'queued', gen}: the delivery job of generation gen must exist (adding it again is harmless: its id names
  it); {'idle'} nothing is pending; {'gone'} the run expired: nothing is recorded. ]]
if rcall('EXISTS', stateKey) == 0 then return { 'gone' } end
local log = webhooksKey
if ARGV[8] ~= '' and rcall('HGET', log, 'job') == ARGV[8] then rcall('HSET', log, 'job', '') end
if ARGV[6] ~= '' and rcall('HSETNX', log, 's:' .. ARGV[6], '0') == 1 then
  local n = rcall('HINCRBY', log, 'n', 1)
  rcall('HSET', log, 's:' .. ARGV[6], n, n, ARGV[7])
  rcall('HSETNX', log, 'head', 1)
  -- a log made after its run ended expires with it (expireRun gave one that existed the run's retention)
  local ttl = rcall('PTTL', stateKey)
  if ttl > 0 then rcall('PEXPIRE', log, ttl) end
end
local f = rcall('HMGET', log, 'job', 'head', 'n')
if f[1] and f[1] ~= '' then return { 'queued', f[1] } end
if (tonumber(f[2]) or 1) > (tonumber(f[3]) or 0) then return { 'idle' } end
local gen = rcall('HINCRBY', log, 'gen', 1)
rcall('HSET', log, 'job', gen)
return { 'queued', gen }
