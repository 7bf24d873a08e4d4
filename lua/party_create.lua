-- party_create.lua: a player (the leader) creates a party for a world and
-- invites others. The leader is a member at once; the invited join with
-- party_join.lua before the assembly deadline, and the party enters the
-- queue as one ticket when the last one has joined. The invited are told
-- (PARTY_UPDATE). Nothing is written unless every check passes.
--
-- KEYS[1]  tickets        HASH ticket -> ticket (a live one means "queued")
-- KEYS[2]  presence       ZSET player -> until when they have a live connection (ms)
-- KEYS[3]  player_ratings HASH "<world>|<player>" or "*|<player>" -> rating
-- KEYS[4]  outbox         ZSET notification id -> due ms
-- KEYS[5..9] the party block: parties, party_expiry, player_party, notes,
--          counters (see _tickets.lua)
-- KEYS[10..13] the proposal block: proposals, proposal_expiry,
--          player_proposal, cooldowns (see _proposals.lua)
--
-- ARGV[1]  leader's player id
-- ARGV[2]  world name
-- ARGV[3]  largest party the world accepts (>= 2)
-- ARGV[4]  assembly time limit ms (> 0)
-- ARGV[5]  the world requires presence: "1" (the leader must have a live
--          connection now, each member when joining) or "0"
-- ARGV[6]  matching mode: "fifo" or "rating"
-- ARGV[7]  the leader's ticket data JSON, "" for none
-- ARGV[8]  the rating from the leader's verified token claim, "" for none
-- ARGV[9]  the default rating, "" for none
-- ARGV[10], ARGV[11] the lowest and highest rating accepted
-- ARGV[12..] the invited players (distinct, not the leader, at least one)
--
-- Reply: { status, detail }
--   "CREATED", party JSON (see _tickets.lua party_view)
--   "QUEUED", world       the leader holds a live ticket or is in a proposal
--   "COOLING_DOWN", ms    the leader may not join for this many more ms
--   "IN_PARTY", party id  the leader already belongs to a party
--   "BUSY", player        an invited player holds a live ticket, belongs
--                         to a party, is in a proposal or cools down
--   "ABSENT", ""          presence required and the leader has no live connection
--   "NO_RATING", ""       a rated world and no rating for the leader
--   "BAD_RATING", rating  the leader's rating is outside [min, max]

if #KEYS ~= 13 then return fail('expected 13 keys') end
local leader, world = ARGV[1], ARGV[2]
local max_size = int_arg(ARGV[3])
local ttl = int_arg(ARGV[4])
local presence, mode, data = ARGV[5], ARGV[6], ARGV[7]
local claimed, default_rating = ARGV[8], ARGV[9]
local min_rating, max_rating = tonumber(ARGV[10]), tonumber(ARGV[11])
local FIXED_ARGS = 11
if leader == nil or leader == '' then return fail('leader is empty') end
if world == nil or world == '' then return fail('world is empty') end
if max_size == nil or max_size < 2 then return fail('party size limit must be >= 2') end
if ttl == nil or ttl == 0 then return fail('assembly time limit must be > 0') end
if presence ~= '0' and presence ~= '1' then return fail('presence must be 0 or 1') end
if mode ~= 'fifo' and mode ~= 'rating' then return fail('mode must be fifo or rating') end
if mode == 'rating' and (not min_rating or not max_rating or min_rating > max_rating) then
  return fail('bad rating range')
end
local invited = {}
local seen = { [leader] = true }
for i = FIXED_ARGS + 1, #ARGV do
  local p = ARGV[i]
  if p == '' or seen[p] then return fail('invited players must be distinct, non-empty and not the leader') end
  seen[p] = true
  invited[#invited + 1] = p
end
if #invited == 0 then return fail('a party needs at least one invited player') end
if #invited + 1 > max_size then return fail('party larger than the world accepts') end

local k = {
  tickets = KEYS[1], outbox = KEYS[4], parties = KEYS[5], party_expiry = KEYS[6],
  player_party = KEYS[7], notes = KEYS[8], counters = KEYS[9], proposals = KEYS[10],
  proposal_expiry = KEYS[11], player_proposal = KEYS[12], cooldowns = KEYS[13],
}
local now = now_ms()
local function live_ticket(p)
  local t = redis.call('HGET', k.tickets, p)
  if not t then return nil end
  local w, _, _, deadline = decode_ticket(t)
  if deadline and deadline > now then return w end
  return nil
end

local queued_in = live_ticket(leader)
if queued_in then return { 'QUEUED', queued_in } end
local pending = redis.call('HGET', k.player_proposal, leader)
if pending then
  local proposal = load_proposal(k, pending)
  return { 'QUEUED', proposal and proposal.world or world }
end
local own = redis.call('HGET', k.player_party, leader)
if own then return { 'IN_PARTY', own } end
local cooling = cooling_until(k, leader, now)
if cooling then return { 'COOLING_DOWN', tostring(cooling - now) } end
for _, p in ipairs(invited) do
  if live_ticket(p) or redis.call('HEXISTS', k.player_party, p) == 1
      or redis.call('HEXISTS', k.player_proposal, p) == 1 or cooling_until(k, p, now) then
    return { 'BUSY', p }
  end
end
if presence == '1' and not is_present(KEYS[2], leader, now) then
  return { 'ABSENT', '' }
end
local rating = ''
if mode == 'rating' then
  local stored = redis.call('HMGET', KEYS[3], world .. '|' .. leader, '*|' .. leader)
  local r = tonumber(stored[1]) or tonumber(stored[2]) or tonumber(claimed) or tonumber(default_rating)
  if not r then return { 'NO_RATING', '' } end
  if r < min_rating or r > max_rating then return { 'BAD_RATING', num(r) } end
  rating = num(r)
end

-- All checks passed: from here on the script only writes.
local seq = redis.call('HINCRBY', k.counters, 'party', 1)
local id = string.format('%s.%x-%x', world, now, seq)
local members = { { p = leader, j = 1, r = rating, d = data } }
for i, p in ipairs(invited) do
  members[i + 1] = { p = p, j = 0, r = '', d = '' }
end
local party = {
  id = id, world = world, leader = leader, state = 'ASSEMBLING', expires = now + ttl,
  members = members,
}
save_party(k, party)
redis.call('ZADD', k.party_expiry, party.expires, id)
redis.call('HSET', k.player_party, leader, id)
add_note(k, invited, party_update(party), now)
return { 'CREATED', cjson.encode(party_view(party)) }
