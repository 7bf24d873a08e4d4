-- form_matches.lua: the matcher's step for one world, in one atomic call.
-- Expired tickets are removed first and, in a world that requires presence,
-- players without a live connection are removed instead of matched.
--   FIFO:   every complete group of exactly N players, oldest first.
--   rating: up to `max_anchors` due anchors, oldest first, each matched with
--           the nearest players within its window (see _lib.lua, "rated").
-- A partial group is never removed. Each match is recorded durably (record,
-- player pointers, expiry, one outbox entry) before anyone is notified.
--
-- KEYS[1]  queue          ZSET player -> seq (this world)
-- KEYS[2]  deadlines      ZSET player -> ticket deadline ms (this world)
-- KEYS[3]  rate           HASH match rate statistics (this world)
-- KEYS[4]  tickets        HASH player -> ticket
-- KEYS[5]  matches        HASH match id -> match record JSON
-- KEYS[6]  match_expiry   ZSET match id -> expiry ms
-- KEYS[7]  player_match   HASH player -> id of the player's latest match
-- KEYS[8]  outbox         ZSET notification id -> due ms
-- KEYS[9]  match_seq      STRING counter for match ids
-- KEYS[10] presence       ZSET player -> until when they have a live connection (ms)
-- KEYS[11] ratings        ZSET "<seq>:<player>" -> rating (rated worlds; this world)
-- KEYS[12] due            ZSET player -> next attempt as an anchor, ms (rated worlds)
--
-- ARGV[1]  world name
-- ARGV[2]  team size N (>= 2)
-- ARGV[3]  match record lifetime ms (> 0)
-- ARGV[4]  FIFO: most groups to form in this call (0 = all);
--          rating: most anchors to try in this call (> 0)
-- ARGV[5]  rate statistics window ms
-- ARGV[6]  the world requires presence: "1" or "0"
-- ARGV[7]  matching mode: "fifo" or "rating"
-- ARGV[8..12] rated worlds: base window, widening per second, maximum window,
--          relax after ms, retry an anchor after ms ("" for fifo)
--
-- Reply: { queue_size_after, expired_removed, absent_removed, more_due, match_json... }
--   expired_removed: tickets past their deadline removed first (TICKET_EXPIRED)
--   absent_removed: players without a live connection removed (TICKET_REMOVED)
--   more_due: 1 when a rated world has more anchors due right now (call again)

if #KEYS ~= 12 then return fail('expected 12 keys') end
local world = ARGV[1]
local team = int_arg(ARGV[2])
local match_ttl = int_arg(ARGV[3])
local limit = int_arg(ARGV[4])
local window = int_arg(ARGV[5])
local presence = ARGV[6]
local mode = ARGV[7]
if world == nil or world == '' then return fail('world is empty') end
if team == nil or team < 2 then return fail('team size must be an integer >= 2') end
if match_ttl == nil or match_ttl == 0 then return fail('match lifetime must be > 0') end
if limit == nil then return fail('limit must be an integer >= 0') end
if window == nil then return fail('window must be an integer >= 0') end
if presence ~= '0' and presence ~= '1' then return fail('presence must be 0 or 1') end
if mode ~= 'fifo' and mode ~= 'rating' then return fail('mode must be fifo or rating') end
local rules = nil
if mode == 'rating' then
  rules = rated_rules(ARGV[8], ARGV[9], ARGV[10], ARGV[11], ARGV[12])
  if not rules then return fail('bad rating rules') end
  if limit == 0 then return fail('rated worlds need a limit of anchors > 0') end
end

local k = {
  queue = KEYS[1], deadlines = KEYS[2], rate = KEYS[3], tickets = KEYS[4],
  matches = KEYS[5], match_expiry = KEYS[6], player_match = KEYS[7],
  outbox = KEYS[8], match_seq = KEYS[9], presence = KEYS[10],
  ratings = KEYS[11], due = KEYS[12],
}
local now = now_ms()
local records, ids, expired, removed, more
if rules then
  records, ids, expired, removed, more = form_rated(k, world, team, rules, limit, match_ttl, now, window, presence == '1')
else
  records, ids, expired, removed = form_matches(k, world, team, limit, match_ttl, now, window, presence == '1')
end

local reply = { redis.call('ZCARD', KEYS[1]), expired, removed, more and 1 or 0 }
for i, r in ipairs(records) do
  reply[i + 4] = r
end
return reply
