--[[ What the delivery job of generation ARGV[6] delivers next: the oldest delivery not finished (its log: see
  enqueueWebhook-10.lua).
  Returns {'due', i, record JSON, body or '' (not built yet)}; {'idle'} nothing is pending, and the log names no job
  any more (the next delivery starts another); {'stale'} the log is another generation's; {'gone'} it expired. ]]
local log = webhooksKey
local f = rcall('HMGET', log, 'job', 'head', 'n')
if not f[3] then return { 'gone' } end
if f[1] ~= ARGV[6] then return { 'stale' } end
local head = tonumber(f[2]) or 1
if head > tonumber(f[3]) then
  rcall('HSET', log, 'job', '')
  return { 'idle' }
end
local d = rcall('HMGET', log, head, 'b:' .. head)
return { 'due', head, d[1], d[2] or '' }
