--[[ A new delivery of the job that owns iteration k's model call takes it over: BullMQ handed the job on (the worker
  died, or missed a lock renewal and may still be running). Compare-and-set on (iteration k, phase model, owner):
  from here on the appends and the checkpoint of the earlier delivery are refused (fenced by owner), so two
  deliveries never interleave their deltas or both record a response.
  ARGV[5] k  ARGV[6] the owner the caller read  ARGV[7] the new owner (job id @ lock token)
  Returns {'claimed'}, or {'stale'} when the iteration moved on or another delivery claimed it first. ]]
local st = rcall('HMGET', stateKey, 'status', 'phase', 'iteration', 'owner')
if isTerminal(st[1]) or st[2] ~= 'model' or tonumber(st[3]) ~= tonumber(ARGV[5]) or (st[4] or '') ~= ARGV[6] then return { 'stale' } end
rcall('HSET', stateKey, 'owner', ARGV[7])
return { 'claimed' }
