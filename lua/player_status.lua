-- player_status.lua: where a player stands: queued (alone or with a party),
-- assembling a party, matched or idle.
--
-- KEYS[1]  tickets        HASH ticket -> ticket
-- KEYS[2]  player_match   HASH player -> id of the player's latest match
-- KEYS[3]  matches        HASH match id -> match record JSON
-- KEYS[4]  match_expiry   ZSET match id -> expiry ms
-- KEYS[5]  parties        HASH party id -> party JSON (see _tickets.lua)
-- KEYS[6]  player_party   HASH player -> party id
-- KEYS[7]  proposals      HASH match id -> proposal JSON (see _proposals.lua)
-- KEYS[8]  player_proposal HASH player -> match id of a pending proposal
-- KEYS[9..] for every configured world, in ARGV order: queue, rate and
--           ratings (three keys per world)
--
-- ARGV[1]  player id
-- ARGV[2]  statistics window ms
-- ARGV[3..] configured world names
--
-- Reply: { "QUEUED", world, position, queue_size, window_players, window_span_ms,
--            rating, wait_ms, party_json }   (rating "" in FIFO worlds; the
--            party's aggregate for a party; party_json "" for a solo ticket)
--      | { "PARTY", party_json }   (assembling: see _tickets.lua party_view)
--      | { "PROPOSED", proposal_json }   (a ready check awaits answers: see
--            _proposals.lua proposal_view)
--      | { "MATCHED", match_json }
--      | { "IDLE" }
-- A waiting ticket or party wins over an older match (the player joined
-- again); a ticket past its deadline is not waiting any more.
local FIXED_KEYS = 8
local player = ARGV[1]
local window = int_arg(ARGV[2])
local worlds = #ARGV - 2
if player == nil or player == '' then return fail('player id is empty') end
if window == nil then return fail('window must be an integer >= 0') end
if worlds < 1 or #KEYS ~= FIXED_KEYS + 3 * worlds then return fail('world keys do not match world names') end
local now = now_ms()

-- The ticket `id` if it waits in a configured world: its status reply.
local function queued(id, party)
  local ticket = redis.call('HGET', KEYS[1], id)
  local world, seq, joined, deadline = decode_ticket(ticket or '')
  if not ticket or not deadline or deadline <= now then return nil end
  for i = 1, worlds do
    if ARGV[2 + i] == world then
      local base = FIXED_KEYS + 3 * (i - 1)
      local queue, rate, ratings = KEYS[base + 1], KEYS[base + 2], KEYS[base + 3]
      local rank = redis.call('ZRANK', queue, id)
      if rank then
        local wp, ws = wait_stats(rate, now, window)
        local rating = redis.call('ZSCORE', ratings, rating_member(seq, id)) or ''
        return { 'QUEUED', world, rank + 1, redis.call('ZCARD', queue), wp, ws, rating, now - joined, party }
      end
    end
  end
  return nil
end

local pending = redis.call('HGET', KEYS[8], player)
local proposal = pending and redis.call('HGET', KEYS[7], pending)
if proposal then
  return { 'PROPOSED', proposal_view(cjson.decode(proposal)) }
end
local solo = queued(player, '')
if solo then return solo end
local party_id = redis.call('HGET', KEYS[6], player)
if party_id then
  local raw = redis.call('HGET', KEYS[5], party_id)
  if raw then
    local party = cjson.decode(raw)
    local view = cjson.encode(party_view(party))
    if party.state == 'ASSEMBLING' then
      return { 'PARTY', view }
    end
    local status = queued(PARTY_MARK .. party_id, view)
    if status then return status end
  end
end
local match_id = redis.call('HGET', KEYS[2], player)
if match_id then
  -- The sweep deletes expired records in batches; never show one past its time.
  local expires = tonumber(redis.call('ZSCORE', KEYS[4], match_id))
  local record = redis.call('HGET', KEYS[3], match_id)
  if record and expires and expires > now then
    return { 'MATCHED', record }
  end
end
return { 'IDLE' }
