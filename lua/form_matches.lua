-- form_matches.lua: the matcher's step for one world, in one atomic call.
-- Expired tickets are removed first and, in a world that requires presence,
-- players without a live connection are removed instead of matched.
--   FIFO:   every complete match of exactly N seats, oldest first (a party
--           whole, in the oldest match it fits; see _matching.lua).
--   rating: up to `limit` due anchors, oldest first, each matched with the
--           nearest tickets within its window (see _rated.lua).
-- With teams, each match's tickets are packed into balanced teams
-- (_teams.lua). A partial match is never removed. Each match is recorded
-- durably (record, the players' states, expiry, one outbox entry) before
-- anyone is notified.
--
-- KEYS   players match_seq matches match_expiry match_lifecycle outbox notes counters
-- KEYS   parties party_expiry proposals proposal_expiry presence matcher_asleep
-- KEYS   backfills backfill_expiry block_pairs block_counts
-- WORLDS the world to match
-- ARGV   limit    FIFO: most matches to form in this call (0 = all);
--                 rating: most anchors to try in this call (> 0)
-- ARGV   config   the world's configuration (see _config.lua)
--
-- Open backfills (_backfill.lua) are served first, oldest first, at most
-- BACKFILLS_PER_CALL per call.
--
-- Reply: { queue_size_after, expired_removed, absent_removed, more_due,
--          proposed, backfills_filled, match_json... }
--   expired_removed: tickets past their deadline removed first (TICKET_EXPIRED)
--   absent_removed: players without a live connection removed (TICKET_REMOVED)
--   more_due: 1 when more may be matched right now (call again): a rated
--   world has more anchors due, or a scan or sweep was cut short
--   proposed: matches made proposals (a ready check; their records follow
--   only once everyone accepts)
--   backfills_filled: backfills that took players (each one fill)

local limit = int_arg(args.limit)
local cfg, bad_config = Config.world_config(args.config)
if limit == nil then return fail('limit must be an integer >= 0') end
if not cfg then return fail(bad_config) end
if cfg.anchored and limit == 0 then
  return fail('worlds matched around anchors (rated, regions, attributes) need a limit of anchors > 0')
end

local ctx = { k = k, world = worlds[1], now = now_ms(), cfg = cfg, world_of = world_of }
-- Running matches' open seats first.
local backfilled = #Backfill.serve_backfills(ctx, Backfill.BACKFILLS_PER_CALL)
local removed_serving = ctx.removed or 0
ctx.removed = nil
local records, expired, removed, more, _
if cfg.anchored then
  records, _, expired, removed, more = Rated.form_rated(ctx, limit)
else
  records, _, expired, removed, more = Fifo.form_matches(ctx, { max_groups = limit })
end

local reply = {
  redis.call('ZCARD', k.queue), expired, removed_serving + removed, more and 1 or 0, ctx.proposed or 0,
  backfilled,
}
for i, r in ipairs(records) do
  reply[i + 6] = r
end
return reply
