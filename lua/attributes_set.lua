-- attributes_set.lua: replace a player's trusted attributes in the trusted
-- attribute store (PUT /v1/attributes/{playerId}, for privileged callers
-- only). A ticket already waiting keeps the attributes it joined with; the
-- next join reads these (see _match_rules.lua joining).
--
-- KEYS   player_attributes
-- ARGV   player      the player id
-- ARGV   attributes  the trusted attributes as the store encodes them
--                    (`name=value;...`, validated there); "" clears them
--
-- Reply: { previous_attributes_or_empty }

local player, attributes = args.player, args.attributes
if player == '' then return fail('player id is empty') end
if attributes ~= '' then
  for pair in string.gmatch(attributes .. ';', '([^;]*);') do
    if not string.match(pair, '^[a-z][A-Za-z0-9_]*=[^|=]+$') then return fail('bad attributes: ' .. pair) end
  end
end
local previous = redis.call('HGET', k.player_attributes, player) or ''
if attributes == '' then
  redis.call('HDEL', k.player_attributes, player)
else
  redis.call('HSET', k.player_attributes, player, attributes)
end
return { previous }
