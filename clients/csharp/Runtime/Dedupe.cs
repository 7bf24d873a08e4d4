using System;
using System.Collections.Generic;

namespace Matchmaking.Client
{
    /// <summary>
    /// Drops the repeats of at-least-once delivery (docs/asyncapi.yaml,
    /// "Delivery") and stale messages a retry brings after a later one; the
    /// same rules as the TypeScript SDK's:
    /// MATCH_FOUND, MATCH_ASSIGNED, MATCH_RESULT, MATCH_PROPOSED and
    /// MATCH_CANCELLED once per matchId; MATCH_ACCEPT_PROGRESS only with a
    /// larger <c>accepted</c>, and nothing about a proposal after its
    /// MATCH_FOUND or MATCH_CANCELLED; PARTY_CANCELLED once per party,
    /// PARTY_UPDATE unless equal to the party's previous update, nothing
    /// after its PARTY_CANCELLED; TICKET_EXPIRED and TICKET_REMOVED once per
    /// world within <see cref="WindowMs"/> until a QUEUED for that world.
    /// QUEUED, PONG and types new to this SDK are never dropped.
    /// </summary>
    public sealed class Deduper
    {
        readonly Dictionary<string, long> seen = new Dictionary<string, long>(StringComparer.Ordinal);
        readonly LinkedList<string> order = new LinkedList<string>();
        readonly Dictionary<string, LinkedListNode<string>> nodes = new Dictionary<string, LinkedListNode<string>>(StringComparer.Ordinal);

        public Deduper(int maxKeys = 2000, long windowMs = 60000)
        {
            MaxKeys = maxKeys;
            WindowMs = windowMs;
        }

        /// <summary>How many ids to remember (oldest forgotten first).</summary>
        public int MaxKeys { get; private set; }

        /// <summary>How long an id-less message (TICKET_EXPIRED, TICKET_REMOVED) stays a repeat, ms.</summary>
        public long WindowMs { get; private set; }

        /// <summary>Whether <paramref name="msg"/> is news (and remembers it); false for a repeat or a stale message.</summary>
        public bool Accept(ServerMessage msg) { return Accept(msg, NowMs()); }

        public bool Accept(ServerMessage msg, long now)
        {
            var type = msg.Type;
            var raw = msg.Raw;
            string matchId = raw["matchId"] as string;
            switch (type)
            {
                case "QUEUED":
                    Forget("TICKET_EXPIRED|" + (raw["worldType"] as string));
                    Forget("TICKET_REMOVED|" + (raw["worldType"] as string));
                    return true;
                case "PONG":
                    return true;
                case "MATCH_FOUND":
                case "MATCH_ASSIGNED":
                case "MATCH_RESULT":
                case "MATCH_CANCELLED":
                    return First(type + "|" + matchId, now);
                case "MATCH_PROPOSED":
                    if (Decided(matchId)) return false;
                    return First(type + "|" + matchId, now);
                case "MATCH_ACCEPT_PROGRESS":
                {
                    if (Decided(matchId)) return false;
                    var key = type + "|" + matchId;
                    long accepted = raw["accepted"] is long ? (long)raw["accepted"] : 0;
                    long before;
                    if (seen.TryGetValue(key, out before) && before >= accepted) return false;
                    Remember(key, accepted);
                    return true;
                }
                case "PARTY_CANCELLED":
                    return First(type + "|" + (raw["partyId"] as string), now);
                case "PARTY_UPDATE":
                {
                    var party = raw["party"] as JsonObject;
                    var partyId = party == null ? null : party["partyId"] as string;
                    if (seen.ContainsKey("PARTY_CANCELLED|" + partyId)) return false;
                    var prefix = type + "|" + partyId + "|";
                    var key = prefix + StableJson(party);
                    if (seen.ContainsKey(key)) return false;
                    // Only the party's latest update counts: A, B, A again is news.
                    var stale = new List<string>();
                    foreach (var k in seen.Keys) if (k.StartsWith(prefix, StringComparison.Ordinal)) stale.Add(k);
                    foreach (var k in stale) Forget(k);
                    Remember(key, now);
                    return true;
                }
                case "TICKET_EXPIRED":
                case "TICKET_REMOVED":
                {
                    var key = type + "|" + (raw["worldType"] as string);
                    long at;
                    if (seen.TryGetValue(key, out at) && now - at < WindowMs) return false;
                    Remember(key, now);
                    return true;
                }
                default:
                    return true;
            }
        }

        bool Decided(string matchId)
        {
            return seen.ContainsKey("MATCH_FOUND|" + matchId) || seen.ContainsKey("MATCH_CANCELLED|" + matchId);
        }

        bool First(string key, long now)
        {
            if (seen.ContainsKey(key)) return false;
            Remember(key, now);
            return true;
        }

        void Forget(string key)
        {
            LinkedListNode<string> node;
            if (nodes.TryGetValue(key, out node))
            {
                order.Remove(node);
                nodes.Remove(key);
            }
            seen.Remove(key);
        }

        void Remember(string key, long value)
        {
            Forget(key);
            seen[key] = value;
            nodes[key] = order.AddLast(key);
            while (seen.Count > MaxKeys && order.First != null) Forget(order.First.Value);
        }

        internal static long NowMs() { return DateTime.UtcNow.Ticks / TimeSpan.TicksPerMillisecond - 62135596800000L; }

        /// <summary>JSON with object keys sorted: equal values, equal text.</summary>
        public static string StableJson(object value)
        {
            var o = value as JsonObject;
            if (o != null)
            {
                var keys = new List<string>(o.Keys);
                keys.Sort(StringComparer.Ordinal);
                var parts = new List<string>();
                foreach (var k in keys) parts.Add(Json.Serialize(k) + ":" + StableJson(o[k]));
                return "{" + string.Join(",", parts.ToArray()) + "}";
            }
            var l = value as List<object>;
            if (l != null)
            {
                var parts = new List<string>();
                foreach (var x in l) parts.Add(StableJson(x));
                return "[" + string.Join(",", parts.ToArray()) + "]";
            }
            return Json.Serialize(value);
        }
    }
}
