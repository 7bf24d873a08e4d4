-- matcher_sleep.lua: the matcher goes to sleep when nothing is to be done:
-- no world has a waiting ticket, no party is assembling, no proposal or
-- backfill is open, and the outbox holds only entries that have failed
-- `patience` times already (players unreachable for a while: the matcher's
-- schedule, once a minute, retries those). It marks itself asleep and
-- gives up its lease; the first script that makes work wakes it (see
-- _lib.lua wake_matcher). Only the lease holder may sleep. Going to sleep
-- also drops the worlds' stale deadline entries (below).
--
-- KEYS   outbox outbox_meta party_expiry proposal_expiry matcher_lease
-- KEYS   matcher_asleep backfill_expiry
-- WORLDS every configured world
-- ARGV   token     the caller's lease token
-- ARGV   patience  attempts after which an outbox entry no longer keeps it awake
--
-- Reply: 1 asleep now, 0 awake (something to do, or not the lease holder).

local token = args.token
local patience = int_arg(args.patience)
if token == '' then return fail('token is empty') end
if not patience or patience < 1 then return fail('patience must be an integer > 0') end
if redis.call('GET', k.matcher_lease) ~= token then return 0 end
for i = 1, world_count do
  if redis.call('ZCARD', world_keys(i).queue) > 0 then return 0 end
end
for _, key in ipairs({ k.party_expiry, k.proposal_expiry, k.backfill_expiry }) do
  if redis.call('ZCARD', key) > 0 then return 0 end
end
-- Bounded: a long outbox is work, whatever its entries' attempts.
local OUTBOX_LOOK = 100
local entries = redis.call('ZRANGE', k.outbox, 0, OUTBOX_LOOK)
if #entries > OUTBOX_LOOK then return 0 end
for _, id in ipairs(entries) do
  local attempts = tonumber(string.match(redis.call('HGET', k.outbox_meta, id) or '', '^(%d+):'))
  if not attempts or attempts < patience then return 0 end
end
-- Every queue is empty, so every deadline entry left is one of a ticket
-- that left or matched, which the sweep drops lazily once due: a sleeping
-- matcher does not sweep, so they go now (UNLINK: freed off the main thread
-- however many a busy hour left).
for i = 1, world_count do
  redis.call('UNLINK', world_keys(i).deadlines)
end
redis.call('SET', k.matcher_asleep, '1')
redis.call('DEL', k.matcher_lease)
return 1
