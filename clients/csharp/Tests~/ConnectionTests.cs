// The WebSocket connection against real local stacks: heartbeats at the
// interval the server's PONG names (keeping a presence-only world's ticket
// past the presence timeout), reconnects with exponential backoff while the
// server is gone and a fresh token once it is back, events delivered on
// the caller's thread (a queue drained by the caller, a
// SynchronizationContext), a ticket's expiry (TICKET_EXPIRED), and one
// ticket in several worlds (alsoIn: QUEUED with alsoQueuedIn, matched in the
// other world).
using System;
using System.Collections.Generic;
using System.Linq;
using System.Threading;
using System.Threading.Tasks;
using Matchmaking.Client;
using NUnit.Framework;

namespace Matchmaking.Client.Tests
{
    [TestFixture]
    public class ConnectionTests
    {
        [TestFixtureSetUp]
        public void Register() { Coverage.Fixtures.Add("ConnectionTests"); }

        [Test]
        public void HeartbeatsFollowThePongsIntervalAndKeepThePlayerPresent()
        {
            using (var stack = Stack.Start(new Dictionary<string, string>
            {
                { "MM_RULES", @"{ ""worlds"": [{ ""name"": ""live"", ""teamSize"": 2, ""requirePresence"": true }] }" },
                { "MM_HEARTBEAT_SECS", "1" },
                { "MM_PRESENCE_TIMEOUT_SECS", "3" },
            }))
            {
                var conn = stack.Connection("hana");
                var pongs = new List<KeyValuePair<DateTime, PongMessage>>();
                conn.Pong += p => { lock (pongs) pongs.Add(new KeyValuePair<DateTime, PongMessage>(DateTime.UtcNow, p)); };
                try
                {
                    Assert.AreEqual(60, conn.HeartbeatSeconds, "the default until the server says");
                    Sync.Run(conn.ConnectAsync());
                    // A heartbeat at once on open, then one per second: six PONGs in ~5 s,
                    // well past the 3 s presence timeout, all still registered.
                    Eventually.Wait(() => { lock (pongs) return pongs.Count; }, n => n >= 6, TimeSpan.FromSeconds(15), "six PONGs");
                    Assert.AreEqual(1, conn.HeartbeatSeconds);
                    List<KeyValuePair<DateTime, PongMessage>> seen;
                    lock (pongs) seen = pongs.ToList();
                    Assert.IsTrue(seen.All(p => p.Value.Registered && p.Value.HeartbeatSeconds == 1 && p.Value.PresenceTimeoutSeconds == 3));
                    var gaps = seen.Skip(2).Select((p, i) => (p.Key - seen[i + 1].Key).TotalMilliseconds).ToList();
                    // ~1 s apart (the default would be 60 s); loose bounds for a loaded machine.
                    foreach (var gap in gaps) Assert.IsTrue(gap > 300 && gap < 3000, "heartbeat gaps of ~1 s: " + string.Join(", ", gaps.Select(g => ((int)g).ToString()).ToArray()));
                    Assert.AreEqual("QUEUED", Sync.Run(stack.Client("hana").JoinAsync(new JoinRequest { WorldType = "live" })).Status, "present");
                }
                finally
                {
                    conn.Close();
                }
            }
        }

        [Test]
        public void ASocketTheServerDropsReconnectsWithBackoffAndAFreshToken()
        {
            var settings = new Dictionary<string, string> { { "MM_WORLDS", "world1:2" } };
            var stack = Stack.Start(settings);
            var httpAddr = stack.HttpAddr;
            var wsAddr = stack.WsAddr;
            // The provider mints at whatever stack is up on these ports; the
            // restarted stack has a new signing key, so the old token is refused.
            var asked = new List<bool>();
            var current = stack;
            string cached = null;
            TokenProvider token = async (refresh, ct) =>
            {
                lock (asked) asked.Add(refresh);
                if (cached == null || refresh) cached = await DevTokens.MintAsync(current.HttpUrl, "ivo", null, ct);
                return cached;
            };
            var conn = new Connection(new ConnectionOptions(stack.WsUrl, token) { InitialDelayMs = 100, Factor = 2, MaxDelayMs = 1600, Jitter = false });
            Coverage.Watch(conn);
            var delays = new List<int>();
            var closes = new List<CloseInfo>();
            var opens = new List<bool>();
            conn.Reconnecting += (attempt, ms) => { lock (delays) delays.Add(ms); };
            conn.Closed += c => { lock (closes) closes.Add(c); };
            conn.Opened += r => { lock (opens) opens.Add(r); };
            var recorder = new Recorder(conn);
            try
            {
                Sync.Run(conn.ConnectAsync());
                recorder.Next<PongMessage>(p => p.Registered);
                stack.Dispose();
                Eventually.Wait(() => { lock (closes) return closes.Count; }, n => n >= 1, TimeSpan.FromSeconds(15), "the close");
                Assert.IsTrue(closes[0].WillReconnect);
                // While the server is gone every attempt fails, and the delay doubles.
                Eventually.Wait(() => { lock (delays) return delays.Count; }, n => n >= 4, TimeSpan.FromSeconds(15), "four attempts");
                lock (delays) CollectionAssert.AreEqual(new[] { 100, 200, 400, 800 }, delays.Take(4).ToArray());
                Assert.AreEqual(ConnectionState.Reconnecting, conn.State);

                stack = Stack.Start(settings, httpAddr, wsAddr);
                current = stack;
                Eventually.Wait(() => { lock (opens) return opens.Count; }, n => n >= 2, TimeSpan.FromSeconds(15), "the socket open again");
                Assert.IsTrue(opens[1], "reconnected");
                Eventually.Wait(() => recorder.All<PongMessage>(p => p.Registered).Count, n => n >= 2, TimeSpan.FromSeconds(15), "a PONG on the new socket");
                lock (asked) Assert.IsTrue(asked.Contains(true), "a refreshed token after the refused ones");
                lock (delays) Assert.IsTrue(delays.All(d => d <= 1600), "capped at MaxDelayMs: " + string.Join(",", delays.Select(d => d.ToString()).ToArray()));

                // And the player is reachable on the new socket: a match is pushed to it.
                Assert.AreEqual("QUEUED", Sync.Run(stack.Client("ivo").JoinAsync(new JoinRequest { WorldType = "world1" })).Status);
                Assert.AreEqual("MATCHED", Sync.Run(stack.Client("jon").JoinAsync(new JoinRequest { WorldType = "world1" })).Status);
                CollectionAssert.AreEqual(new[] { "ivo", "jon" }, recorder.Next<MatchFoundMessage>().Participants);
                recorder.Next<QueuedMessage>(m => m.WorldType == "world1");
            }
            finally
            {
                conn.Close();
                stack.Dispose();
            }
        }

        [Test]
        public void EventsRunOnTheCallersThread()
        {
            using (var stack = Stack.Start(new Dictionary<string, string> { { "MM_WORLDS", "world1:2" } }))
            {
                // Unity's way: a queue the game loop drains (Update).
                var queue = new QueueDispatcher();
                var conn = stack.Connection("kai", o => o.Dispatcher = queue);
                var ran = new List<int>();
                MatchFoundMessage found = null;
                conn.MatchFound += m => { found = m; ran.Add(Thread.CurrentThread.ManagedThreadId); };
                // A SynchronizationContext (what Unity's main thread has): handlers are posted to it.
                var context = new RecordingContext();
                var other = stack.Connection("lou", o => o.Dispatcher = new SynchronizationContextDispatcher(context));
                MatchFoundMessage otherFound = null;
                other.MatchFound += m => otherFound = m;
                try
                {
                    var opened = conn.ConnectAsync();
                    Eventually.Wait(() => { queue.Drain(); return opened.IsCompleted; }, done => done, TimeSpan.FromSeconds(15), "open");
                    Sync.Run(other.ConnectAsync());
                    var waiting = conn.WaitForAsync<MatchFoundMessage>(null, TimeSpan.FromSeconds(15));
                    Sync.Run(stack.Client("kai").JoinAsync(new JoinRequest { WorldType = "world1" }));
                    Sync.Run(stack.Client("lou").JoinAsync(new JoinRequest { WorldType = "world1" }));
                    var heard = Sync.Run(waiting);
                    Assert.IsNull(found, "nothing runs until the caller drains the queue");
                    Assert.Greater(queue.Pending, 0);
                    Eventually.Wait(() => { queue.Drain(); return found; }, f => f != null, TimeSpan.FromSeconds(5), "the drained MATCH_FOUND");
                    Assert.AreEqual(heard.MatchId, found.MatchId);
                    CollectionAssert.AreEqual(new[] { Thread.CurrentThread.ManagedThreadId }, ran, "on the draining thread");

                    Eventually.Wait(() => context.Posted, n => n > 0, TimeSpan.FromSeconds(5), "posts to the context");
                    Assert.IsNull(otherFound, "nothing runs until the context runs it");
                    Eventually.Wait(() => { context.RunAll(); return otherFound; }, f => f != null, TimeSpan.FromSeconds(5), "MATCH_FOUND on the context");
                    Assert.AreEqual(heard.MatchId, otherFound.MatchId);
                }
                finally
                {
                    conn.Close();
                    other.Close();
                }
            }
        }

        [Test]
        public void AnExpiredTicketIsTold()
        {
            using (var stack = Stack.Start(new Dictionary<string, string> { { "MM_WORLDS", "world1:2" }, { "MM_TICKET_TTL_SECS", "2" } }))
            {
                var rec = new Recorder(stack.Connection("max"));
                try
                {
                    Sync.Run(rec.Connection.ConnectAsync());
                    Assert.AreEqual("QUEUED", Sync.Run(stack.Client("max").JoinAsync(new JoinRequest { WorldType = "world1" })).Status);
                    var expired = rec.Next<TicketExpiredMessage>(m => m.WorldType == "world1", TimeSpan.FromSeconds(20));
                    Assert.AreEqual("world1", expired.WorldType);
                    Assert.AreEqual("IDLE", Sync.Run(stack.Client("max").MyStatusAsync()).Status);
                }
                finally
                {
                    rec.Connection.Close();
                }
            }
        }

        [Test]
        public void OneTicketInSeveralWorldsIsMatchedInTheFirst()
        {
            var rules = @"{ ""worlds"": [
                { ""name"": ""casual"", ""teamSize"": 2, ""queueGroup"": ""g"" },
                { ""name"": ""ranked"", ""teamSize"": 2, ""queueGroup"": ""g"" } ] }";
            using (var stack = Stack.Start(new Dictionary<string, string> { { "MM_RULES", rules } }))
            {
                var rec = new Recorder(stack.Connection("nia"));
                try
                {
                    Sync.Run(rec.Connection.ConnectAsync());
                    var joined = Sync.Run(stack.Client("nia").JoinAsync(new JoinRequest { WorldType = "casual", AlsoIn = new[] { new AlsoIn { WorldType = "ranked" } } }));
                    CollectionAssert.AreEqual(new[] { "ranked" }, joined.Queued.AlsoQueuedIn);
                    CollectionAssert.AreEqual(new[] { "ranked" }, rec.Next<QueuedMessage>(m => m.WorldType == "casual").AlsoQueuedIn);
                    // A player of the second world completes a match there: it takes nia's ticket from both.
                    var matched = Sync.Run(stack.Client("oto").JoinAsync(new JoinRequest { WorldType = "ranked" }));
                    Assert.AreEqual("MATCHED", matched.Status, matched.ToJson());
                    Assert.AreEqual("ranked", rec.Next<MatchFoundMessage>().WorldType);
                    Assert.AreEqual(0, Sync.Run(stack.Client("nia").QueueStatusAsync("casual")).Waiting);
                }
                finally
                {
                    rec.Connection.Close();
                }
            }
        }

        sealed class RecordingContext : SynchronizationContext
        {
            readonly Queue<KeyValuePair<SendOrPostCallback, object>> posts = new Queue<KeyValuePair<SendOrPostCallback, object>>();
            public int Posted;

            public override void Post(SendOrPostCallback d, object state)
            {
                lock (posts)
                {
                    posts.Enqueue(new KeyValuePair<SendOrPostCallback, object>(d, state));
                    Posted++;
                }
            }

            public void RunAll()
            {
                while (true)
                {
                    KeyValuePair<SendOrPostCallback, object> next;
                    lock (posts)
                    {
                        if (posts.Count == 0) return;
                        next = posts.Dequeue();
                    }
                    next.Key(next.Value);
                }
            }
        }
    }
}
