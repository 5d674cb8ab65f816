-- entry.lua (chunk level, last): runs the function run of the chunk's
-- entry point (main.lua, sharemain.lua) and turns a failure into an error
-- reply that starts with "admit: ".

if redis.replicate_commands then
  redis.replicate_commands() -- Redis < 5: replicate effects, since TIME is read
end
local ok, res = pcall(run)
if ok then
  return res
end
if type(res) == 'table' then
  return res -- an error of redis.call, as Redis gave it
end
res = tostring(res)
if string.sub(res, 1, 7) ~= 'admit: ' then
  res = 'admit: internal error: ' .. res
end
return redis.error_reply(res)
