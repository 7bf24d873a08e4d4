-- admin_tickets.lua: one page of a world's waiting tickets, oldest first, for
-- the operator (GET /v1/admin/worlds/{worldType}/tickets). A queue may hold a
-- million tickets, so a call reads at most `limit` of them and hands back
-- where the next page starts (a ticket's sequence: a proposal that is
-- cancelled puts its tickets back at their old sequence, which a page past
-- it does not show again).
--
-- KEYS   players parties
-- WORLDS the world
-- ARGV   after  the sequence of the previous page's last ticket ("0": from the front)
-- ARGV   limit  tickets at most (1..200)
--
-- Reply: { now_ms, waiting, next_after, count, then `count` times: ticket, seq,
--          joined_ms, deadline_ms, data_json, rating, latencies, players }
--   next_after: "" when this page reaches the end of the queue; data_json,
--   rating and latencies ("<region>=<ms>,...") are "" where the ticket has
--   none; players: the player, or a party ticket's members, space-separated
--   (a party ticket is "\1<party id>").

local after, limit = int_arg(args.after), int_arg(args.limit)
if after == nil then return fail('after must be an integer >= 0') end
if limit == nil or limit < 1 or limit > 200 then return fail('limit must be 1..200') end
local ctx = { k = k, world = worlds[1] }
local page = redis.call('ZRANGEBYSCORE', k.queue, '(' .. string.format('%d', after), '+inf',
  'WITHSCORES', 'LIMIT', 0, limit + 1)
local n = math.min(#page / 2, limit)
local reply = { now_ms(), redis.call('ZCARD', k.queue), '', n }
if #page / 2 > limit then reply[3] = page[2 * limit] end
local rated, regional = has(k, 'ratings'), has(k, 'latencies')
for i = 1, n do
  local t, seq = page[2 * i - 1], tonumber(page[2 * i])
  local _, _, joined, deadline = Players.waiting_ticket(k, t)
  local players = t
  if Players.is_party_ticket(t) then
    local party = has(k, 'parties') and Parties.load_party(k, string.sub(t, 2))
    players = party and table.concat(Parties.party_players(party), ' ') or ''
  end
  local rating = rated and redis.call('ZSCORE', k.ratings, Players.rating_member(seq, t))
  local latencies = regional and redis.call('HGET', k.latencies, t)
  local at = #reply
  reply[at + 1], reply[at + 2], reply[at + 3], reply[at + 4] = t, seq, joined or 0, deadline or 0
  reply[at + 5] = Players.ticket_data(ctx, t)
  reply[at + 6], reply[at + 7], reply[at + 8] = rating or '', latencies or '', players
end
return reply
