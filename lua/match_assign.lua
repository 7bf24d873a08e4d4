-- match_assign.lua: the studio's allocator assigns a server to a match
-- (POST /v1/matching/matches/{matchId}/assignment): stored with the match,
-- once, kept for the game's length, and announced to every participant (MATCH_ASSIGNED, one "A|<match>"
-- outbox entry; each player hears only their own token). An identical
-- assignment again changes nothing; a different one is refused.
--
-- KEYS   matches match_expiry match_lifecycle outbox matcher_asleep
-- ARGV   match_id    the match id
-- ARGV   assignment  the assignment, canonical JSON (the store builds it:
--                    { connection, properties?, players? = { player -> { token? } } })
-- ARGV   game_ttl    ms the record lives at least from the assignment on (a
--                    game outlasts the time a record is kept for a match
--                    nobody plays)
--
-- Reply: a status, then exactly that status's fields:
--   ASSIGNED, record_json, lifecycle   stored and announced
--   ALREADY, record_json, lifecycle    the same assignment was stored already
--   CONFLICT, lifecycle                another assignment is stored
--   FINISHED, lifecycle                the match has its result already
--   NOT_PARTICIPANT, player            a token for a player not in the match
--   NOT_FOUND                          no such match, or its record expired
-- (lifecycle: see _lifecycle.lua)

local id, assignment = args.match_id, args.assignment
if id == '' then return fail('match id is empty') end
if string.find(assignment, '\n', 1, true) then return fail('assignment must be one line') end
local ok, decoded = pcall(cjson.decode, assignment)
if not ok or type(decoded) ~= 'table' or type(decoded.connection) ~= 'string' or decoded.connection == '' then
  return fail('assignment must be a JSON object with a connection')
end
local game_ttl = tonumber(args.game_ttl)
if not game_ttl or game_ttl < 1 or game_ttl ~= math.floor(game_ttl) then
  return fail('game ttl must be an integer >= 1')
end
local now = now_ms()
local record = Lifecycle.live_record(k, id, now)
if not record then return { 'NOT_FOUND' } end
if type(decoded.players) == 'table' then
  local participants = {}
  for _, p in ipairs(cjson.decode(record).participants) do participants[p] = true end
  for p in pairs(decoded.players) do
    if not participants[p] then return { 'NOT_PARTICIPANT', p } end
  end
end
local life = Lifecycle.load_lifecycle(k, id)
if life.result ~= '' then return { 'FINISHED', Lifecycle.encode_lifecycle(life) } end
if life.assignment ~= '' then
  if life.assignment == assignment then return { 'ALREADY', record, Lifecycle.encode_lifecycle(life) } end
  return { 'CONFLICT', Lifecycle.encode_lifecycle(life) }
end
life.state, life.since, life.assignment = 'ASSIGNED', now, assignment
Lifecycle.save_lifecycle(k, id, life)
redis.call('ZADD', k.match_expiry, 'GT', now + game_ttl, id)
outbox_add(k.outbox, { 'A|' .. id }, 1, now)
return { 'ASSIGNED', record, Lifecycle.encode_lifecycle(life) }
