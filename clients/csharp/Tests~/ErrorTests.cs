// Every documented error code the HTTP API answers, reached through the
// SDK against a real local stack and read as a typed MatchmakingException
// (status, code, typed details); API Gateway's own answers as
// GatewayException. (The flow, backfill and connection fixtures reach the
// match lifecycle's codes; the Coverage fixture checks the union.)
using System;
using System.Collections.Generic;
using System.Diagnostics;
using System.Linq;
using System.Net;
using System.Net.Sockets;
using System.Threading;
using System.Threading.Tasks;
using Matchmaking.Client;
using NUnit.Framework;

namespace Matchmaking.Client.Tests
{
    [TestFixture]
    public class ErrorTests
    {
        internal const string ServerScope = "matchmaking/server";
        const string WriterScope = "matchmaking/ratings.write";
        const string AttributesScope = "matchmaking/attributes.write";
        const string Rules = @"{
          ""ratings"": { ""claim"": ""mmr"", ""min"": 0, ""max"": 5000, ""writerScope"": ""matchmaking/ratings.write"" },
          ""servers"": { ""scope"": ""matchmaking/server"" },
          ""attributeStore"": { ""writerScope"": ""matchmaking/attributes.write"" },
          ""attributes"": {
            ""modes"": { ""type"": ""stringList"", ""values"": [""ctf"", ""koth""], ""maxItems"": 2, ""missing"": ""refuse"" },
            ""platform"": { ""type"": ""string"", ""source"": ""trusted"", ""values"": [""pc"", ""console""], ""missing"": ""refuse"" },
            ""build"": { ""type"": ""string"" }
          },
          ""worlds"": [
            { ""name"": ""w1"", ""teamSize"": 2, ""maxPartySize"": 2 },
            { ""name"": ""w2"", ""teamSize"": 2 },
            { ""name"": ""rated"", ""teamSize"": 2, ""mode"": ""rating"", ""rating"": { ""baseWindow"": 100, ""widenPerSecond"": 10, ""maxWindow"": 400, ""relaxAfterSeconds"": 60 } },
            { ""name"": ""live"", ""teamSize"": 2, ""requirePresence"": true },
            { ""name"": ""geo"", ""teamSize"": 2, ""regions"": { ""names"": [""eu"", ""us""], ""maxLatencyMs"": 50, ""widenPerSecond"": 5, ""maxLatencyCapMs"": 150 } },
            { ""name"": ""duel"", ""teamSize"": 2, ""readyCheck"": { ""acceptSeconds"": 2, ""declineCooldownSeconds"": 30 } },
            { ""name"": ""big"", ""teamSize"": 10 },
            { ""name"": ""crossmode"", ""teamSize"": 2, ""rules"": [
                { ""name"": ""commonMode"", ""type"": ""intersection"", ""attribute"": ""modes"" },
                { ""name"": ""samePlatform"", ""type"": ""equality"", ""attribute"": ""platform"" } ] },
            { ""name"": ""builds"", ""teamSize"": 4, ""rules"": [{ ""name"": ""sameBuild"", ""type"": ""equality"", ""attribute"": ""build"" }] }
          ]
        }";

        Stack stack;

        [TestFixtureSetUp]
        public void StartStack()
        {
            Coverage.Fixtures.Add("ErrorTests");
            stack = Stack.Start(new Dictionary<string, string> { { "MM_RULES", Rules }, { "MM_DEMO_ALLOCATOR", "false" }, { "MM_QUEUE_CAPACITY", "2" } });
        }

        [TestFixtureTearDown]
        public void StopStack() { if (stack != null) stack.Dispose(); }

        static MatchmakingException Refused(Func<Task> call, string code, int status)
        {
            var e = Sync.Throws<MatchmakingException>(call);
            Assert.AreEqual(code, e.Code, e.Message);
            Assert.AreEqual(status, e.Status, e.Message);
            Assert.IsTrue(Spec.ErrorDetails[code].IsInstanceOfType(e.TypedDetails));
            return e;
        }

        [Test]
        public void QueueRefusals()
        {
            var kim = stack.Client("kim");
            var unknown = Refused(() => kim.JoinAsync(new JoinRequest { WorldType = "world9" }), ErrorCode.UnknownWorld, 404);
            Assert.AreEqual("world9", unknown.Details<UnknownWorldError>().WorldType);
            CollectionAssert.Contains(unknown.Details<UnknownWorldError>().Worlds, "w1");
            StringAssert.Contains("world9", unknown.Msg);
            Refused(() => kim.QueueStatusAsync("world9"), ErrorCode.UnknownWorld, 404);

            Assert.AreEqual("QUEUED", Sync.Run(kim.JoinAsync(new JoinRequest { WorldType = "w1" })).Status);
            var already = Refused(() => kim.JoinAsync(new JoinRequest { WorldType = "w2" }), ErrorCode.AlreadyQueued, 409);
            Assert.AreEqual("w1", already.Details<AlreadyQueuedError>().WorldType);
            Assert.AreEqual(1, already.Details<AlreadyQueuedError>().Position);
            var notQueued = Refused(() => kim.LeaveAsync(new LeaveRequest { WorldType = "w2" }), ErrorCode.NotQueued, 404);
            Assert.AreEqual("w1", notQueued.Details<NotQueuedError>().QueuedIn);
            var status = Sync.Run(kim.QueueStatusAsync("w1"));
            Assert.AreEqual(1, status.Waiting);
            Sync.Run(kim.LeaveAsync(new LeaveRequest { WorldType = "w1" }));

            Refused(() => kim.MatchAsync("18f3a-1"), ErrorCode.MatchNotFound, 404);
            Refused(() => kim.JoinPartyAsync("w1.18f3a-2b"), ErrorCode.PartyNotFound, 404);
            Refused(() => kim.CancelPartyAsync("w1.18f3a-2b"), ErrorCode.PartyNotFound, 404);
            Refused(() => kim.AcceptAsync(new AcceptRequest { MatchId = "18f3a-3", Accept = true }), ErrorCode.ProposalNotFound, 404);
            Refused(() => kim.RatingAsync("kim", new RatingRequest { Rating = 1 }), ErrorCode.Forbidden, 403);
            var invalidWorlds = Refused(() => kim.JoinAsync(new JoinRequest { WorldType = "w1", AlsoIn = new[] { new AlsoIn { WorldType = "w1" } } }), ErrorCode.InvalidWorlds, 400);
            Assert.AreEqual("alsoIn", invalidWorlds.Details<InvalidWorldsError>().Field);
        }

        [Test]
        public void MalformedRequests()
        {
            var lee = stack.Client("lee");
            var unknownField = Sync.Throws<MatchmakingException>(() => lee.SendAsync("join", new string[0], new string[0], "{\"worldType\":\"w1\",\"bogus\":1}", "application/json"));
            Assert.AreEqual(ErrorCode.InvalidRequest, unknownField.Code);
            Assert.AreEqual(400, unknownField.Status);
            var twice = Sync.Throws<MatchmakingException>(() => lee.SendAsync("join", new string[0], new string[0], "{\"worldType\":\"w1\",\"worldType\":\"w2\"}", "application/json"));
            Assert.AreEqual("worldType", twice.Details<InvalidRequestError>().DuplicateKey);
            Assert.AreEqual("/worldType", twice.Details<InvalidRequestError>().Path);
            var badName = Refused(() => lee.JoinAsync(new JoinRequest { WorldType = "Not A World!" }), ErrorCode.InvalidRequest, 400);
            Assert.AreEqual("worldType", badName.Details<InvalidRequestError>().Field);

            var large = Sync.Throws<MatchmakingException>(() => lee.SendAsync("join", new string[0], new string[0], "{\"worldType\":\"w1\",\"data\":{\"pad\":\"" + new string('x', 9000) + "\"}}", "application/json"));
            Assert.AreEqual(ErrorCode.PayloadTooLarge, large.Code);
            Assert.AreEqual(413, large.Status);
            Assert.AreEqual(8192, large.Details<PayloadTooLargeError>().LimitBytes);

            var media = Sync.Throws<MatchmakingException>(() => lee.SendAsync("join", new string[0], new string[0], "worldType=w1", "text/plain"));
            Assert.AreEqual(ErrorCode.UnsupportedMediaType, media.Code);
            Assert.AreEqual(415, media.Status);
            StringAssert.StartsWith("text/plain", media.Details<UnsupportedMediaTypeError>().ContentType);
        }

        [Test]
        public void GatewayAnswersAndTokenRefresh()
        {
            // A token the JWT authorizer refuses: API Gateway's own 401.
            var bad = new MatchmakingClient(stack.HttpUrl, "not-a-jwt");
            Coverage.Watch(bad);
            var e = Sync.Throws<GatewayException>(() => bad.MyStatusAsync());
            Assert.AreEqual(401, e.Status);
            Assert.AreEqual("Unauthorized", e.GatewayMessage);
            // A provider whose cached token is refused is asked again with refresh: true.
            var asked = new List<bool>();
            var good = stack.Token("mia");
            var refreshing = new MatchmakingClient(stack.HttpUrl, (refresh, ct) => { asked.Add(refresh); return Task.FromResult(refresh ? good : "stale"); });
            Assert.AreEqual("IDLE", Sync.Run(refreshing.MyStatusAsync()).Status);
            CollectionAssert.AreEqual(new[] { false, true }, asked);
            // A path no route matches (an empty world name): API Gateway's 404.
            var notFound = Sync.Throws<GatewayException>(() => stack.Client("mia").QueueStatusAsync(""));
            Assert.AreEqual(404, notFound.Status);
        }

        [Test]
        public void WorldRefusals()
        {
            var ned = stack.Client("ned");
            Refused(() => ned.JoinAsync(new JoinRequest { WorldType = "rated" }), ErrorCode.RatingRequired, 409);
            var writer = stack.Client("rating-service", WriterScope);
            var invalidRating = Refused(() => writer.RatingAsync("ned", new RatingRequest { Rating = 99999 }), ErrorCode.InvalidRating, 400);
            Assert.AreEqual(5000, invalidRating.Details<InvalidRatingError>().Max);
            Refused(() => writer.RatingAsync("ned", new RatingRequest { Rating = 100, WorldType = "world9" }), ErrorCode.UnknownWorld, 404);
            Refused(() => ned.JoinAsync(new JoinRequest { WorldType = "live" }), ErrorCode.NotConnected, 409);
            Refused(() => ned.JoinAsync(new JoinRequest { WorldType = "geo" }), ErrorCode.LatencyRequired, 409);
            Refused(() => ned.JoinAsync(new JoinRequest { WorldType = "geo", Latencies = new Dictionary<string, double> { { "mars", 10 } } }), ErrorCode.InvalidLatencies, 400);
            var geo = Sync.Run(ned.JoinAsync(new JoinRequest { WorldType = "geo", Latencies = new Dictionary<string, double> { { "eu", 20 } } }));
            Assert.AreEqual("QUEUED", geo.Status);
            Sync.Run(ned.LeaveAsync(new LeaveRequest { WorldType = "geo" }));

            // The queue's capacity (MM_QUEUE_CAPACITY=2 in this stack).
            Sync.Run(stack.Client("q1").JoinAsync(new JoinRequest { WorldType = "big" }));
            Sync.Run(stack.Client("q2").JoinAsync(new JoinRequest { WorldType = "big" }));
            var full = Refused(() => stack.Client("q3").JoinAsync(new JoinRequest { WorldType = "big" }), ErrorCode.QueueFull, 503);
            Assert.AreEqual(2, full.Details<QueueFullError>().QueueSize);
        }

        [Test]
        public void PartyRefusalsAndCancellation()
        {
            var ola = stack.Client("ola");
            var pia = stack.Client("pia");
            var pias = new Recorder(stack.Connection("pia"));
            try
            {
                Sync.Run(pias.Connection.ConnectAsync());
                var alone = Refused(() => ola.CreatePartyAsync(new CreatePartyRequest { WorldType = "w1", Members = new string[0] }), ErrorCode.InvalidParty, 400);
                Assert.AreEqual("members", alone.Details<InvalidPartyError>().Field);
                Refused(() => ola.CreatePartyAsync(new CreatePartyRequest { WorldType = "w1", Members = new[] { "pia", "quinn" } }), ErrorCode.InvalidParty, 400);
                var party = Sync.Run(ola.CreatePartyAsync(new CreatePartyRequest { WorldType = "w1", Members = new[] { "pia" } }));
                var partyId = party.Party.PartyId;
                pias.Next<PartyUpdateMessage>(m => m.Party.PartyId == partyId);
                var inParty = Refused(() => ola.JoinAsync(new JoinRequest { WorldType = "w1" }), ErrorCode.InParty, 409);
                Assert.AreEqual(partyId, inParty.Details<InPartyError>().PartyId);
                Sync.Run(stack.Client("rex").JoinAsync(new JoinRequest { WorldType = "w2" }));
                var busy = Refused(() => stack.Client("sam").CreatePartyAsync(new CreatePartyRequest { WorldType = "w2", Members = new[] { "rex" } }), ErrorCode.MemberBusy, 409);
                Assert.AreEqual("rex", busy.Details<MemberBusyError>().PlayerId);
                Sync.Run(stack.Client("rex").LeaveAsync(new LeaveRequest { WorldType = "w2" }));

                var cancelled = Sync.Run(ola.CancelPartyAsync(partyId));
                Assert.IsTrue(cancelled.Cancelled);
                Assert.AreEqual(partyId, cancelled.Party.PartyId);
                var told = pias.Next<PartyCancelledMessage>(m => m.PartyId == partyId);
                Assert.AreEqual("LEFT", told.Reason);
                Refused(() => pia.JoinPartyAsync(partyId), ErrorCode.PartyNotFound, 404);
            }
            finally
            {
                pias.Connection.Close();
            }
        }

        [Test]
        public void ReadyCheckRefusals()
        {
            var tom = stack.Client("tom");
            var uma = stack.Client("uma");
            var toms = new Recorder(stack.Connection("tom"));
            var umas = new Recorder(stack.Connection("uma"));
            try
            {
                Sync.Run(toms.Connection.ConnectAsync());
                Sync.Run(umas.Connection.ConnectAsync());
                Assert.AreEqual("QUEUED", Sync.Run(tom.JoinAsync(new JoinRequest { WorldType = "duel" })).Status);
                toms.Next<QueuedMessage>(m => m.WorldType == "duel");
                var proposed = Sync.Run(uma.JoinAsync(new JoinRequest { WorldType = "duel" }));
                Assert.AreEqual("PROPOSED", proposed.Status, proposed.ToJson());
                var matchId = proposed.Proposed.Proposal.MatchId;
                // uma declines: the proposal is cancelled, tom requeued, uma cools down.
                var declined = Sync.Run(uma.AcceptAsync(new AcceptRequest { MatchId = matchId, Accept = false }));
                Assert.AreEqual("CANCELLED", declined.Status, declined.ToJson());
                var cancel = toms.Next<MatchCancelledMessage>(m => m.MatchId == matchId);
                Assert.AreEqual("DECLINED", cancel.Reason);
                Assert.IsTrue(cancel.Requeued);
                var cooling = Refused(() => uma.JoinAsync(new JoinRequest { WorldType = "duel" }), ErrorCode.CoolingDown, 409);
                Assert.Greater(cooling.Details<CoolingDownError>().RetryAfterSeconds, 0);
                Refused(() => uma.AcceptAsync(new AcceptRequest { MatchId = matchId, Accept = true }), ErrorCode.ProposalNotFound, 404);

                // A late answer: PROPOSAL_EXPIRED (acceptSeconds is 2 here).
                var vic = stack.Client("vic");
                var second = Sync.Run(vic.JoinAsync(new JoinRequest { WorldType = "duel" }));
                Assert.AreEqual("PROPOSED", second.Status, second.ToJson());
                var late = second.Proposed.Proposal;
                Eventually.Wait(() => FlowTests.NowMs(), now => now > late.AcceptBy + 50, TimeSpan.FromSeconds(10), "past acceptBy");
                var e = Sync.Throws<MatchmakingException>(() => vic.AcceptAsync(new AcceptRequest { MatchId = late.MatchId, Accept = true }));
                // The matcher may have timed the proposal out first (PROPOSAL_NOT_FOUND); the answer races it.
                Assert.Contains(e.Code, new[] { ErrorCode.ProposalExpired, ErrorCode.ProposalNotFound });
                System.Console.WriteLine("late accept answered " + e.Code);
                if (e.Code == ErrorCode.ProposalExpired) Assert.AreEqual(late.MatchId, e.Details<ProposalExpiredError>().MatchId);
                var timeout = toms.Next<MatchCancelledMessage>(m => m.MatchId == late.MatchId);
                Assert.AreEqual("TIMEOUT", timeout.Reason);
            }
            finally
            {
                toms.Connection.Close();
                umas.Connection.Close();
            }
        }

        [Test]
        public void AttributeRefusals()
        {
            var writer = stack.Client("game-server", AttributesScope);
            var stored = Sync.Run(writer.AttributesAsync("wes", new TrustedAttributesRequest { Attributes = new Dictionary<string, object> { { "platform", "pc" } } }));
            Assert.AreEqual("wes", stored.PlayerId);
            Assert.AreEqual("pc", stored.Attributes["platform"]);
            Refused(() => stack.Client("wes").AttributesAsync("wes", new TrustedAttributesRequest { Attributes = new Dictionary<string, object>() }), ErrorCode.Forbidden, 403);
            var invalid = Refused(() => writer.AttributesAsync("wes", new TrustedAttributesRequest { Attributes = new Dictionary<string, object> { { "modes", new[] { "ctf" } } } }), ErrorCode.InvalidAttributes, 400);
            Assert.AreEqual("modes", invalid.Details<InvalidAttributesError>().Attribute);
            var wes = stack.Client("wes");
            var missing = Refused(() => wes.JoinAsync(new JoinRequest { WorldType = "crossmode" }), ErrorCode.InvalidAttributes, 400);
            Assert.AreEqual("modes", missing.Details<InvalidAttributesError>().Attribute, "a required client attribute left out");
            // A trusted attribute the store holds none of for the player.
            var required = Refused(() => stack.Client("wyn").JoinAsync(new JoinRequest { WorldType = "crossmode", Attributes = new Dictionary<string, object> { { "modes", new[] { "ctf" } } } }), ErrorCode.AttributesRequired, 409);
            Assert.AreEqual("platform", required.Details<AttributesRequiredError>().Attribute);
            Refused(() => wes.JoinAsync(new JoinRequest { WorldType = "crossmode", Attributes = new Dictionary<string, object> { { "modes", new[] { "golf" } } } }), ErrorCode.InvalidAttributes, 400);

            var xia = stack.Client("xia");
            var party = Sync.Run(xia.CreatePartyAsync(new CreatePartyRequest { WorldType = "builds", Members = new[] { "yan" }, Attributes = new Dictionary<string, object> { { "build", "1.0" } } }));
            var conflict = Refused(() => stack.Client("yan").JoinPartyAsync(party.Party.PartyId, new JoinPartyRequest { Attributes = new Dictionary<string, object> { { "build", "2.0" } } }), ErrorCode.AttributesConflict, 409);
            Assert.AreEqual("build", conflict.Details<AttributesConflictError>().Attribute);
            Sync.Run(xia.CancelPartyAsync(party.Party.PartyId));
        }

        [Test]
        public void RedisUnavailable()
        {
            // A stack on a redis-server of the test's own, which then stops.
            int port;
            var listener = new TcpListener(IPAddress.Loopback, 0);
            listener.Start();
            port = ((IPEndPoint)listener.LocalEndpoint).Port;
            listener.Stop();
            var redisBin = Environment.GetEnvironmentVariable("MM_REDIS_SERVER") ?? "redis-server";
            var redis = Process.Start(new ProcessStartInfo(redisBin, "--port " + port + " --bind 127.0.0.1 --save \"\" --appendonly no")
            {
                UseShellExecute = false,
                RedirectStandardOutput = true,
            });
            Stack down = null;
            try
            {
                Eventually.Wait(() => { try { using (var c = new TcpClient("127.0.0.1", port)) return true; } catch (SocketException) { return false; } }, ok => ok, TimeSpan.FromSeconds(10), "redis-server listening");
                down = Stack.Start(new Dictionary<string, string> { { "MM_WORLDS", "w1:2" }, { "REDIS_URL", "redis://127.0.0.1:" + port } });
                var zed = down.Client("zed");
                Assert.AreEqual("IDLE", Sync.Run(zed.MyStatusAsync()).Status);
                redis.Kill();
                redis.WaitForExit();
                Refused(() => zed.JoinAsync(new JoinRequest { WorldType = "w1" }), ErrorCode.RedisUnavailable, 503);
            }
            finally
            {
                if (down != null) down.Dispose();
                if (!redis.HasExited) redis.Kill();
            }
        }
    }
}
