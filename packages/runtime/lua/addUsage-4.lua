--[[ Add a model call's usage to a run's totals (compression calls: billed like loop calls, SPEC §3).
  ARGV[5] prompt  ARGV[6] completion  ARGV[7] reasoning  ARGV[8] total  ARGV[9] cost USD  ARGV[10] llm calls
  ARGV[11] cached prompt tokens
  Returns {'added'}, or {'ended'} when the run is gone or finished (nothing is written: an expired run's keys are
  not recreated). ]]
local st = rcall('HGET', stateKey, 'status')
if not st or isTerminal(st) then return { 'ended' } end
rcall('HINCRBY', stateKey, 'promptTokens', ARGV[5])
rcall('HINCRBY', stateKey, 'completionTokens', ARGV[6])
rcall('HINCRBY', stateKey, 'reasoningTokens', ARGV[7])
rcall('HINCRBY', stateKey, 'totalTokens', ARGV[8])
rcall('HINCRBYFLOAT', stateKey, 'costUsd', ARGV[9])
rcall('HINCRBY', stateKey, 'llmCalls', ARGV[10])
rcall('HINCRBY', stateKey, 'cachedTokens', ARGV[11] or 0)
return { 'added' }
