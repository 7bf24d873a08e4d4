-- rating_set.lua: write a player's rating to the trusted ratings store
-- (PUT /v1/ratings/{playerId}, for privileged callers only). A ticket
-- already waiting keeps the rating it joined with. An entry that results
-- have updated ("<value> <mean> <uncertainty> <games>[ <volatility>]", see
-- _lifecycle.lua stored_rating_text) keeps its uncertainty, games and volatility:
-- the new rating becomes both its value and its mean.
--
-- KEYS   player_ratings
-- ARGV   for_world  world name, or "*" for every world
-- ARGV   player     the player id
-- ARGV   rating     the rating
-- ARGV   min        the lowest rating accepted
-- ARGV   max        the highest rating accepted
--
-- Reply: { previous_rating_or_empty }

local world, player = args.for_world, args.player
local rating, lo, hi = tonumber(args.rating), tonumber(args.min), tonumber(args.max)
if world == '' or string.find(world, '|', 1, true) then return fail('bad world') end
if player == '' then return fail('player id is empty') end
if not lo or not hi or lo > hi then return fail('bad rating range') end
if not rating or rating ~= rating or rating < lo or rating > hi then return fail('rating out of range') end
local field = world .. '|' .. player
local previous = redis.call('HGET', k.player_ratings, field) or ''
local tail = string.match(previous, '^%S+ %S+( %S+ %d+.*)$')
redis.call('HSET', k.player_ratings, field, num(rating) .. (tail and (' ' .. num(rating) .. tail) or ''))
return { string.match(previous, '^%S*') }
