-- proposal_answer.lua: a participant accepts or declines a match proposal
-- (a ready check; see _proposals.lua). When the last one accepts, the match
-- becomes final (record, the players' states, one outbox entry: MATCH_FOUND
-- as for any match); an accept before that tells everyone the progress
-- (MATCH_ACCEPT_PROGRESS); a decline cancels the proposal (MATCH_CANCELLED:
-- the decliner's ticket is removed, a whole party with it, everyone else is
-- requeued at their original place). A proposal past its time is cancelled
-- as timed out instead.
--
-- KEYS   players matches match_expiry match_lifecycle outbox notes counters parties
-- KEYS   party_expiry proposals proposal_expiry matcher_asleep backfills
-- KEYS   backfill_expiry
-- WORLDS the proposal's world (from a read of the proposal)
-- ARGV   player    the player id
-- ARGV   match_id  the proposal's match id
-- ARGV   answer    "1" accept, "0" decline
-- ARGV   config    the world's configuration (see _config.lua)
--
-- Reply: a status, then exactly that status's fields:
--   ACCEPTED, accepted, total    accepted; others have still to answer
--   ALREADY, accepted, total     had accepted already; nothing written
--   MATCHED, record_json, outbox_id   the last accept: the match is final
--   BACKFILLED, record_json, lifecycle, outbox_id   the last accept of a
--                                backfill proposal: its players joined the
--                                running match (see _backfill_store.lua)
--   CANCELLED, requeued          declined (or, for a backfill proposal, the
--                                backfill ended): the proposal is cancelled
--                                and `requeued` tickets went back to the queue
--   EXPIRED, requeued            the time had run out: cancelled as TIMEOUT
--   NOT_FOUND                    no such proposal in that world, or the
--                                player is not in it; nothing written

local player, id, answer = args.player, args.match_id, args.answer
local cfg, bad_config = Config.world_config(args.config)
if player == '' then return fail('player id is empty') end
if id == '' then return fail('match id is empty') end
if answer ~= '0' and answer ~= '1' then return fail('answer must be 1 (accept) or 0 (decline)') end
if not cfg then return fail(bad_config) end
local ctx = { k = k, world = worlds[1], now = now_ms(), cfg = cfg, world_of = world_of }
local p = Proposals.load_proposal(k, id)
if not p or p.world ~= ctx.world then return { 'NOT_FOUND' } end
local member = false
for _, q in ipairs(p.players) do
  if q == player then member = true end
end
if not member then return { 'NOT_FOUND' } end
if p.acceptBy <= ctx.now then
  return { 'EXPIRED', Proposals.cancel_proposal(ctx, k, p, 'TIMEOUT', Proposals.not_accepted(p)) }
end
if answer == '0' then
  return { 'CANCELLED', Proposals.cancel_proposal(ctx, k, p, 'DECLINED', { [player] = true }) }
end
for _, q in ipairs(p.accepted) do
  if q == player then return { 'ALREADY', #p.accepted, #p.players } end
end
local accepted = {}
for i, q in ipairs(p.accepted) do accepted[i] = q end
accepted[#accepted + 1] = player
p.accepted = accepted
if #accepted == #p.players then
  if p.backfill then
    -- New players of a running match: they take the seats held for them,
    -- unless the backfill ended meanwhile.
    Proposals.drop_proposal(k, p)
    local outbox_id = BackfillStore.finalize_backfill(ctx, p)
    if not outbox_id then return { 'CANCELLED', Proposals.cancel_proposal(ctx, k, p, 'BACKFILL_ENDED', {}) } end
    return {
      'BACKFILLED', redis.call('HGET', k.matches, p.backfill),
      Lifecycle.encode_lifecycle(Lifecycle.load_lifecycle(k, p.backfill)), outbox_id,
    }
  end
  local record, outbox_id = Proposals.finalize_proposal(ctx, p)
  return { 'MATCHED', record, outbox_id }
end
redis.call('HSET', k.proposals, id, cjson.encode(p))
add_note(k, p.players, cjson.encode({
  type = 'MATCH_ACCEPT_PROGRESS', matchId = id, worldType = p.world,
  accepted = #accepted, total = #p.players,
}), ctx.now)
return { 'ACCEPTED', #accepted, #p.players }
