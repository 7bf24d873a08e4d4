// The pieces without a stack: the JSON reader and writer, the
// de-duplication rules, the dispatchers.
using System;
using System.Collections.Generic;
using System.Threading;
using Matchmaking.Client;
using NUnit.Framework;

namespace Matchmaking.Client.Tests
{
    [TestFixture]
    public class UnitTests
    {
        [Test]
        public void JsonReadsAndWritesEveryKindOfValue()
        {
            var text = "{\"s\":\"a\\\"b\\\\c\\n\\u00e9\\ud83d\\ude00\",\"i\":-12,\"big\":1707477071123,\"f\":1.25,\"e\":1e3,\"t\":true,\"n\":null,\"l\":[1,[2],{}],\"o\":{\"k\":\"v\"}}";
            var o = (JsonObject)Json.Parse(text);
            Assert.AreEqual("a\"b\\c\né😀", o["s"]);
            Assert.AreEqual(-12L, o["i"]);
            Assert.AreEqual(1707477071123L, o["big"]);
            Assert.AreEqual(1.25, o["f"]);
            Assert.AreEqual(1000.0, o["e"]);
            Assert.AreEqual(true, o["t"]);
            Assert.IsTrue(o.ContainsKey("n"));
            Assert.IsNull(o["n"]);
            Assert.AreEqual(3, ((List<object>)o["l"]).Count);
            Assert.AreEqual("v", ((JsonObject)o["o"])["k"]);
            CollectionAssert.AreEqual(new[] { "s", "i", "big", "f", "e", "t", "n", "l", "o" }, o.OrderedKeys);
            var again = Json.Serialize(o);
            Assert.AreEqual(Json.Serialize(Json.Parse(again)), again, "stable round trip");
            StringAssert.Contains("\"big\":1707477071123", again);
            StringAssert.Contains("\"e\":1000", again);
            Assert.AreEqual("[\"\\u0001\",0.1]", Json.Serialize(new object[] { "\u0001", 0.1 }));
        }

        [Test]
        public void JsonRefusesWhatIsNotJson()
        {
            foreach (var bad in new[] { "", "{", "[1,]", "{\"a\" 1}", "01", "1.", "tru", "\"\\x\"", "{\"a\":1}x", "\"a\u0001\"", "NaN" })
                Assert.Throws<JsonParseException>(() => Json.Parse(bad), bad);
        }

        static ServerMessage Msg(string json) { return ServerMessage.From((JsonObject)Json.Parse(json)); }

        [Test]
        public void TheDeduperDropsRepeatsAndStaleMessages()
        {
            var d = new Deduper(windowMs: 1000);
            Assert.IsTrue(d.Accept(Msg("{\"type\":\"MATCH_PROPOSED\",\"matchId\":\"m1\"}"), 0));
            Assert.IsFalse(d.Accept(Msg("{\"type\":\"MATCH_PROPOSED\",\"matchId\":\"m1\"}"), 1));
            Assert.IsTrue(d.Accept(Msg("{\"type\":\"MATCH_ACCEPT_PROGRESS\",\"matchId\":\"m1\",\"accepted\":2}"), 2));
            Assert.IsFalse(d.Accept(Msg("{\"type\":\"MATCH_ACCEPT_PROGRESS\",\"matchId\":\"m1\",\"accepted\":1}"), 3), "an older progress");
            Assert.IsTrue(d.Accept(Msg("{\"type\":\"MATCH_FOUND\",\"matchId\":\"m1\"}"), 4));
            Assert.IsFalse(d.Accept(Msg("{\"type\":\"MATCH_ACCEPT_PROGRESS\",\"matchId\":\"m1\",\"accepted\":3}"), 5), "after the match was found");
            Assert.IsFalse(d.Accept(Msg("{\"type\":\"MATCH_FOUND\",\"matchId\":\"m1\"}"), 6));
            Assert.IsTrue(d.Accept(Msg("{\"type\":\"MATCH_ASSIGNED\",\"matchId\":\"m1\"}"), 7));
            Assert.IsFalse(d.Accept(Msg("{\"type\":\"MATCH_ASSIGNED\",\"matchId\":\"m1\"}"), 8));
            var a = "{\"type\":\"PARTY_UPDATE\",\"party\":{\"partyId\":\"p\",\"state\":\"ASSEMBLING\"}}";
            var b = "{\"type\":\"PARTY_UPDATE\",\"party\":{\"state\":\"QUEUED\",\"partyId\":\"p\"}}";
            Assert.IsTrue(d.Accept(Msg(a), 9));
            Assert.IsFalse(d.Accept(Msg("{\"type\":\"PARTY_UPDATE\",\"party\":{\"state\":\"ASSEMBLING\",\"partyId\":\"p\"}}"), 10), "the same party, keys in another order");
            Assert.IsTrue(d.Accept(Msg(b), 11));
            Assert.IsTrue(d.Accept(Msg(a), 12), "A, B, A again is news");
            Assert.IsTrue(d.Accept(Msg("{\"type\":\"PARTY_CANCELLED\",\"partyId\":\"p\"}"), 13));
            Assert.IsFalse(d.Accept(Msg(b), 14), "nothing after the party's cancellation");
            Assert.IsTrue(d.Accept(Msg("{\"type\":\"TICKET_EXPIRED\",\"worldType\":\"w\"}"), 100));
            Assert.IsFalse(d.Accept(Msg("{\"type\":\"TICKET_EXPIRED\",\"worldType\":\"w\"}"), 200));
            Assert.IsTrue(d.Accept(Msg("{\"type\":\"TICKET_EXPIRED\",\"worldType\":\"w\"}"), 1200), "after the window");
            Assert.IsTrue(d.Accept(Msg("{\"type\":\"QUEUED\",\"worldType\":\"w\"}"), 1201));
            Assert.IsTrue(d.Accept(Msg("{\"type\":\"TICKET_EXPIRED\",\"worldType\":\"w\"}"), 1202), "a new ticket's expiry");
            Assert.IsTrue(d.Accept(Msg("{\"type\":\"PONG\"}"), 1203));
            Assert.IsTrue(d.Accept(Msg("{\"type\":\"PONG\"}"), 1204));
            Assert.IsTrue(d.Accept(Msg("{\"type\":\"SOMETHING_NEW\"}"), 1205));
            Assert.IsTrue(d.Accept(Msg("{\"type\":\"SOMETHING_NEW\"}"), 1206));
        }

        [Test]
        public void TheDeduperForgetsTheOldestKeysBeyondItsLimit()
        {
            var d = new Deduper(maxKeys: 2);
            Assert.IsTrue(d.Accept(Msg("{\"type\":\"MATCH_FOUND\",\"matchId\":\"a\"}"), 0));
            Assert.IsTrue(d.Accept(Msg("{\"type\":\"MATCH_FOUND\",\"matchId\":\"b\"}"), 0));
            Assert.IsTrue(d.Accept(Msg("{\"type\":\"MATCH_FOUND\",\"matchId\":\"c\"}"), 0));
            Assert.IsTrue(d.Accept(Msg("{\"type\":\"MATCH_FOUND\",\"matchId\":\"a\"}"), 0), "a was forgotten");
            Assert.IsFalse(d.Accept(Msg("{\"type\":\"MATCH_FOUND\",\"matchId\":\"c\"}"), 0));
        }

        [Test]
        public void TheQueueDispatcherRunsHandlersOnTheDrainingThread()
        {
            var q = new QueueDispatcher();
            var threads = new List<int>();
            var t = new Thread(() => { for (int i = 0; i < 3; i++) q.Post(() => threads.Add(Thread.CurrentThread.ManagedThreadId)); });
            t.Start();
            t.Join();
            Assert.AreEqual(3, q.Pending);
            Assert.AreEqual(0, threads.Count, "nothing runs until drained");
            Assert.AreEqual(2, q.Drain(2));
            Assert.AreEqual(1, q.Drain());
            CollectionAssert.AreEqual(new[] { Thread.CurrentThread.ManagedThreadId, Thread.CurrentThread.ManagedThreadId, Thread.CurrentThread.ManagedThreadId }, threads);
        }

        [Test]
        public void ModelsKeepUnknownFieldsAndTellAbsentFromNull()
        {
            var m = JsonModel.Parse<QueueStatus>("{\"worldType\":\"w\",\"waiting\":3,\"future\":{\"x\":1},\"estimatedWaitSeconds\":null}");
            Assert.AreEqual("w", m.WorldType);
            Assert.IsTrue(m.Has("estimatedWaitSeconds"));
            Assert.IsNull(m.EstimatedWaitSeconds);
            Assert.IsFalse(m.Has("openBackfills"));
            StringAssert.Contains("\"future\":{\"x\":1}", m.ToJson());
        }

        [Test]
        public void ErrorsAreTypedByTheirEnvelope()
        {
            var e = ApiException.Of(409, "{\"resultCode\":\"409\",\"msg\":\"cooling down\",\"data\":{\"error\":\"COOLING_DOWN\",\"retryAfterSeconds\":4}}");
            var m = (MatchmakingException)e;
            Assert.AreEqual(ErrorCode.CoolingDown, m.Code);
            Assert.AreEqual(4, m.Details<CoolingDownError>().RetryAfterSeconds);
            Assert.IsInstanceOf<CoolingDownError>(m.TypedDetails);
            var g = (GatewayException)ApiException.Of(401, "{\"message\":\"Unauthorized\"}");
            Assert.AreEqual("Unauthorized", g.GatewayMessage);
            Assert.AreEqual(502, ApiException.Of(502, "<html>").Status);
            Assert.IsNull(ApiException.Of(201, "{}"));
        }
    }
}
