-- form_matches.lua: form every complete group of exactly N players a world's
-- queue allows, oldest first, in one atomic step (the matcher's per-world
-- tick). Expired tickets are removed first and, in a world that requires
-- presence, players without a live connection are removed instead of
-- matched (see _lib.lua form_matches). A partial group is never removed.
-- Each match is recorded durably (record, player pointers, expiry, one outbox
-- entry) before anyone is notified.
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
--
-- ARGV[1]  world name
-- ARGV[2]  team size N (>= 2)
-- ARGV[3]  match record lifetime ms (> 0)
-- ARGV[4]  most groups to form in this call (0 = all)
-- ARGV[5]  rate statistics window ms
-- ARGV[6]  the world requires presence: "1" or "0"
--
-- Reply: { queue_size_after, expired_removed, absent_removed, match_json... }
--   expired_removed: tickets past their deadline removed first (TICKET_EXPIRED)
--   absent_removed: players without a live connection removed (TICKET_REMOVED)

if #KEYS ~= 10 then return fail('expected 10 keys') end
local world = ARGV[1]
local team = int_arg(ARGV[2])
local match_ttl = int_arg(ARGV[3])
local max_groups = int_arg(ARGV[4])
local window = int_arg(ARGV[5])
local presence = ARGV[6]
if world == nil or world == '' then return fail('world is empty') end
if team == nil or team < 2 then return fail('team size must be an integer >= 2') end
if match_ttl == nil or match_ttl == 0 then return fail('match lifetime must be > 0') end
if max_groups == nil then return fail('max groups must be an integer >= 0') end
if window == nil then return fail('window must be an integer >= 0') end
if presence ~= '0' and presence ~= '1' then return fail('presence must be 0 or 1') end

local records, _, expired, removed = form_matches({
  queue = KEYS[1], deadlines = KEYS[2], rate = KEYS[3], tickets = KEYS[4],
  matches = KEYS[5], match_expiry = KEYS[6], player_match = KEYS[7],
  outbox = KEYS[8], match_seq = KEYS[9], presence = KEYS[10],
}, world, team, max_groups, match_ttl, now_ms(), window, presence == '1')

local reply = { redis.call('ZCARD', KEYS[1]), expired, removed }
for i, r in ipairs(records) do
  reply[i + 3] = r
end
return reply
