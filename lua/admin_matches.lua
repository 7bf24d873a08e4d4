-- admin_matches.lua: a world's open proposals (ready checks) and one page of
-- its live matches with their lifecycles, for the operator (GET
-- /v1/admin/worlds/{worldType}/matches). Match records of every world share
-- one expiry index, so a call looks at `scan` of them at most (latest expiry
-- first: the newest and the running) and keeps the world's, `limit` at most;
-- the next page starts at `next_offset`.
--
-- KEYS   matches match_expiry match_lifecycle proposals proposal_expiry
-- ARGV   world   the world's name
-- ARGV   offset  index entries to skip (the previous page's next_offset; "0" first)
-- ARGV   scan    index entries to look at, at most (1..1000)
-- ARGV   limit   matches (and proposals) to return, at most (1..100)
--
-- Reply: { now_ms, next_offset, proposals, then `proposals` times: match_id, created_ms,
--          accept_by_ms, players, accepted, then matches, then `matches` times:
--          record_json, lifecycle }
--   next_offset: "" when the index has no more entries; players and
--   accepted are space-separated; lifecycle as _lifecycle.lua encodes it.

local world = args.world
local offset, scan, limit = int_arg(args.offset), int_arg(args.scan), int_arg(args.limit)
if world == '' then return fail('world is empty') end
if offset == nil then return fail('offset must be an integer >= 0') end
if scan == nil or scan < 1 or scan > 1000 then return fail('scan must be 1..1000') end
if limit == nil or limit < 1 or limit > 100 then return fail('limit must be 1..100') end
local now = now_ms()
local reply = { now, '', 0 }
if has(k, 'proposals') then
  for _, id in ipairs(redis.call('ZRANGE', k.proposal_expiry, 0, scan - 1)) do
    local p = Proposals.load_proposal(k, id)
    if p and p.world == world and reply[3] < limit then
      reply[3] = reply[3] + 1
      local at = #reply
      reply[at + 1], reply[at + 2], reply[at + 3] = id, p.created, p.acceptBy
      reply[at + 4], reply[at + 5] = table.concat(p.players, ' '), table.concat(p.accepted, ' ')
    end
  end
end
local count_at = #reply + 1
reply[count_at] = 0
local ids = redis.call('ZREVRANGEBYSCORE', k.match_expiry, '+inf', '(' .. string.format('%d', now),
  'LIMIT', offset, scan)
local looked = 0
for _, id in ipairs(ids) do
  if reply[count_at] >= limit then break end
  looked = looked + 1
  local record = redis.call('HGET', k.matches, id)
  if record and cjson.decode(record).worldType == world then
    reply[count_at] = reply[count_at] + 1
    reply[#reply + 1] = record
    reply[#reply + 1] = Lifecycle.encode_lifecycle(Lifecycle.load_lifecycle(k, id))
  end
end
if looked == #ids and #ids < scan then
  reply[2] = ''
else
  reply[2] = string.format('%d', offset + looked)
end
return reply
