--[[ A client follows the run (SSE): its watch lease runs until ARGV[6] (ms). While it does, every script that appends
  events also PUBLISHes the new last seq on the run's channel; nobody following, nobody is told (the SSE handler's
  slow poll covers a lease that lapsed). A run whose keys are gone (retention) is not recreated.
  Returns {'watching'}, or {'gone'}. ]]
if rcall('EXISTS', stateKey) == 0 then return { 'gone' } end
rcall('HSET', stateKey, 'watch', ARGV[6])
return { 'watching' }
