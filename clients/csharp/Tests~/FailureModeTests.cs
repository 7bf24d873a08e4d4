// The connection's failure modes against a stand-in WebSocket server
// (Support/FakeSocketServer.cs): the real stack does not, on demand, leave a
// heartbeat unanswered, say a registration lapsed, or answer the plain-text
// heartbeat failure. The message shapes are docs/asyncapi.yaml's.
using System;
using System.Collections.Generic;
using System.Linq;
using System.Threading.Tasks;
using Matchmaking.Client;
using NUnit.Framework;

namespace Matchmaking.Client.Tests
{
    [TestFixture]
    public class FailureModeTests
    {
        static readonly TimeSpan Wait = TimeSpan.FromSeconds(15);
        const string Pong = "{\"type\":\"PONG\",\"registered\":true,\"heartbeatSeconds\":60,\"presenceTimeoutSeconds\":150}";

        static Connection Connect(FakeSocketServer server, Action<ConnectionOptions> configure, List<CloseInfo> closes, List<Exception> errors)
        {
            int minted = 0;
            var options = new ConnectionOptions(server.Url, (refresh, ct) => Task.FromResult("token-" + (++minted))) { InitialDelayMs = 50, Jitter = false };
            configure(options);
            var conn = new Connection(options);
            conn.Closed += c => { lock (closes) closes.Add(c); };
            conn.Error += e => { lock (errors) errors.Add(e); };
            Sync.Run(conn.ConnectAsync());
            return conn;
        }

        [Test]
        public void AnUnansweredHeartbeatDropsTheSocketAndReconnects()
        {
            // The first socket never answers; the second one does.
            using (var server = new FakeSocketServer((s, text) => { if (text.Contains("ping") && s != null && FirstDone) s.Send(Pong); }))
            {
                FirstDone = false;
                var closes = new List<CloseInfo>();
                var errors = new List<Exception>();
                var conn = Connect(server, o => o.PongTimeoutMs = 300, closes, errors);
                try
                {
                    Eventually.Wait(() => { lock (closes) return closes.Count; }, n => n >= 1, Wait, "the dropped socket");
                    FirstDone = true;
                    Assert.AreEqual(4001, closes[0].Code);
                    Assert.AreEqual("heartbeat timeout", closes[0].Reason);
                    Assert.IsTrue(closes[0].WillReconnect);
                    lock (errors) Assert.IsTrue(errors.Any(e => e is TimeoutException), string.Join("; ", errors.Select(e => e.Message).ToArray()));
                    Eventually.Wait(() => server.Connections, n => n >= 2, Wait, "a second connection");
                    StringAssert.StartsWith("/?token=token-", server.Requests[0]);
                }
                finally
                {
                    conn.Close();
                }
            }
        }

        static volatile bool FirstDone;

        [Test]
        public void ALapsedRegistrationReconnectsAtOnce()
        {
            int pongs = 0;
            using (var server = new FakeSocketServer((s, text) =>
            {
                // The first PONG says the registration lapsed; later ones are fine.
                if (text.Contains("ping")) s.Send(System.Threading.Interlocked.Increment(ref pongs) == 1 ? Pong.Replace("\"registered\":true", "\"registered\":false") : Pong);
            }))
            {
                var closes = new List<CloseInfo>();
                var errors = new List<Exception>();
                var reconnects = new List<int>();
                var conn = Connect(server, o => o.InitialDelayMs = 5000, closes, errors);
                conn.Reconnecting += (attempt, ms) => { lock (reconnects) reconnects.Add(ms); };
                try
                {
                    Eventually.Wait(() => server.Connections, n => n >= 2, Wait, "a new connection");
                    Assert.AreEqual("registration lapsed", closes[0].Reason);
                    CollectionAssert.AreEqual(new[] { 0 }, reconnects, "at once, not after the 5 s backoff");
                }
                finally
                {
                    conn.Close();
                }
            }
        }

        [Test]
        public void ThePlainTextHeartbeatFailureIsATextEvent()
        {
            using (var server = new FakeSocketServer((s, text) => { if (text.Contains("ping")) s.Send("service unavailable"); }))
            {
                var texts = new List<string>();
                var conn = new Connection(new ConnectionOptions(server.Url, (r, ct) => Task.FromResult("t")));
                conn.Text += t => { lock (texts) texts.Add(t); };
                try
                {
                    Sync.Run(conn.ConnectAsync());
                    Eventually.Wait(() => { lock (texts) return texts.FirstOrDefault(); }, t => t != null, Wait, "the text frame");
                    Assert.AreEqual("service unavailable", texts[0]);
                    Assert.AreEqual(ConnectionState.Open, conn.State, "the socket stays");
                }
                finally
                {
                    conn.Close();
                }
            }
        }

        [Test]
        public void CloseThenConnectDuringABackoffOpensOneSocket()
        {
            // The server drops every socket at once; the connection waits 400 ms before its next attempt.
            using (var server = new FakeSocketServer((s, text) => { if (server0 != null) s.Send(Pong); }))
            {
                server0 = null;
                var closes = new List<CloseInfo>();
                var errors = new List<Exception>();
                var conn = Connect(server, o => { o.InitialDelayMs = 400; o.Jitter = false; }, closes, errors);
                var reconnecting = new List<int>();
                conn.Reconnecting += (a, ms) => { lock (reconnecting) reconnecting.Add(ms); };
                try
                {
                    server.DropAll();
                    Eventually.Wait(() => { lock (reconnecting) return reconnecting.Count; }, n => n >= 1, Wait, "the backoff");
                    // While the old loop sleeps: close, and connect again at once.
                    conn.Close();
                    server0 = server;
                    Sync.Run(conn.ConnectAsync());
                    Eventually.Wait(() => server.Connections, n => n >= 2, Wait, "the new socket");
                    // An absence cannot be polled for: watch past the old loop's 400 ms wake-up.
                    System.Threading.Thread.Sleep(1000);
                    Assert.AreEqual(2, server.Connections, "the old loop ended instead of opening a second socket");
                    Assert.AreEqual(ConnectionState.Open, conn.State);
                }
                finally
                {
                    conn.Close();
                }
            }
        }

        static volatile FakeSocketServer server0;

        [Test]
        public void WithoutReconnectAClosedSocketStaysClosed()
        {
            using (var server = new FakeSocketServer((s, text) => s.Drop()))
            {
                var closes = new List<CloseInfo>();
                var errors = new List<Exception>();
                var conn = Connect(server, o => o.Reconnect = false, closes, errors);
                Eventually.Wait(() => conn.State, s => s == ConnectionState.Closed, Wait, "closed");
                Assert.IsFalse(closes.Single().WillReconnect);
                Assert.AreEqual(1, server.Connections);
            }
        }
    }
}
