-- _proposals.lua: ready checks. In a world with an acceptance time limit a
-- formed match is first a PROPOSAL: its tickets leave the queue but keep
-- their sequence, join time and deadline in the proposal, and every
-- participant is asked (MATCH_PROPOSED). When all accept, the match record
-- is written and MATCH_FOUND goes out as for any match. When anyone
-- declines, leaves or does not answer in time, the proposal is cancelled:
-- the tickets of those who declined or did not answer are removed (a whole
-- party with them; the players may get a cool-down), every other ticket
-- goes back to its queue at its original sequence, its deadline extended by
-- the time it spent in the proposal, and is due as an anchor at once.
--
-- Keys (in `k`): proposals (HASH match id -> proposal JSON), proposal_expiry
-- (ZSET match id -> accept-by ms), player_proposal (HASH player -> match
-- id), cooldowns (ZSET player -> may join again from ms). k.accept, set by
-- the matching scripts of a world with a ready check: { ms = time limit,
-- cooldown = ms }.
--
-- A proposal (cjson): { id, world, created, acceptBy, cooldown, record (the
-- match record JSON, written as is when all accept), players (participants
-- in record order), accepted (players who accepted), tickets = [ { t
-- (ticket id), seq, joined, deadline, d (ticket data, solo tickets), r
-- (rating, "" unrated), p (players) } ] }.

-- Takes tickets out of the queue for a proposal, keeping what requeueing
-- needs; parties stay (state PROPOSED). Returns the entries.
local function lift_tickets(k, world, items)
  local entries, ids = {}, {}
  for i, it in ipairs(items) do
    local _, seq, joined, deadline, data = decode_ticket(redis.call('HGET', k.tickets, it.ticket) or '')
    entries[i] = {
      t = it.ticket, seq = seq, joined = joined, deadline = deadline, d = data or '',
      r = it.rating and num(it.rating) or '', p = it.players,
    }
    ids[i] = it.ticket
    if it.party then
      local party = load_party(k, it.party)
      if party then
        local field = queued_parties_field(world)
        if redis.call('HINCRBY', k.counters, field, -1) <= 0 then
          redis.call('HDEL', k.counters, field)
        end
        party.state = 'PROPOSED'
        save_party(k, party)
      end
    end
  end
  drop_rated(k, ids)
  chunked('ZREM', k.queue, ids, 1)
  chunked('ZREM', k.deadlines, ids, 1)
  chunked('HDEL', k.tickets, ids, 1)
  return entries
end

-- Stores one proposal per formed match and asks its players. `records`
-- and `players` per match; `entries` the lifted tickets per match.
local function create_proposals(k, world, ids, records, players, entries, now)
  for g, id in ipairs(ids) do
    local accept_by = now + k.accept.ms
    local proposal = {
      id = id, world = world, created = now, acceptBy = accept_by, cooldown = k.accept.cooldown,
      record = records[g], players = players[g], accepted = {}, tickets = entries[g],
    }
    -- cjson would write an empty `accepted` as {}; it is read back with
    -- ipairs, which treats both alike.
    redis.call('HSET', k.proposals, id, cjson.encode(proposal))
    redis.call('ZADD', k.proposal_expiry, accept_by, id)
    for _, p in ipairs(players[g]) do
      redis.call('HSET', k.player_proposal, p, id)
    end
    add_note(k, players[g], cjson.encode({
      type = 'MATCH_PROPOSED', matchId = id, worldType = world, acceptBy = accept_by,
      participants = players[g],
    }), now)
  end
end

function load_proposal(k, id)
  local raw = redis.call('HGET', k.proposals, id)
  if not raw then return nil end
  return cjson.decode(raw)
end

-- The proposal as its players see it (my-status).
local function proposal_view(p)
  return cjson.encode({
    matchId = p.id, worldType = p.world, acceptBy = p.acceptBy, participants = p.players,
    accepted = #p.accepted > 0 and p.accepted or nil,
  })
end

local function drop_proposal(k, p)
  redis.call('HDEL', k.proposals, p.id)
  redis.call('ZREM', k.proposal_expiry, p.id)
  for _, player in ipairs(p.players) do
    if redis.call('HGET', k.player_proposal, player) == p.id then
      redis.call('HDEL', k.player_proposal, player)
    end
  end
end

-- Everyone accepted: the match becomes final, exactly as a match formed
-- without a ready check (record, pointers, expiry, one outbox entry,
-- statistics). Returns the record and its outbox id.
local function finalize_proposal(k, p, match_ttl, window, now)
  drop_proposal(k, p)
  for _, e in ipairs(p.tickets) do
    if is_party_ticket(e.t) then dissolve_party(k, string.sub(e.t, 2)) end
  end
  redis.call('HSET', k.matches, p.id, p.record)
  redis.call('ZADD', k.match_expiry, now + match_ttl, p.id)
  for _, player in ipairs(p.players) do
    redis.call('HSET', k.player_match, player, p.id)
  end
  outbox_add(k.outbox, { 'M|' .. p.id }, 1, now)
  record_rate(k.rate, now, window, #p.players)
  return p.record, 'M|' .. p.id
end

-- Cancels a proposal (`reason`: DECLINED, LEFT or TIMEOUT). The tickets
-- holding a player in `out` (a set) are removed, whole parties with them,
-- and those players cool down; every other ticket is requeued at its
-- original sequence with its deadline extended by the time spent in the
-- proposal, due as an anchor at once. `wk` holds the proposal world's
-- queue, deadlines, ratings and due (nil if the world is gone: nothing is
-- requeued). Returns how many tickets were requeued.
function cancel_proposal(k, wk, p, reason, out, now)
  drop_proposal(k, p)
  local extension = now - p.created
  local requeued, removed, kept = {}, {}, 0
  for _, e in ipairs(p.tickets) do
    local leaving = wk == nil
    for _, player in ipairs(e.p) do
      if out[player] then leaving = true end
    end
    local party_id = is_party_ticket(e.t) and string.sub(e.t, 2) or nil
    if leaving then
      if party_id then dissolve_party(k, party_id) end
      for _, player in ipairs(e.p) do removed[#removed + 1] = player end
    else
      kept = kept + 1
      local deadline = e.deadline + extension
      redis.call('ZADD', wk.queue, e.seq, e.t)
      redis.call('ZADD', wk.deadlines, deadline, e.t)
      redis.call('HSET', k.tickets, e.t, encode_ticket(p.world, e.seq, e.joined, deadline, e.d))
      if e.r ~= '' then
        redis.call('ZADD', wk.ratings, e.r, rating_member(e.seq, e.t))
        redis.call('ZADD', wk.due, now, e.t)
      end
      if party_id then
        local party = load_party(k, party_id)
        if party then
          party.state = 'QUEUED'
          party.expires = deadline
          save_party(k, party)
          redis.call('HINCRBY', k.counters, queued_parties_field(p.world), 1)
        end
      end
      for _, player in ipairs(e.p) do requeued[#requeued + 1] = player end
    end
  end
  if p.cooldown > 0 then
    for player in pairs(out) do
      redis.call('ZADD', k.cooldowns, now + p.cooldown, player)
    end
  end
  local function tell(players, back)
    add_note(k, players, cjson.encode({
      type = 'MATCH_CANCELLED', matchId = p.id, worldType = p.world, reason = reason, requeued = back,
    }), now)
  end
  tell(requeued, true)
  tell(removed, false)
  return kept
end

-- The players of a proposal who have not accepted, as a set.
local function not_accepted(p)
  local accepted, out = {}, {}
  for _, player in ipairs(p.accepted) do accepted[player] = true end
  for _, player in ipairs(p.players) do
    if not accepted[player] then out[player] = true end
  end
  return out
end

-- Cancels up to `limit` proposals whose time ran out (TIMEOUT: those who
-- did not answer are removed). `world_of(name)` gives a world's keys.
-- Returns how many.
local function sweep_proposals(k, limit, now, world_of)
  local ids = redis.call('ZRANGEBYSCORE', k.proposal_expiry, '-inf', now, 'LIMIT', 0, limit)
  for _, id in ipairs(ids) do
    local p = load_proposal(k, id)
    if p then
      cancel_proposal(k, world_of(p.world), p, 'TIMEOUT', not_accepted(p), now)
    else
      redis.call('ZREM', k.proposal_expiry, id)
    end
  end
  return #ids
end

-- When `player` may join again (ms), or nil.
local function cooling_until(k, player, now)
  local until_ms = tonumber(redis.call('ZSCORE', k.cooldowns, player))
  if until_ms and until_ms > now then return until_ms end
  return nil
end
