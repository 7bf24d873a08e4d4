-- _outbox.lua: claiming outbox entries for delivery (outbox_claim.lua, and a
-- join that formed a match and delivers it at once). A claimed entry is
-- hidden for a lease (like a queue's visibility timeout): if the claimer
-- dies before settling it, the entry becomes due again and another matcher
-- delivers it (at-least-once; clients dedupe by match id).
--
-- k: outbox, outbox_meta, matches, match_lifecycle, notes, player_conns,
-- conns.
-- @include _lib _lifecycle _presence

local Outbox = {}
do

-- Claims the entries `ids` (all of them: the caller chose them) for
-- `opts.lease` ms and appends, per entry, to `reply` (a flat array holding
-- `n` values so far): id, attempts (including this one), age_ms (since the
-- first attempt, by this server's clock), payload (the match record JSON
-- for "M|", "C|", "A|", "R|", "B|" and "V|" entries, "" when it expired; the message
-- JSON for "N|" entries, "" when the note is gone; "" otherwise), lifecycle
-- (of a match's entries: see _lifecycle.lua; "" for others), event (1: the
-- event for the studio's allocator is still to send: an "M|" (formed),
-- "B|" (backfill filled) or "V|" (backfill lapsed: no targets) entry whose
-- pending targets are all, or include 0), target_count, then
-- (target_index, player, connections, young_connections) per target: the
-- players still to tell (1-based index among the entry's targets, for
-- settling), each with their space-separated connection ids and those
-- registered less than `opts.young` ms ago. A "C|" entry targets exactly
-- its one connection (none once that connection is gone).
-- Returns the new number of values in `reply`.
local function claim_entries(k, ids, opts, reply, n)
  local now, young = opts.now, opts.young
  local function put(v)
    n = n + 1
    reply[n] = v
  end
  -- A player's connections, and the young ones among them.
  local function connections_of(player, only)
    local all, fresh = {}, {}
    for id in string.gmatch(redis.call('HGET', k.player_conns, player) or '', '%S+') do
      if only == nil or id == only then
        all[#all + 1] = id
        local _, born = Presence.decode_conn(redis.call('HGET', k.conns, id))
        if born and born > now - young then fresh[#fresh + 1] = id end
      end
    end
    return table.concat(all, ' '), table.concat(fresh, ' ')
  end
  for _, id in ipairs(ids) do
    local meta = redis.call('HGET', k.outbox_meta, id) or ('0:' .. now .. ':0:')
    local attempts, first, pending = string.match(meta, '^(%d+):(%d+):%d:([%d,]*)$')
    attempts = (tonumber(attempts) or 0) + 1
    first = tonumber(first) or now
    pending = pending or ''
    redis.call('ZADD', k.outbox, now + opts.lease, id)
    redis.call('HSET', k.outbox_meta, id, attempts .. ':' .. first .. ':1:' .. pending)

    local wanted = nil
    if pending ~= '' then
      wanted = {}
      for i in string.gmatch(pending, '%d+') do wanted[tonumber(i)] = true end
    end
    local kind, ref, tail = string.match(id, '^(%u)|([^|]+)|?(.*)$')
    local payload, lifecycle, targets = '', '', {}
    local of_match = kind == 'M' or kind == 'C' or kind == 'A' or kind == 'R' or kind == 'B'
      or kind == 'V'
    local life = nil
    if of_match then
      payload = redis.call('HGET', k.matches, ref) or ''
      if payload ~= '' then
        life = Lifecycle.load_lifecycle(k, ref)
        lifecycle = Lifecycle.encode_lifecycle(life)
      end
    end
    if (kind == 'M' or kind == 'A' or kind == 'R' or kind == 'B') and payload ~= '' then
      local ok, record = pcall(cjson.decode, payload)
      if ok and type(record) == 'table' and type(record.participants) == 'table' then
        -- M and A: the players it formed with (a backfill comes after the
        -- assignment and tells its players itself); R: everyone, additions
        -- included; B: the players of that fill.
        local players = record.participants
        if kind == 'R' then players = Lifecycle.match_players(record, life) end
        if kind == 'B' then
          players = {}
          local fill = tonumber(tail)
          if life.additions ~= '' then
            for _, a in ipairs(cjson.decode(life.additions)) do
              if a.fill == fill then
                for _, p in ipairs(a.players) do players[#players + 1] = p end
              end
            end
          end
        end
        for i, p in ipairs(players) do
          if wanted == nil or wanted[i] then targets[#targets + 1] = { i, p } end
        end
      end
    elseif kind == 'C' then
      local player = Presence.decode_conn(redis.call('HGET', k.conns, tail))
      if player then targets[1] = { 1, player, tail } end
    elseif (kind == 'X' or kind == 'G') and tail ~= '' then
      targets[1] = { 1, tail }
    elseif kind == 'N' then
      local note = redis.call('HGET', k.notes, ref)
      if note then
        local i = 0
        for line in string.gmatch(note, '[^\n]+') do
          if i == 0 then
            payload = line
          elseif wanted == nil or wanted[i] then
            targets[#targets + 1] = { i, line }
          end
          i = i + 1
        end
      end
    end

    put(id)
    put(attempts)
    put(math.max(0, now - first))
    put(payload)
    put(lifecycle)
    local carries_event = kind == 'M' or kind == 'B' or kind == 'V'
    put((carries_event and (wanted == nil or wanted[0])) and 1 or 0)
    put(#targets)
    for _, t in ipairs(targets) do
      local all, fresh = connections_of(t[2], t[3])
      put(t[1])
      put(t[2])
      put(all)
      put(fresh)
    end
  end
  return n
end

-- The module's face: what other files reach as Outbox.<name>.
Outbox.claim_entries = claim_entries
end
