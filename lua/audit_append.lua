-- audit_append.lua: record one operator action in the audit list (newest
-- first), which keeps the latest `cap` entries only, so it stays bounded
-- however many actions are taken (GET /v1/admin/audit reads it).
--
-- KEYS   audit
-- ARGV   entry  the action, JSON (written as is)
-- ARGV   cap    entries kept (1..10000)
--
-- Reply: { entries now kept }

local entry, cap = args.entry, int_arg(args.cap)
if entry == '' then return fail('entry is empty') end
if cap == nil or cap < 1 or cap > 10000 then return fail('cap must be 1..10000') end
redis.call('LPUSH', k.audit, entry)
redis.call('LTRIM', k.audit, 0, cap - 1)
return { redis.call('LLEN', k.audit) }
