-- rating_set.lua: write a player's rating to the trusted ratings store
-- (PUT /v1/ratings/{playerId}, for privileged callers only). A ticket
-- already waiting keeps the rating it joined with.
--
-- KEYS[1]  player_ratings HASH "<world>|<player>" or "*|<player>" -> rating
--
-- ARGV[1]  world name, or "*" for every world
-- ARGV[2]  player id
-- ARGV[3]  rating
-- ARGV[4], ARGV[5] the lowest and highest rating accepted
--
-- Reply: { previous_rating_or_empty }

if #KEYS ~= 1 then return fail('expected 1 key') end
local world, player = ARGV[1], ARGV[2]
local rating, lo, hi = tonumber(ARGV[3]), tonumber(ARGV[4]), tonumber(ARGV[5])
if world == nil or world == '' or string.find(world, '|', 1, true) then return fail('bad world') end
if player == nil or player == '' then return fail('player id is empty') end
if not lo or not hi or lo > hi then return fail('bad rating range') end
if not rating or rating ~= rating or rating < lo or rating > hi then return fail('rating out of range') end
local field = world .. '|' .. player
local previous = redis.call('HGET', KEYS[1], field) or ''
redis.call('HSET', KEYS[1], field, num(rating))
return { previous }
