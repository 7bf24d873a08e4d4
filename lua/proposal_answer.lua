-- proposal_answer.lua: a participant accepts or declines a match proposal
-- (a ready check; see _proposals.lua). When the last one accepts, the match
-- becomes final (record, pointers, one outbox entry: MATCH_FOUND as for any
-- match); an accept before that tells everyone the progress
-- (MATCH_ACCEPT_PROGRESS); a decline cancels the proposal (MATCH_CANCELLED:
-- the decliner's ticket is removed, a whole party with it, everyone else is
-- requeued at their original place). A proposal past its time is cancelled
-- as timed out instead.
--
-- KEYS[1]  tickets        HASH ticket -> ticket
-- KEYS[2]  matches        HASH match id -> match record JSON
-- KEYS[3]  match_expiry   ZSET match id -> expiry ms
-- KEYS[4]  player_match   HASH player -> id of the player's latest match
-- KEYS[5]  outbox         ZSET notification id -> due ms
-- KEYS[6..10] the party block: parties, party_expiry, player_party, notes,
--          counters (see _tickets.lua)
-- KEYS[11..14] the proposal block: proposals, proposal_expiry,
--          player_proposal, cooldowns (see _proposals.lua)
-- KEYS[15..19] the proposal's world: queue, deadlines, rate, ratings, due
--
-- ARGV[1]  player id
-- ARGV[2]  match id
-- ARGV[3]  "1" accept, "0" decline
-- ARGV[4]  the world the caller expects the proposal in (from a read)
-- ARGV[5]  match record lifetime ms (> 0)
-- ARGV[6]  statistics window ms
--
-- Reply: { status, a, b }
--   "ACCEPTED", accepted, total   accepted; others have still to answer
--   "ALREADY", accepted, total    had accepted already; nothing written
--   "MATCHED", record JSON, outbox id   the last accept: the match is final
--   "CANCELLED", requeued, 0      declined: the proposal is cancelled and
--                                 `requeued` tickets went back to the queue
--   "EXPIRED", requeued, 0        the time had run out: cancelled as TIMEOUT
--   "NOT_FOUND", "", 0            no such proposal in that world, or the
--                                 player is not in it; nothing written

if #KEYS ~= 19 then return fail('expected 19 keys') end
local player, id, answer, world = ARGV[1], ARGV[2], ARGV[3], ARGV[4]
local match_ttl, window = int_arg(ARGV[5]), int_arg(ARGV[6])
if player == nil or player == '' then return fail('player id is empty') end
if id == nil or id == '' then return fail('match id is empty') end
if answer ~= '0' and answer ~= '1' then return fail('answer must be 1 (accept) or 0 (decline)') end
if world == nil or world == '' then return fail('world is empty') end
if match_ttl == nil or match_ttl == 0 then return fail('match lifetime must be > 0') end
if window == nil then return fail('window must be an integer >= 0') end
local k = {
  tickets = KEYS[1], matches = KEYS[2], match_expiry = KEYS[3], player_match = KEYS[4],
  outbox = KEYS[5], parties = KEYS[6], party_expiry = KEYS[7], player_party = KEYS[8],
  notes = KEYS[9], counters = KEYS[10], proposals = KEYS[11], proposal_expiry = KEYS[12],
  player_proposal = KEYS[13], cooldowns = KEYS[14], queue = KEYS[15], deadlines = KEYS[16],
  rate = KEYS[17], ratings = KEYS[18], due = KEYS[19],
}
local now = now_ms()
local p = load_proposal(k, id)
if not p or p.world ~= world then return { 'NOT_FOUND', '', 0 } end
local member = false
for _, q in ipairs(p.players) do
  if q == player then member = true end
end
if not member then return { 'NOT_FOUND', '', 0 } end
if p.acceptBy <= now then
  return { 'EXPIRED', cancel_proposal(k, k, p, 'TIMEOUT', not_accepted(p), now), 0 }
end
if answer == '0' then
  return { 'CANCELLED', cancel_proposal(k, k, p, 'DECLINED', { [player] = true }, now), 0 }
end
for _, q in ipairs(p.accepted) do
  if q == player then return { 'ALREADY', #p.accepted, #p.players } end
end
local accepted = {}
for i, q in ipairs(p.accepted) do accepted[i] = q end
accepted[#accepted + 1] = player
p.accepted = accepted
if #accepted == #p.players then
  local record, outbox_id = finalize_proposal(k, p, match_ttl, window, now)
  return { 'MATCHED', record, outbox_id }
end
redis.call('HSET', k.proposals, id, cjson.encode(p))
add_note(k, p.players, cjson.encode({
  type = 'MATCH_ACCEPT_PROGRESS', matchId = id, worldType = p.world,
  accepted = #accepted, total = #p.players,
}), now)
return { 'ACCEPTED', #accepted, #p.players }
