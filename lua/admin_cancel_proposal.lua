-- admin_cancel_proposal.lua: an operator cancels a match proposal (a ready
-- check; POST /v1/admin/proposals/{matchId}/cancel). Nobody is at fault:
-- every ticket goes back to its queue at its original place, as the others'
-- do after a decline or a timeout (see _proposals.lua), nobody cools down,
-- and every participant is told (MATCH_CANCELLED, reason OPERATOR,
-- requeued true). A proposal that is gone (answered, timed out, cancelled)
-- is left alone: a repeat finds nothing to cancel.
--
-- KEYS   players outbox notes counters parties party_expiry proposals
-- KEYS   proposal_expiry matcher_asleep backfills backfill_expiry
-- WORLDS every configured world (the proposal's is found by its name)
-- ARGV   match_id  the proposal's match id
--
-- Reply: a status, then exactly that status's fields:
--   CANCELLED, world, requeued   requeued: tickets back in the queue
--   NOT_FOUND                    no open proposal has that id; nothing written

local id = args.match_id
if id == '' then return fail('match id is empty') end
if not has(k, 'proposals') then return { 'NOT_FOUND' } end
local p = Proposals.load_proposal(k, id)
if not p then return { 'NOT_FOUND' } end
local ctx = { k = world_of(p.world), world = p.world, now = now_ms(), world_of = world_of }
return { 'CANCELLED', p.world, Proposals.cancel_proposal(ctx, k, p, 'OPERATOR', {}) }
