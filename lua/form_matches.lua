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
-- ARGV[2]  FIFO: most groups to form in this call (0 = all);
--          rating: most anchors to try in this call (> 0)
-- ARGV[3]  the world's configuration (see _config.lua)
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
local limit = int_arg(ARGV[2])
local cfg, bad_config = world_config(ARGV[3])
if world == nil or world == '' then return fail('world is empty') end
if limit == nil then return fail('limit must be an integer >= 0') end
if not cfg then return fail(bad_config) end
local rules = cfg.rules
if rules and limit == 0 then return fail('rated worlds need a limit of anchors > 0') end
local seats, teams, match_ttl, window = cfg.seats, cfg.teams, cfg.match_ttl, cfg.window

local k = {
  queue = KEYS[1], deadlines = KEYS[2], rate = KEYS[3], tickets = KEYS[4],
  matches = KEYS[5], match_expiry = KEYS[6], player_match = KEYS[7],
  outbox = KEYS[8], match_seq = KEYS[9], presence = KEYS[10],
  ratings = KEYS[11], due = KEYS[12], parties = KEYS[13], party_expiry = KEYS[14],
  player_party = KEYS[15], notes = KEYS[16], counters = KEYS[17], proposals = KEYS[18],
  proposal_expiry = KEYS[19], player_proposal = KEYS[20], cooldowns = KEYS[21],
  accept = cfg.accept,
}
local now = now_ms()
local records, ids, expired, removed, more
if rules then
  records, ids, expired, removed, more = form_rated(k, world, seats, teams, rules, limit, match_ttl, now, window, cfg.presence)
else
  records, ids, expired, removed, more = form_matches(k, world, seats, teams, limit, match_ttl, now, window, cfg.presence)
end

local reply = { redis.call('ZCARD', KEYS[1]), expired, removed, more and 1 or 0, k.proposed or 0 }
for i, r in ipairs(records) do
  reply[i + 5] = r
end
return reply
