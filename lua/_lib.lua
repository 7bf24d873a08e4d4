-- _lib.lua: helpers shared by the operation scripts.
--
-- This file is not a script of its own: the Rust crate prepends it to every
-- operation script at compile time (see shared/src/scripts.rs), so each script
-- stays a single EVALSHA with no cross-script calls.
--
-- Conventions every script follows:
--   * All keys arrive in KEYS and share the namespace hash tag, so a script runs
--     unchanged on a single node, on Redis Cluster and on ElastiCache Serverless.
--   * Every input is validated before the first write: Redis does not roll back a
--     script that fails half-way, so a late error would leave a partial write.
--   * Replies are flat arrays of strings and integers (never string-keyed tables,
--     which Redis turns into empty replies). Match records travel as JSON.
--   * Time is Redis server time (TIME), so Lambdas with skewed clocks agree.

-- unpack() of more than ~8000 values fails ("too many results to unpack"), so
-- variadic commands are issued in chunks of this many arguments.
local CHUNK = 4000

local function fail(msg)
  return redis.error_reply('ERR_ARG ' .. msg)
end

local function now_ms()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end

-- Parses a non-negative integer argument; nil when it is not one.
local function int_arg(v)
  local n = tonumber(v)
  if n == nil or n < 0 or n ~= math.floor(n) then
    return nil
  end
  return n
end

-- Runs `cmd key args...` in chunks. `args` is a flat array; `stride` keeps
-- field/value (or score/member) pairs together across chunk borders.
local function chunked(cmd, key, args, stride)
  local per = CHUNK - (CHUNK % stride)
  local n = #args
  local i = 1
  while i <= n do
    local last = math.min(i + per - 1, n)
    redis.call(cmd, key, unpack(args, i, last))
    i = last + 1
  end
end

-- A ticket is stored as "<world> <seq> <joined_ms> <deadline_ms> <data>" in
-- the tickets hash: world names contain no spaces (validated in Rust) and the
-- optional data JSON is everything after the fourth space.
local function encode_ticket(world, seq, joined, deadline, data)
  return world .. ' ' .. seq .. ' ' .. joined .. ' ' .. deadline .. ' ' .. data
end

local function decode_ticket(s)
  local world, seq, joined, deadline, data = string.match(s, '^(%S+) (%d+) (%d+) (%d+) (.*)$')
  return world, tonumber(seq), tonumber(joined), tonumber(deadline), data
end

-- Rated worlds keep two more ZSETs next to the queue: `ratings` holds
-- "<seq, 12 digits>:<ticket>" -> rating (the zero-padded sequence makes
-- equally rated tickets sort oldest first), and `due` holds ticket -> when it
-- is next tried as an anchor (ms). FIFO worlds leave both empty.
local SEQ_DIGITS = 12

local function rating_member(seq, ticket)
  return string.format('%012d', seq) .. ':' .. ticket
end

local function member_ticket(member)
  return string.sub(member, SEQ_DIGITS + 2)
end

-- Removes `tickets` (ticket ids) from a rated world's ratings and due ZSETs.
-- The ratings member needs each ticket's sequence, read from the queue.
local function drop_rated(k, tickets)
  if not k.ratings or #tickets == 0 then return end
  if redis.call('EXISTS', k.due) == 0 then return end
  local members = {}
  for i, t in ipairs(tickets) do
    local seq = tonumber(redis.call('ZSCORE', k.queue, t))
    if seq then members[#members + 1] = rating_member(seq, t) end
  end
  chunked('ZREM', k.due, tickets, 1)
  if #members > 0 then chunked('ZREM', k.ratings, members, 1) end
end

-- Match-rate statistics of one world, for wait estimates, in O(1): a HASH
-- with a two-bucket sliding window (as rate limiters use) of `window` ms.
-- Fields: start (ms the current bucket began), cur and prev (players matched
-- in the current and previous bucket) and first (ms of the first match
-- counted, so a young history is not averaged over the whole window).
-- Returns players matched within the last `window` ms (prev weighted by its
-- overlap) and the span they were matched over.
local function wait_stats(rate_key, now, window)
  local v = redis.call('HMGET', rate_key, 'start', 'cur', 'prev', 'first')
  local start, cur, prev, first = tonumber(v[1]), tonumber(v[2]) or 0, tonumber(v[3]) or 0, tonumber(v[4])
  if start == nil or first == nil or window == 0 then
    return 0, 0
  end
  if now >= start + 2 * window then
    return 0, 0
  end
  if now >= start + window then
    -- The current bucket has become the previous one.
    prev, cur, start = cur, 0, start + window
  end
  local overlap = 1 - (now - start) / window
  local players = math.floor(prev * overlap + cur)
  return players, math.min(window, now - math.max(first, now - window))
end

-- Adds `players` matched now to a world's rate statistics.
local function record_rate(rate_key, now, window, players)
  local v = redis.call('HMGET', rate_key, 'start', 'cur', 'prev', 'first')
  local start, cur, prev, first = tonumber(v[1]), tonumber(v[2]) or 0, tonumber(v[3]) or 0, tonumber(v[4])
  if start == nil or window == 0 or now >= start + 2 * window then
    start, cur, prev, first = now, 0, 0, now
  elseif now >= start + window then
    prev, cur, start = cur, 0, start + window
  end
  if first == nil or first < now - 2 * window then first = now end
  redis.call('HSET', rate_key, 'start', start, 'cur', cur + players, 'prev', prev, 'first', first)
end

-- Outbox entry ids. Only the scripts make them; Rust parses them
-- (shared/src/domain/notification.rs). Match ids and world names never
-- contain '|'; a player id is always last, so it may.
--   "M|<matchId>"           MATCH_FOUND to every participant of a match
--   "C|<matchId>|<conn>"    MATCH_FOUND again, to one connection that opened
--                           just after the match formed (the connect race)
--   "X|<world>|<player>"    TICKET_EXPIRED: the ticket outlived its lifetime
--   "G|<world>|<player>"    TICKET_REMOVED: the player had no live connection
--                           in a world that requires presence
-- The meta hash holds "<attempts>:<first_attempt_ms>:<in_flight>:<pending>",
-- written by the first claim (a new entry is only a ZADD, which keeps forming
-- matches cheap): <in_flight> is 1 from a claim until its settlement, and
-- <pending> lists the 1-based targets still to tell ("" = all).
local function outbox_add(outbox_key, ids, count, now)
  local zargs = {}
  for i = 1, count do
    zargs[2 * i - 1] = now
    zargs[2 * i] = ids[i]
  end
  if count > 0 then
    chunked('ZADD', outbox_key, zargs, 2)
  end
end

-- Connection registry. conns: HASH conn id -> "<registered_ms> <player>";
-- conn_expiry: ZSET conn id -> when the registration lapses without a
-- heartbeat; player_conns: HASH player -> space-separated conn ids (oldest
-- first; connection ids never contain spaces); presence: ZSET player -> the
-- latest expiry among the player's connections (a player is present while it
-- lies in the future).
local function decode_conn(v)
  if not v then return nil, nil end
  local born, player = string.match(v, '^(%d+) (.*)$')
  return player, tonumber(born)
end

-- Recomputes a player's presence from their remaining connections.
local function refresh_presence(k, player, ids)
  local latest = nil
  for _, id in ipairs(ids) do
    local e = tonumber(redis.call('ZSCORE', k.conn_expiry, id))
    if e and (latest == nil or e > latest) then latest = e end
  end
  if latest then
    redis.call('ZADD', k.presence, latest, player)
  else
    redis.call('ZREM', k.presence, player)
  end
end

local function is_present(presence_key, player, now)
  local until_ms = tonumber(redis.call('ZSCORE', presence_key, player))
  return until_ms ~= nil and until_ms > now
end

-- Removes a player's ticket from whichever configured world it waits in.
-- `world_keys(i)` gives that world's (queue, deadlines, ratings, due);
-- `worlds` the names. Returns the world the ticket was in, or '' when there
-- was none.
local function drop_ticket(tickets, player, worlds, world_keys)
  local ticket = redis.call('HGET', tickets, player)
  if not ticket then
    return ''
  end
  local world = decode_ticket(ticket)
  for i, name in ipairs(worlds) do
    if name == world then
      local queue, deadlines, ratings, due = world_keys(i)
      drop_rated({ queue = queue, ratings = ratings, due = due }, { player })
      redis.call('ZREM', queue, player)
      redis.call('ZREM', deadlines, player)
    end
  end
  redis.call('HDEL', tickets, player)
  return world or ''
end

-- Removes one connection; when it was the player's last one and
-- `remove_ticket` is set, the ticket goes too, so nobody is matched as a
-- ghost. k: conns, conn_expiry, player_conns, presence, tickets. Returns
-- player ('' if unknown), remaining connection count and the world of a
-- removed ticket ('' if none).
local function drop_connection(k, conn_id, remove_ticket, worlds, world_keys)
  local player = decode_conn(redis.call('HGET', k.conns, conn_id))
  redis.call('HDEL', k.conns, conn_id)
  redis.call('ZREM', k.conn_expiry, conn_id)
  if not player then
    return '', 0, ''
  end
  local kept = {}
  local list = redis.call('HGET', k.player_conns, player)
  if list then
    for id in string.gmatch(list, '%S+') do
      if id ~= conn_id then kept[#kept + 1] = id end
    end
  end
  refresh_presence(k, player, kept)
  if #kept > 0 then
    redis.call('HSET', k.player_conns, player, table.concat(kept, ' '))
    return player, #kept, ''
  end
  redis.call('HDEL', k.player_conns, player)
  local removed = ''
  if remove_ticket then
    removed = drop_ticket(k.tickets, player, worlds, world_keys)
  end
  return player, 0, removed
end

-- Removes up to `limit` of a world's expired tickets and queues a
-- TICKET_EXPIRED for each. Returns the expired players and whether the limit
-- was reached (more may remain). k: queue, deadlines, tickets, outbox.
local function sweep_expired(k, world, limit, now)
  local expired = redis.call('ZRANGEBYSCORE', k.deadlines, '-inf', now, 'LIMIT', 0, limit)
  local n = #expired
  if n == 0 then
    return expired, false
  end
  drop_rated(k, expired)
  chunked('ZREM', k.queue, expired, 1)
  chunked('ZREM', k.deadlines, expired, 1)
  chunked('HDEL', k.tickets, expired, 1)
  local ids = {}
  for i = 1, n do
    ids[i] = 'X|' .. world .. '|' .. expired[i]
  end
  outbox_add(k.outbox, ids, n, now)
  return expired, n >= limit
end

-- Expired tickets a match-forming call removes first, at most.
local MATCH_SWEEP_LIMIT = 1000

-- Picks up to `groups` groups of `team` players from the front of a FIFO
-- queue (oldest first). Without a presence requirement that is simply the
-- first groups * team members. With one, players without a live connection
-- are removed on the way (ticket dropped, TICKET_REMOVED queued) and the
-- next ones take their seats; the scan is bounded by `scan_limit` removals.
-- Returns the chosen players, in queue order, and how many were removed.
local function pick_fifo(k, world, team, groups, now, presence, scan_limit)
  local taken = groups * team
  if not presence then
    return redis.call('ZRANGE', k.queue, 0, taken - 1), 0
  end
  local chosen, n, removed, gone = {}, 0, 0, {}
  local offset = 0
  while n < taken do
    local batch = redis.call('ZRANGE', k.queue, offset, offset + (taken - n) - 1)
    if #batch == 0 then break end
    offset = offset + #batch
    for _, p in ipairs(batch) do
      if is_present(k.presence, p, now) then
        n = n + 1
        chosen[n] = p
      elseif removed < scan_limit then
        removed = removed + 1
        gone[removed] = p
      end
    end
    if removed >= scan_limit then break end
  end
  if removed > 0 then
    chunked('ZREM', k.queue, gone, 1)
    chunked('ZREM', k.deadlines, gone, 1)
    chunked('HDEL', k.tickets, gone, 1)
    local ids = {}
    for i = 1, removed do ids[i] = 'G|' .. world .. '|' .. gone[i] end
    outbox_add(k.outbox, ids, removed, now)
  end
  -- Only whole groups are matched; the rest keep waiting.
  local whole = math.floor(n / team) * team
  for i = whole + 1, n do chosen[i] = nil end
  return chosen, removed
end

-- A number as Redis and JSON should see it: integers without a fraction,
-- others with enough digits to round-trip.
local function num(x)
  if x == math.floor(x) and math.abs(x) < 1e15 then
    return string.format('%d', x)
  end
  return string.format('%.17g', x)
end

-- Records `groups` matches of `team` players each from `players` (queue
-- order within each group) durably before anyone is told: removes their
-- tickets, writes each match record, every player's pointer to it, its
-- expiry, ONE outbox entry per match and the world's recent-match
-- statistics. With `ratings` (player -> rating, rated worlds), each record
-- also carries the participants' ratings and the match's spread (max - min).
-- Returns the records as JSON strings and the outbox ids.
--
-- This runs for every instant match and for up to tens of thousands of
-- players per matcher tick, so it avoids per-player Redis calls and pattern
-- matching, and fills arrays with explicit indexes (# is O(log n) in Lua 5.1).
local function record_matches(k, world, team, players, groups, match_ttl, now, window, ratings)
  local taken = groups * team
  local data = {}
  local i = 1
  while i <= taken do
    local last = math.min(i + CHUNK - 1, taken)
    local part = redis.call('HMGET', k.tickets, unpack(players, i, last))
    for j = 1, last - i + 1 do
      local t = part[j]
      -- A ticket without data ends with the space before its (empty) data.
      if t and string.byte(t, -1) ~= 32 then
        local _, _, _, _, td = decode_ticket(t)
        data[i + j - 1] = td
      end
    end
    i = last + 1
  end
  chunked('ZREM', k.queue, players, 1)
  chunked('ZREM', k.deadlines, players, 1)
  chunked('HDEL', k.tickets, players, 1)

  local last_seq = redis.call('INCRBY', k.match_seq, groups)
  local first_seq = last_seq - groups + 1
  local records, ids, match_fields, expiry_args, pointer_args, outbox_args = {}, {}, {}, {}, {}, {}
  local expires = now + match_ttl
  local matched_at = string.format('%d', now)
  local id_prefix = string.format('%x-', now)
  local prefix = '","worldType":"' .. world .. '","participants":['
  -- Reused for every group: allocating two tables per match shows up at
  -- tens of thousands of matches per call.
  local names, extras, rated = {}, {}, {}
  for g = 0, groups - 1 do
    local id = id_prefix .. string.format('%x', first_seq + g)
    -- Built by hand so ticket data (already valid JSON) is embedded verbatim
    -- instead of round-tripping through cjson, which would lose precision of
    -- large numbers and turn empty arrays into objects.
    local n_extras = 0
    local base = g * team
    for m = 1, team do
      local idx = base + m
      local p = players[idx]
      -- Most ids need no escaping; cjson (which also escapes '/') only for the rest.
      local quoted
      if string.find(p, '[%c"\\/\128-\255]') then
        quoted = cjson.encode(p)
      else
        quoted = '"' .. p .. '"'
      end
      names[m] = quoted
      local d = data[idx]
      if d and d ~= '' then
        n_extras = n_extras + 1
        extras[n_extras] = quoted .. ':' .. d
      end
      pointer_args[2 * idx - 1] = p
      pointer_args[2 * idx] = id
      if ratings then
        rated[m] = quoted .. ':' .. num(ratings[p])
      end
    end
    local record = '{"matchId":"' .. id .. prefix .. table.concat(names, ',', 1, team) .. '],"matchedAt":' .. matched_at
    if n_extras > 0 then
      record = record .. ',"playerData":{' .. table.concat(extras, ',', 1, n_extras) .. '}'
    end
    if ratings then
      local lo, hi = math.huge, -math.huge
      for m = 1, team do
        local r = ratings[players[base + m]]
        if r < lo then lo = r end
        if r > hi then hi = r end
      end
      record = record .. ',"ratings":{' .. table.concat(rated, ',', 1, team) .. '},"spread":' .. num(hi - lo)
    end
    record = record .. '}'
    records[g + 1] = record
    ids[g + 1] = 'M|' .. id
    match_fields[2 * g + 1] = id
    match_fields[2 * g + 2] = record
    expiry_args[2 * g + 1] = expires
    expiry_args[2 * g + 2] = id
    outbox_args[2 * g + 1] = now
    outbox_args[2 * g + 2] = ids[g + 1]
  end
  chunked('HSET', k.matches, match_fields, 2)
  chunked('ZADD', k.match_expiry, expiry_args, 2)
  chunked('HSET', k.player_match, pointer_args, 2)
  chunked('ZADD', k.outbox, outbox_args, 2)
  record_rate(k.rate, now, window, taken)
  return records, ids
end

-- Forms up to `max_groups` (0 = all) complete groups of `team` players from
-- the front (oldest first) of a world's queue. Expired tickets are removed
-- first (TICKET_EXPIRED), so nobody is matched past their deadline; with
-- `presence`, players without a live connection are removed (TICKET_REMOVED)
-- and never matched. A partial group is never taken. Returns the match
-- records (JSON), their outbox ids, and how many tickets were removed as
-- expired and as absent.
--
-- k: queue, deadlines, tickets, matches, match_expiry, player_match, outbox,
--    rate, match_seq, presence (key names).
local function form_matches(k, world, team, max_groups, match_ttl, now, window, presence)
  local expired, more_expired = sweep_expired(k, world, MATCH_SWEEP_LIMIT, now)
  if more_expired then
    -- A backlog of expired tickets: leave it to the sweep's next calls
    -- rather than risk matching one of them.
    return {}, {}, #expired, 0
  end
  local size = redis.call('ZCARD', k.queue)
  local groups = math.floor(size / team)
  if max_groups > 0 and groups > max_groups then
    groups = max_groups
  end
  if groups == 0 then
    return {}, {}, #expired, 0
  end
  local players, removed = pick_fifo(k, world, team, groups, now, presence, MATCH_SWEEP_LIMIT)
  groups = math.floor(#players / team)
  if groups == 0 then
    return {}, {}, #expired, removed
  end
  local records, ids = record_matches(k, world, team, players, groups, match_ttl, now, window)
  return records, ids, #expired, removed
end

-- ---------------------------------------------------------------- rated ---
-- Rated worlds (see docs/rules.md): a match is formed around an anchor
-- ticket; every member's rating lies within the anchor's window
-- min(base + per_sec * wait, max) of the anchor's rating, where wait is the
-- anchor's own wait (so the window never resets when others join); past
-- `relax_ms` the anchor takes the nearest players, whatever their rating.
-- rules: { base, per_sec, max, relax_ms, retry_ms } (numbers).

-- Parses a rated world's rules from five ARGV strings; nil when malformed.
local function rated_rules(base, per_sec, max, relax_ms, retry_ms)
  local r = {
    base = tonumber(base), per_sec = tonumber(per_sec), max = tonumber(max),
    relax_ms = int_arg(relax_ms), retry_ms = int_arg(retry_ms),
  }
  if not r.base or r.base < 0 or not r.per_sec or r.per_sec < 0 or not r.max
      or r.max < r.base or not r.relax_ms or not r.retry_ms or r.retry_ms == 0 then
    return nil
  end
  return r
end

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
  local below = redis.call('ZREVRANGEBYSCORE', ratings_key, '(' .. num(r), lo, 'WITHSCORES', 'LIMIT', 0, fetch)
  local above = redis.call('ZRANGEBYSCORE', ratings_key, num(r), hi, 'WITHSCORES', 'LIMIT', 0, fetch)
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

-- Removes tickets from a rated world (all its structures) and queues a
-- notification id `prefix .. ticket` for each when `prefix` is given.
local function remove_rated(k, members, tickets, world, prefix, now)
  if #tickets == 0 then return end
  chunked('ZREM', k.ratings, members, 1)
  chunked('ZREM', k.due, tickets, 1)
  chunked('ZREM', k.queue, tickets, 1)
  chunked('ZREM', k.deadlines, tickets, 1)
  chunked('HDEL', k.tickets, tickets, 1)
  if prefix then
    local ids = {}
    for i, t in ipairs(tickets) do ids[i] = prefix .. world .. '|' .. t end
    outbox_add(k.outbox, ids, #ids, now)
  end
end

-- One attempt to form a match around `anchor` (a ticket id). Returns the
-- group (ticket ids, oldest first) and their ratings, after taking them out
-- of the ratings and due ZSETs, or nil when not enough players are within
-- the anchor's window (the anchor is then due again after retry_ms). With
-- `presence`, players without a live connection met on the way are removed
-- (TICKET_REMOVED); the count is added to `stats.removed`.
local function rated_attempt(k, world, team, rules, anchor, now, presence, stats)
  local seq = tonumber(redis.call('ZSCORE', k.queue, anchor))
  local ticket = redis.call('HGET', k.tickets, anchor)
  if not seq or not ticket then
    redis.call('ZREM', k.due, anchor)
    return nil
  end
  local anchor_member = rating_member(seq, anchor)
  local r = tonumber(redis.call('ZSCORE', k.ratings, anchor_member))
  if not r then
    redis.call('ZREM', k.due, anchor)
    return nil
  end
  if presence and not is_present(k.presence, anchor, now) then
    remove_rated(k, { anchor_member }, { anchor }, world, 'G|', now)
    stats.removed = stats.removed + 1
    return nil
  end
  local _, _, joined = decode_ticket(ticket)
  local w = rated_window(rules, now - (joined or now))
  local need = team - 1
  local candidates = nearest(k.ratings, r, w, need + 8)
  local group, members, ratings = { anchor }, { anchor_member }, { [anchor] = r }
  local gone_m, gone_t = {}, {}
  for _, c in ipairs(candidates) do
    if #group > need then break end
    local member = c[1]
    if member ~= anchor_member then
      local t = member_ticket(member)
      if presence and not is_present(k.presence, t, now) then
        gone_m[#gone_m + 1] = member
        gone_t[#gone_t + 1] = t
      else
        group[#group + 1] = t
        members[#members + 1] = member
        ratings[t] = c[2]
      end
    end
  end
  if #gone_t > 0 then
    remove_rated(k, gone_m, gone_t, world, 'G|', now)
    stats.removed = stats.removed + #gone_t
  end
  if #group < team then
    redis.call('ZADD', k.due, now + rules.retry_ms, anchor)
    return nil
  end
  redis.call('ZREM', k.ratings, unpack(members))
  redis.call('ZREM', k.due, unpack(group))
  -- Participants in queue order: members sort by their padded sequence.
  table.sort(members)
  for i, m in ipairs(members) do group[i] = member_ticket(m) end
  return group, ratings
end

-- The matcher's step for a rated world: removes expired tickets first, then
-- tries up to `max_anchors` due anchors (oldest first) and records every
-- match formed. Returns the records (JSON), their outbox ids, expired and
-- absent counts, and whether more anchors are due right now.
--
-- k: as form_matches, plus ratings and due.
local function form_rated(k, world, team, rules, max_anchors, match_ttl, now, window, presence)
  local expired, more_expired = sweep_expired(k, world, MATCH_SWEEP_LIMIT, now)
  if more_expired then
    return {}, {}, #expired, 0, true
  end
  local due = redis.call('ZRANGEBYSCORE', k.due, '-inf', now, 'LIMIT', 0, max_anchors)
  local order = {}
  for i, t in ipairs(due) do
    order[i] = { tonumber(redis.call('ZSCORE', k.queue, t)) or 0, t }
  end
  table.sort(order, function(a, b) return a[1] < b[1] end)
  local players, ratings, groups = {}, {}, 0
  local stats = { removed = 0 }
  for _, entry in ipairs(order) do
    local anchor = entry[2]
    -- An anchor may already have been taken into an earlier group.
    if redis.call('ZSCORE', k.due, anchor) then
      local group, group_ratings = rated_attempt(k, world, team, rules, anchor, now, presence, stats)
      if group then
        for _, t in ipairs(group) do
          players[#players + 1] = t
          ratings[t] = group_ratings[t]
        end
        groups = groups + 1
      end
    end
  end
  local more = #due == max_anchors
  if groups == 0 then
    return {}, {}, #expired, stats.removed, more
  end
  local records, ids = record_matches(k, world, team, players, groups, match_ttl, now, window, ratings)
  return records, ids, #expired, stats.removed, more
end
