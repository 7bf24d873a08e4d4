-- form_matches.lua: form every complete group of exactly N players a world's queue
-- allows, oldest first, in one atomic step (the matcher's per-world tick).
-- A partial group is never removed. Each match is recorded durably (record,
-- player pointers, expiry, outbox entries) before anyone is notified.
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
--
-- ARGV[1]  world name
-- ARGV[2]  team size N (>= 2)
-- ARGV[3]  match record lifetime ms (> 0)
-- ARGV[4]  most groups to form in this call (0 = all)
-- ARGV[5]  rate statistics window ms
--
-- Reply: { queue_size_after, match_json... }

if #KEYS ~= 9 then return fail('expected 9 keys') end
local world = ARGV[1]
local team = int_arg(ARGV[2])
local match_ttl = int_arg(ARGV[3])
local max_groups = int_arg(ARGV[4])
local window = int_arg(ARGV[5])
if world == nil or world == '' then return fail('world is empty') end
if team == nil or team < 2 then return fail('team size must be an integer >= 2') end
if match_ttl == nil or match_ttl == 0 then return fail('match lifetime must be > 0') end
if max_groups == nil then return fail('max groups must be an integer >= 0') end
if window == nil then return fail('window must be an integer >= 0') end

local records = form_matches({
  queue = KEYS[1], deadlines = KEYS[2], rate = KEYS[3], tickets = KEYS[4],
  matches = KEYS[5], match_expiry = KEYS[6], player_match = KEYS[7],
  outbox = KEYS[8], match_seq = KEYS[9],
}, world, team, max_groups, match_ttl, now_ms(), window)

local reply = { redis.call('ZCARD', KEYS[1]) }
for _, r in ipairs(records) do
  reply[#reply + 1] = r
end
return reply
