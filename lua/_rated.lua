-- _rated.lua: rated worlds (see docs/rules.md). A match is formed around an
-- anchor ticket; every ticket's rating (a party's: its aggregate) lies
-- within the anchor's window min(base + per_sec * wait, max) of the
-- anchor's rating, where wait is the anchor's own wait (so the window never
-- resets when others join); past `relax_ms` the anchor takes the nearest
-- tickets, whatever their rating. With teams, the team averages may differ
-- by at most the balance window, which widens with the anchor's wait the
-- same way (and is lifted at `relax_ms` too).
-- rules (cfg.rules, see _config.lua): { base, per_sec, max, relax_ms,
-- retry_ms, balance = { base, per_sec, max, relax_ms } or nil }.

-- The anchor's window after waiting `wait_ms`; nil means no limit (relaxed).
local function rated_window(rules, wait_ms)
  if wait_ms >= rules.relax_ms then return nil end
  local w = rules.base + rules.per_sec * wait_ms / 1000
  if w > rules.max then w = rules.max end
  return w
end

-- Up to `fetch` tickets on each side of rating `r` within `w` (nil = no
-- limit), merged nearest first; equally near ones oldest first. Returns an
-- array of { member, rating, distance }.
local function nearest(ratings_key, r, w, fetch)
  local lo = w and num(r - w) or '-inf'
  local hi = w and num(r + w) or '+inf'
  local at = num(r)
  local below = redis.call('ZREVRANGEBYSCORE', ratings_key, '(' .. at, lo, 'WITHSCORES', 'LIMIT', 0, fetch)
  local above = redis.call('ZRANGEBYSCORE', ratings_key, at, hi, 'WITHSCORES', 'LIMIT', 0, fetch)
  local out, n = {}, 0
  local function add(list, reversed_ties)
    local first = n + 1
    for i = 1, #list, 2 do
      local rating = tonumber(list[i + 1])
      n = n + 1
      out[n] = { list[i], rating, math.abs(rating - r) }
    end
    if reversed_ties and #list == 2 * fetch then
      -- The farthest group of equal ratings may be cut short, and a reverse
      -- range lists ties newest first: read that group again oldest first.
      local edge = out[n][2]
      while n >= first and out[n][2] == edge do
        out[n] = nil
        n = n - 1
      end
      local group = redis.call('ZRANGEBYSCORE', ratings_key, num(edge), num(edge), 'WITHSCORES', 'LIMIT', 0, fetch)
      for i = 1, #group, 2 do
        n = n + 1
        out[n] = { group[i], edge, math.abs(edge - r) }
      end
    end
  end
  add(below, true)
  add(above, false)
  -- Members start with the zero-padded sequence: comparing them compares age.
  table.sort(out, function(a, b)
    if a[3] ~= b[3] then return a[3] < b[3] end
    return a[1] < b[1]
  end)
  return out
end

-- Whether an anchor of rating `r` that has waited `wait_ms` can find
-- `seats_needed` more seats within its window at all, counting each other
-- ticket there as at most `ticket_seats` seats: one ZCOUNT (O(log N))
-- instead of an attempt's range reads, so a join into a sparse window
-- stays cheap. The anchor's own ratings entry is counted and taken off.
-- True only means a match may form (counted tickets may be expired, absent
-- or not fit).
local function rated_may_match(ctx, r, wait_ms, seats_needed, ticket_seats)
  local w = rated_window(ctx.cfg.rules, wait_ms)
  if not w then return true end
  local others = redis.call('ZCOUNT', ctx.k.ratings, num(r - w), num(r + w)) - 1
  return others * ticket_seats >= seats_needed
end

-- A solo rated ticket as ticket_info describes it, from its ratings entry
-- alone; its data is read when the match is recorded (data = nil).
local function rated_solo(t, rating)
  return { ticket = t, size = 1, players = { t }, ratings = { rating }, sum = rating, rating = rating }
end

-- When a ticket tried (or joined) at `now` is due again: a fifth early, so
-- a matcher tick that comes a little early (ticks are one retry apart) still
-- finds it due and it is tried every tick, never every other one.
local function next_due(rules, now)
  return now + rules.retry_ms - math.floor(rules.retry_ms / 5)
end

-- Queues `ticket` to be tried as an anchor again after the retry delay.
local function retry_later(ctx, ticket)
  redis.call('ZADD', ctx.k.due, next_due(ctx.cfg.rules, ctx.now), ticket)
end

-- The anchor's state: { seq, rating, joined, data, info } read from its
-- ticket and ratings entry, or nil when it waits no more (its due entry is
-- dropped).
local function read_anchor(ctx, anchor)
  local k = ctx.k
  local _, seq, joined = waiting_ticket(k, anchor)
  local r = seq and tonumber(redis.call('ZSCORE', k.ratings, rating_member(seq, anchor)))
  if not r then
    redis.call('ZREM', k.due, anchor)
    return nil
  end
  return { seq = seq, rating = r, joined = joined }
end

-- One attempt to form a match of cfg.seats seats in cfg.teams teams around
-- `anchor` (a ticket id): the nearest tickets within the anchor's window
-- that fit whole (a party is never split; the team packing must stay
-- possible), or, when taking the nearest first strands the match, the
-- nearest set that fills it (fill_exactly); then, with teams, a balance
-- check. Returns the tickets' infos (see ticket_info), in queue order,
-- after taking them out of the ratings and due ZSETs; or nil when no match
-- can be formed yet (the anchor is then due again after retry_ms). In a
-- world that requires presence, tickets with a player without a live
-- connection met on the way are removed (TICKET_REMOVED), counted in
-- ctx.removed. `known` ({ seq, rating, joined, data }, optional): the
-- anchor's state when the caller has just written it (a join), which spares
-- reading it back.
local function rated_attempt(ctx, anchor, known)
  local k, cfg, now = ctx.k, ctx.cfg, ctx.now
  local rules, seats, teams = cfg.rules, cfg.seats, cfg.teams
  local state = known or read_anchor(ctx, anchor)
  if not state then return nil end
  local r = state.rating
  local anchor_member = rating_member(state.seq, anchor)
  local a
  if is_party_ticket(anchor) then
    a = ticket_info(ctx, anchor, r)
    if not a then
      redis.call('ZREM', k.due, anchor)
      return nil
    end
  else
    a = rated_solo(anchor, r)
    a.data = { state.data or ticket_data(ctx, anchor) }
  end
  if cfg.presence and not all_present(k.presence, a.players, now) then
    remove_tickets(ctx, { anchor }, 'G')
    ctx.removed = (ctx.removed or 0) + 1
    return nil
  end
  local wait = now - (state.joined or now)
  local w = rated_window(rules, wait)
  local cap = seats / teams
  local need = seats - a.size
  local remaining = need
  local candidates = nearest(k.ratings, r, w, remaining + 8)
  local items, members, gone = { a }, { anchor_member }, {}
  -- Every candidate that could take part, nearest first, for fill_exactly.
  local pool, pool_members = {}, {}
  for _, c in ipairs(candidates) do
    if remaining == 0 then break end
    local member = c[1]
    if member ~= anchor_member then
      local t = member_ticket(member)
      -- A solo ticket is all in its ratings entry: no read until recorded.
      local info
      if is_party_ticket(t) then
        info = ticket_info(ctx, t, c[2])
      else
        info = rated_solo(t, c[2])
      end
      if info and cfg.presence and not all_present(k.presence, info.players, now) then
        gone[#gone + 1] = t
      elseif info and info.size <= need then
        pool[#pool + 1] = info
        pool_members[#pool] = member
        if info.size <= remaining then
          items[#items + 1] = info
          if teams == 1 or can_pack(items, teams, cap) then
            members[#members + 1] = member
            remaining = remaining - info.size
          else
            items[#items] = nil
          end
        end
      end
    end
  end
  if #gone > 0 then
    remove_tickets(ctx, gone, 'G')
    ctx.removed = (ctx.removed or 0) + #gone
  end
  if remaining > 0 then
    local picked = fill_exactly(a, pool, { need = need, teams = teams, cap = cap })
    if picked then
      items, members = { a }, { anchor_member }
      for i, j in ipairs(picked) do
        items[i + 1] = pool[j]
        members[i + 1] = pool_members[j]
      end
      remaining = 0
    end
  end
  if remaining > 0 then
    retry_later(ctx, anchor)
    return nil
  end
  if teams > 1 then
    local assign, sums = pack_teams(items, teams, cap)
    local bw = rules.balance and rated_window(rules.balance, wait)
    if not assign or (bw and sums_spread(sums) / cap > bw) then
      retry_later(ctx, anchor)
      return nil
    end
  end
  local tickets = {}
  for i, it in ipairs(items) do tickets[i] = it.ticket end
  redis.call('ZREM', k.ratings, unpack(members))
  redis.call('ZREM', k.due, unpack(tickets))
  -- Queue order: members sort by their padded sequence.
  local by_member = {}
  for i, m in ipairs(members) do by_member[m] = items[i] end
  table.sort(members)
  for i, m in ipairs(members) do items[i] = by_member[m] end
  return items
end

-- Records the groups rated attempts formed (lists of ticket infos): solo
-- tickets in one team without a ready check take the fast path, anything
-- else record_groups.
local function record_rated(ctx, groups)
  if #groups == 0 then return {}, {} end
  local simple = ctx.cfg.teams == 1 and not ctx.cfg.accept
  for _, items in ipairs(groups) do
    for _, it in ipairs(items) do
      if it.party then simple = false end
    end
  end
  if not simple then
    return record_groups(ctx, groups, true)
  end
  local players, ratings, n = {}, {}, 0
  for _, items in ipairs(groups) do
    for _, it in ipairs(items) do
      n = n + 1
      players[n] = it.ticket
      ratings[it.ticket] = it.ratings[1]
    end
  end
  return record_matches(ctx, players, #groups, { ratings = ratings })
end

-- The matcher's step for a rated world: removes expired tickets first, then
-- tries up to `max_anchors` due anchors (oldest first) and records every
-- match formed. Returns the records (JSON), their outbox ids, expired and
-- absent counts, and whether more anchors are due right now.
local function form_rated(ctx, max_anchors)
  local k = ctx.k
  local expired, more_expired = sweep_expired(ctx, MATCH_SWEEP_LIMIT)
  if more_expired then
    return {}, {}, #expired, 0, true
  end
  local due = redis.call('ZRANGEBYSCORE', k.due, '-inf', ctx.now, 'LIMIT', 0, max_anchors)
  local order = {}
  for i, t in ipairs(due) do
    order[i] = { tonumber(redis.call('ZSCORE', k.queue, t)) or 0, t }
  end
  table.sort(order, function(a, b) return a[1] < b[1] end)
  local groups = {}
  for _, entry in ipairs(order) do
    local anchor = entry[2]
    -- An anchor may already have been taken into an earlier group.
    if redis.call('ZSCORE', k.due, anchor) then
      local items = rated_attempt(ctx, anchor)
      if items then groups[#groups + 1] = items end
    end
  end
  local records, ids = record_rated(ctx, groups)
  return records, ids, #expired, ctx.removed or 0, #due == max_anchors
end
