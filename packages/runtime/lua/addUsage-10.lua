--[[ Add a model call's usage to a run's totals (compression calls: billed like loop calls, SPEC §3).
  ARGV[6] prompt  ARGV[7] completion  ARGV[8] reasoning  ARGV[9] total  ARGV[10] cost USD  ARGV[11] llm calls
  ARGV[12] cached prompt tokens
  Returns {'added'}, or {'ended'} when the run is gone or finished (nothing is written: an expired run's keys are
  not recreated). ]]
local st = rcall('HGET', stateKey, 'status')
if not st or isTerminal(st) then return { 'ended' } end
rcall('HINCRBY', stateKey, 'promptTokens', ARGV[6])
rcall('HINCRBY', stateKey, 'completionTokens', ARGV[7])
rcall('HINCRBY', stateKey, 'reasoningTokens', ARGV[8])
rcall('HINCRBY', stateKey, 'totalTokens', ARGV[9])
rcall('HINCRBYFLOAT', stateKey, 'costUsd', ARGV[10])
rcall('HINCRBY', stateKey, 'llmCalls', ARGV[11])
rcall('HINCRBY', stateKey, 'cachedTokens', ARGV[12] or 0)
return { 'added' }
