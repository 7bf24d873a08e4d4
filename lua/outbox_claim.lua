-- outbox_claim.lua: claim due notifications for delivery, hidden for
-- `lease` ms while they are pushed (see _outbox.lua).
--
-- KEYS   matches match_lifecycle outbox outbox_meta notes conns player_conns
-- ARGV   lease    ms (> 0) a claimed entry stays hidden
-- ARGV   limit    most entries to claim (> 0)
-- ARGV   young    ms: connections registered this recently are listed apart
--                 (a 410 from one of them may only mean its $connect is finishing)
-- REST   only     optional: claim exactly these ids (if due) instead of the oldest due
-- (outbox_meta: notification id -> "<attempts>:<first_attempt_ms>:<in_flight>:<pending>",
-- from the first claim on; see _lib.lua outbox ids)
--
-- Reply: flat, per claimed entry: { id, attempts, age_ms, payload,
--   target_count, (target_index, player, connections, young_connections)
--   x target_count, ... } (see _outbox.lua claim_entries)

local lease = int_arg(args.lease)
local limit = int_arg(args.limit)
local young = int_arg(args.young)
if lease == nil or lease == 0 then return fail('lease must be an integer > 0') end
if limit == nil or limit == 0 then return fail('limit must be an integer > 0') end
if young == nil then return fail('young must be an integer >= 0') end

local now = now_ms()
local ids
if #rest > 0 then
  ids = {}
  for _, id in ipairs(rest) do
    local due = tonumber(redis.call('ZSCORE', k.outbox, id))
    if due and due <= now and #ids < limit then ids[#ids + 1] = id end
  end
else
  ids = redis.call('ZRANGEBYSCORE', k.outbox, '-inf', now, 'LIMIT', 0, limit)
end

local reply = {}
Outbox.claim_entries(k, ids, { now = now, lease = lease, young = young }, reply, 0)
return reply
