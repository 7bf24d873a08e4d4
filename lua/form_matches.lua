-- form_matches.lua: the matcher's step for one world, in one atomic call.
-- Expired tickets are removed first and, in a world that requires presence,
-- players without a live connection are removed instead of matched.
--   FIFO:   every complete match of exactly N seats, oldest first (a party
--           whole, in the oldest match it fits; see _matching.lua).
--   rating: up to `max_anchors` due anchors, oldest first, each matched with
--           the nearest tickets within its window (see _rated.lua).
-- With teams, each match's tickets are packed into balanced teams
-- (_teams.lua). A partial match is never removed. Each match is recorded
-- durably (record, player pointers, expiry, one outbox entry) before anyone
-- is notified.
--
-- KEYS[1]  queue          ZSET ticket -> seq (this world)
-- KEYS[2]  deadlines      ZSET ticket -> ticket deadline ms (this world)
-- KEYS[3]  rate           HASH match rate statistics (this world)
-- KEYS[4]  tickets        HASH ticket -> ticket
-- KEYS[5]  matches        HASH match id -> match record JSON
-- KEYS[6]  match_expiry   ZSET match id -> expiry ms
-- KEYS[7]  player_match   HASH player -> id of the player's latest match
-- KEYS[8]  outbox         ZSET notification id -> due ms
-- KEYS[9]  match_seq      STRING counter for match ids
-- KEYS[10] presence       ZSET player -> until when they have a live connection (ms)
-- KEYS[11] ratings        ZSET "<seq>:<player>" -> rating (rated worlds; this world)
-- KEYS[12] due            ZSET ticket -> next attempt as an anchor, ms (rated worlds)
-- KEYS[13..17] the party block: parties, party_expiry, player_party, notes,
--          counters (see _tickets.lua)
-- KEYS[18..21] the proposal block: proposals, proposal_expiry,
--          player_proposal, cooldowns (see _proposals.lua)
--
-- ARGV[1]  world name
-- ARGV[2]  seats per match N (>= 2)
-- ARGV[3]  match record lifetime ms (> 0)
-- ARGV[4]  FIFO: most groups to form in this call (0 = all);
--          rating: most anchors to try in this call (> 0)
-- ARGV[5]  rate statistics window ms
-- ARGV[6]  the world requires presence: "1" or "0"
-- ARGV[7]  matching mode: "fifo" or "rating"
-- ARGV[8..12] rated worlds: base window, widening per second, maximum window,
--          relax after ms, retry an anchor after ms ("" for fifo)
-- ARGV[13] teams per match (>= 1, divides N)
-- ARGV[14..16] rated worlds with teams: balance window base, widening per
--          second and maximum ("" otherwise)
-- ARGV[17] ready check: acceptance time limit ms (0 = none)
-- ARGV[18] ready check: cool-down ms for who declines or does not answer
--
-- Reply: { queue_size_after, expired_removed, absent_removed, more_due,
--          proposed, match_json... }
--   proposed: matches made proposals (a ready check; their records follow
--   only once everyone accepts)
--   expired_removed: tickets past their deadline removed first (TICKET_EXPIRED)
--   absent_removed: players without a live connection removed (TICKET_REMOVED)
--   more_due: 1 when more may be matched right now (call again): a rated
--   world has more anchors due, or a scan or sweep was cut short

if #KEYS ~= 21 then return fail('expected 21 keys') end
local world = ARGV[1]
local seats = int_arg(ARGV[2])
local teams = int_arg(ARGV[13])
local accept_ms, cooldown_ms = int_arg(ARGV[17]), int_arg(ARGV[18])
local match_ttl = int_arg(ARGV[3])
local limit = int_arg(ARGV[4])
local window = int_arg(ARGV[5])
local presence = ARGV[6]
local mode = ARGV[7]
if world == nil or world == '' then return fail('world is empty') end
if seats == nil or seats < 2 then return fail('seats must be an integer >= 2') end
if teams == nil or teams < 1 or seats % teams ~= 0 then return fail('teams must divide the seats') end
if match_ttl == nil or match_ttl == 0 then return fail('match lifetime must be > 0') end
if limit == nil then return fail('limit must be an integer >= 0') end
if window == nil then return fail('window must be an integer >= 0') end
if presence ~= '0' and presence ~= '1' then return fail('presence must be 0 or 1') end
if accept_ms == nil or cooldown_ms == nil then return fail('ready check times must be integers >= 0') end
if mode ~= 'fifo' and mode ~= 'rating' then return fail('mode must be fifo or rating') end
local rules = nil
if mode == 'rating' then
  rules = rated_rules(ARGV[8], ARGV[9], ARGV[10], ARGV[11], ARGV[12], ARGV[14], ARGV[15], ARGV[16])
  if not rules then return fail('bad rating rules') end
  if limit == 0 then return fail('rated worlds need a limit of anchors > 0') end
end

local k = {
  queue = KEYS[1], deadlines = KEYS[2], rate = KEYS[3], tickets = KEYS[4],
  matches = KEYS[5], match_expiry = KEYS[6], player_match = KEYS[7],
  outbox = KEYS[8], match_seq = KEYS[9], presence = KEYS[10],
  ratings = KEYS[11], due = KEYS[12], parties = KEYS[13], party_expiry = KEYS[14],
  player_party = KEYS[15], notes = KEYS[16], counters = KEYS[17], proposals = KEYS[18],
  proposal_expiry = KEYS[19], player_proposal = KEYS[20], cooldowns = KEYS[21],
}
if accept_ms > 0 then k.accept = { ms = accept_ms, cooldown = cooldown_ms } end
local now = now_ms()
local records, ids, expired, removed, more
if rules then
  records, ids, expired, removed, more = form_rated(k, world, seats, teams, rules, limit, match_ttl, now, window, presence == '1')
else
  records, ids, expired, removed, more = form_matches(k, world, seats, teams, limit, match_ttl, now, window, presence == '1')
end

local reply = { redis.call('ZCARD', KEYS[1]), expired, removed, more and 1 or 0, k.proposed or 0 }
for i, r in ipairs(records) do
  reply[i + 5] = r
end
return reply
