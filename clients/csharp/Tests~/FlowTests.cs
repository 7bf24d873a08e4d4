// The whole flow through the SDK against a real local stack: two parties of
// two queue in a rated 2 x 2 world with a ready check, everyone accepts,
// MATCH_FOUND; a game server (a token with servers.scope) assigns the match
// a server (MATCH_ASSIGNED, each with their own seat), a reconnect brings a
// repeat of it that the SDK drops, a connection opened later is told its
// seat (the connect-race replay), and the result moves every rating
// (MATCH_RESULT with each player's change).
using System;
using System.Collections.Generic;
using System.Linq;
using Matchmaking.Client;
using NUnit.Framework;

namespace Matchmaking.Client.Tests
{
    [TestFixture]
    public class FlowTests
    {
        internal const string ServerScope = "matchmaking/server";
        internal const string WriterScope = "matchmaking/ratings.write";
        static readonly string[] Players = { "ann", "ben", "cat", "dan" };
        internal const string Rules = @"{
          ""ratings"": { ""claim"": ""mmr"", ""default"": 1500, ""min"": 0, ""max"": 5000, ""writerScope"": ""matchmaking/ratings.write"" },
          ""servers"": { ""scope"": ""matchmaking/server"" },
          ""worlds"": [
            { ""name"": ""squads"", ""teamSize"": 2, ""teams"": 2, ""mode"": ""rating"",
              ""rating"": { ""baseWindow"": 200, ""widenPerSecond"": 10, ""maxWindow"": 400, ""relaxAfterSeconds"": 60 },
              ""readyCheck"": { ""acceptSeconds"": 30, ""declineCooldownSeconds"": 5 } }
          ]
        }";

        Stack stack;
        readonly Dictionary<string, MatchmakingClient> mm = new Dictionary<string, MatchmakingClient>();
        readonly Dictionary<string, Recorder> heard = new Dictionary<string, Recorder>();

        [TestFixtureSetUp]
        public void StartStack()
        {
            Coverage.Fixtures.Add("FlowTests");
            stack = Stack.Start(new Dictionary<string, string> { { "MM_RULES", Rules }, { "MM_DEMO_ALLOCATOR", "false" } });
            foreach (var name in Players)
            {
                mm[name] = stack.Client(name);
                heard[name] = new Recorder(stack.Connection(name));
            }
            foreach (var name in Players) Sync.Run(heard[name].Connection.ConnectAsync());
        }

        [TestFixtureTearDown]
        public void StopStack()
        {
            foreach (var r in heard.Values) r.Connection.Close();
            if (stack != null) stack.Dispose();
        }

        [Test]
        public void TwoPartiesAReadyCheckAMatchItsServerAndItsResult()
        {
            // Trusted ratings first (a token with the writer scope); a player may not.
            var writer = stack.Client("rating-service", WriterScope);
            for (int i = 0; i < Players.Length; i++)
            {
                var stored = Sync.Run(writer.RatingAsync(Players[i], new RatingRequest { Rating = 1500 + 10 * i, WorldType = "squads" }));
                Assert.AreEqual(1500 + 10 * i, stored.Rating);
            }
            var forbidden = Sync.Throws<MatchmakingException>(() => mm["ann"].RatingAsync("ann", new RatingRequest { Rating = 5000 }));
            Assert.AreEqual(ErrorCode.Forbidden, forbidden.Code);
            Assert.AreEqual(403, forbidden.Status);
            Assert.AreEqual(WriterScope, forbidden.Details<ForbiddenError>().Required);

            // ann invites ben; ben hears the invitation and joins: the party queues.
            var created = Sync.Run(mm["ann"].CreatePartyAsync(new CreatePartyRequest { WorldType = "squads", Members = new[] { "ben" } }));
            Assert.AreEqual("PARTY", created.Status);
            var partyId = created.Party.PartyId;
            var invitation = heard["ben"].Next<PartyUpdateMessage>(m => m.Party.PartyId == partyId);
            CollectionAssert.AreEqual(new[] { "ann:True", "ben:False" }, invitation.Party.Members.Select(m => m.PlayerId + ":" + m.Joined).ToArray());
            var queued = Sync.Run(mm["ben"].JoinPartyAsync(partyId));
            Assert.AreEqual("QUEUED", queued.Status, queued.ToJson());
            Assert.IsNotNull(queued.Queued);
            Assert.IsNull(queued.Proposed);
            heard["ann"].Next<PartyUpdateMessage>(m => m.Party.PartyId == partyId && m.Party.State == "QUEUED");

            // cat and dan make the second party, which completes a match: a proposal.
            var second = Sync.Run(mm["cat"].CreatePartyAsync(new CreatePartyRequest { WorldType = "squads", Members = new[] { "dan" } }));
            var secondId = second.Party.PartyId;
            heard["dan"].Next<PartyUpdateMessage>(m => m.Party.PartyId == secondId);
            var proposed = Sync.Run(mm["dan"].JoinPartyAsync(secondId, new JoinPartyRequest()));
            Assert.AreEqual("PROPOSED", proposed.Status, proposed.ToJson());
            var matchId = proposed.Proposed.Proposal.MatchId;
            foreach (var name in Players)
            {
                var asked = heard[name].Next<MatchProposedMessage>(m => m.MatchId == matchId);
                CollectionAssert.AreEquivalent(Players, asked.Participants);
                Assert.Greater(asked.AcceptBy, NowMs() - 60000);
            }
            // While proposed, another join is refused with the proposal.
            var pending = Sync.Throws<MatchmakingException>(() => mm["ann"].JoinAsync(new JoinRequest { WorldType = "squads" }));
            Assert.AreEqual(ErrorCode.ProposalPending, pending.Code);
            Assert.AreEqual(matchId, pending.Details<ProposalPendingError>().MatchId);

            // Everyone accepts: progress for the first three, MATCHED for the last.
            for (int i = 0; i < Players.Length; i++)
            {
                var answer = Sync.Run(mm[Players[i]].AcceptAsync(new AcceptRequest { MatchId = matchId, Accept = true }));
                if (i < Players.Length - 1)
                {
                    Assert.AreEqual("ACCEPTED", answer.Status, answer.ToJson());
                    Assert.AreEqual(i + 1, answer.Accepted.Accepted);
                    foreach (var other in Players)
                    {
                        int n = i + 1;
                        var progress = heard[other].Next<MatchAcceptProgressMessage>(m => m.MatchId == matchId && m.Accepted == n);
                        Assert.AreEqual(4, progress.Total);
                    }
                }
                else
                {
                    Assert.AreEqual("MATCHED", answer.Status, answer.ToJson());
                }
            }
            foreach (var name in Players)
            {
                var found = heard[name].Next<MatchFoundMessage>(m => m.MatchId == matchId);
                Assert.AreEqual("squads", found.WorldType);
                var teams = found.Teams.Select(t => string.Join("+", t.OrderBy(p => p).ToArray())).OrderBy(t => t).ToArray();
                CollectionAssert.AreEqual(new[] { "ann+ben", "cat+dan" }, teams, "each party in one team");
                Assert.AreEqual(1530.0, found.Ratings["dan"]);
            }
            var status = Sync.Run(mm["ann"].MyStatusAsync());
            Assert.AreEqual("MATCHED", status.Status);
            Assert.AreEqual("FORMED", status.Matched.Match.State);

            // The allocator: a player's token may not assign; the server's may, once.
            var server = stack.Client("allocator", ServerScope);
            var assignment = new AssignmentRequest
            {
                Connection = "203.0.113.7:7777",
                Properties = new Dictionary<string, object> { { "map", "harbor" } },
                Players = Players.ToDictionary(p => p, p => new PlayerSeatRequest { Token = "seat-" + p }),
            };
            var notServer = Sync.Throws<MatchmakingException>(() => mm["ann"].AssignAsync(matchId, assignment));
            Assert.AreEqual(ErrorCode.Forbidden, notServer.Code);
            Assert.AreEqual(ServerScope, notServer.Details<ForbiddenError>().Required);
            var assigned = Sync.Run(server.AssignAsync(matchId, assignment));
            Assert.AreEqual("ASSIGNED", assigned.State);
            Assert.IsTrue(assigned.Changed);
            Assert.IsFalse(Sync.Run(server.AssignAsync(matchId, assignment)).Changed, "the same assignment again");
            var conflict = Sync.Throws<MatchmakingException>(() => server.AssignAsync(matchId, new AssignmentRequest { Connection = "198.51.100.1:1" }));
            Assert.AreEqual(ErrorCode.AssignmentConflict, conflict.Code);
            Assert.AreEqual(409, conflict.Status);
            Assert.AreEqual("ASSIGNED", conflict.Details<AssignmentConflictError>().State);
            foreach (var name in Players)
            {
                var seat = heard[name].Next<MatchAssignedMessage>(m => m.MatchId == matchId);
                Assert.AreEqual("203.0.113.7:7777", seat.Assignment.Connection);
                Assert.AreEqual("seat-" + name, seat.Assignment.Token);
                Assert.AreEqual("harbor", ((JsonObject)seat.Assignment.Properties)["map"]);
            }
            // The match as a player and as the server see it.
            var view = Sync.Run(mm["ben"].MatchAsync(matchId)).AsMatchView();
            Assert.AreEqual("ASSIGNED", view.State);
            Assert.AreEqual("seat-ben", view.Assignment.Token);
            var serverView = Sync.Run(server.MatchAsync(matchId)).AsServerMatchView();
            Assert.AreEqual(matchId, serverView.Match.MatchId);
            Assert.AreEqual("ASSIGNED", serverView.State);

            // While the game is on, a player may not queue (a typed 409 with the seat).
            var inMatch = Sync.Throws<MatchmakingException>(() => mm["ann"].JoinAsync(new JoinRequest { WorldType = "squads" }));
            Assert.AreEqual(ErrorCode.InMatch, inMatch.Code);
            Assert.AreEqual(matchId, inMatch.Details<InMatchError>().MatchId);

            // A socket that opens while the game is on is told again (at least
            // once): the SDK drops the repeat, so MATCH_ASSIGNED is delivered once.
            var ann = heard["ann"].Connection;
            var repeat = ann.WaitForAsync<MatchAssignedMessage>(m => m.MatchId == matchId, Recorder.Wait, duplicates: true);
            int opens = 0;
            ann.Opened += reconnected => { if (reconnected) opens++; };
            ann.Reconnect();
            Assert.AreEqual(matchId, Sync.Run(repeat).MatchId);
            Assert.AreEqual(1, opens);
            // A client that crashed (a new connection, nothing remembered) finds its game again.
            var fresh = new Recorder(stack.Connection("ann"));
            try
            {
                Sync.Run(fresh.Connection.ConnectAsync());
                var replay = fresh.Next<MatchAssignedMessage>(m => m.MatchId == matchId);
                Assert.AreEqual("seat-ann", replay.Assignment.Token);
            }
            finally
            {
                fresh.Connection.Close();
            }

            // The result: ann and ben's team wins; every rating moves.
            var ranks = assigned.Match.Teams.Select(t => t.Contains("ann") ? 1L : 2L).ToList();
            var reported = Sync.Run(server.ReportAsync(matchId, new ResultRequest { TeamRanks = ranks }));
            Assert.AreEqual("FINISHED", reported.State);
            foreach (var name in Players)
            {
                var result = heard[name].Next<MatchResultMessage>(m => m.MatchId == matchId);
                var change = result.Rating;
                Assert.IsNotNull(change, name + " hears their own rating change");
                bool won = name == "ann" || name == "ben";
                Assert.IsTrue(won ? change.After > change.Before : change.After < change.Before, name + ": " + change.ToJson());
                Assert.AreEqual(1, change.Games);
            }
            var again = Sync.Throws<MatchmakingException>(() => server.ReportAsync(matchId, new ResultRequest { Cancelled = true }));
            Assert.AreEqual(ErrorCode.ResultConflict, again.Code);
            var finished = Sync.Throws<MatchmakingException>(() => server.AssignAsync(matchId, new AssignmentRequest { Connection = "198.51.100.1:1" }));
            Assert.AreEqual(ErrorCode.MatchFinished, finished.Code);
            var done = Sync.Run(mm["ann"].MyStatusAsync());
            Assert.AreEqual("FINISHED", done.Matched.Match.State, done.ToJson());
            Assert.AreEqual("QUEUED", Sync.Run(mm["ann"].JoinAsync(new JoinRequest { WorldType = "squads" })).Status, "a finished match frees its players");
            var left = Sync.Run(mm["ann"].LeaveAsync(new LeaveRequest { WorldType = "squads" }));
            Assert.AreEqual("squads", left.WorldType);

            // Each message was delivered once per player, whatever the outbox repeated.
            foreach (var name in Players)
            {
                Assert.AreEqual(1, heard[name].All<MatchProposedMessage>(m => m.MatchId == matchId).Count, name + ": one MATCH_PROPOSED");
                Assert.AreEqual(1, heard[name].All<MatchFoundMessage>(m => m.MatchId == matchId).Count, name + ": one MATCH_FOUND");
                Assert.AreEqual(1, heard[name].All<MatchAssignedMessage>(m => m.MatchId == matchId).Count, name + ": one MATCH_ASSIGNED");
                Assert.AreEqual(1, heard[name].All<MatchResultMessage>(m => m.MatchId == matchId).Count, name + ": one MATCH_RESULT");
            }
        }

        internal static long NowMs() { return (long)(DateTime.UtcNow - new DateTime(1970, 1, 1)).TotalMilliseconds; }
    }
}
