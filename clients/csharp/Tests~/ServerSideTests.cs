// The game servers' and operators' side through the SDK against a real
// local stack: an assignment's and a result's refusals, a backfill
// (refused before the assignment, renewed, filled by a join: the newcomer
// hears MATCH_FOUND with backfill and MATCH_ASSIGNED; cancelled; its
// refusals), an avoid list, and every operator route (tickets, matches, a
// player, the audit, removing a ticket: TICKET_REMOVED; cancelling a
// proposal: MATCH_CANCELLED; finishing and voiding a match: MATCH_RESULT).
using System;
using System.Collections.Generic;
using System.Linq;
using Matchmaking.Client;
using NUnit.Framework;

namespace Matchmaking.Client.Tests
{
    [TestFixture]
    public class ServerSideTests
    {
        const string ServerScope = "matchmaking/server";
        const string ReadScope = "matchmaking/admin.read";
        const string ActScope = "matchmaking/admin.act";
        const string Rules = @"{
          ""servers"": { ""scope"": ""matchmaking/server"" },
          ""blockLists"": { ""maxEntries"": 10 },
          ""admin"": { ""readScope"": ""matchmaking/admin.read"", ""actionScope"": ""matchmaking/admin.act"" },
          ""worlds"": [
            { ""name"": ""pairs"", ""teamSize"": 2 },
            { ""name"": ""teams"", ""teamSize"": 1, ""teams"": 2 },
            { ""name"": ""rc"", ""teamSize"": 2, ""readyCheck"": { ""acceptSeconds"": 30, ""declineCooldownSeconds"": 1 } }
          ]
        }";

        Stack stack;
        MatchmakingClient server;

        [TestFixtureSetUp]
        public void StartStack()
        {
            Coverage.Fixtures.Add("ServerSideTests");
            stack = Stack.Start(new Dictionary<string, string> { { "MM_RULES", Rules }, { "MM_DEMO_ALLOCATOR", "false" } });
            server = stack.Client("allocator", ServerScope);
        }

        [TestFixtureTearDown]
        public void StopStack() { if (stack != null) stack.Dispose(); }

        string Match(string world, string a, string b)
        {
            Assert.AreEqual("QUEUED", Sync.Run(stack.Client(a).JoinAsync(new JoinRequest { WorldType = world })).Status);
            var matched = Sync.Run(stack.Client(b).JoinAsync(new JoinRequest { WorldType = world }));
            Assert.AreEqual("MATCHED", matched.Status, matched.ToJson());
            return matched.AsMatchedState().Match.MatchId;
        }

        [Test]
        public void BackfillFromTheServerSide()
        {
            var matchId = Match("pairs", "a1", "a2");
            Refused(() => server.BackfillAsync(matchId, new BackfillRequest { Teams = new[] { new[] { "a1" } } }), ErrorCode.MatchNotAssigned, 409);
            Refused(() => server.AssignAsync(matchId, new AssignmentRequest { Connection = "203.0.113.9:7777", Players = new Dictionary<string, PlayerSeatRequest> { { "stranger", new PlayerSeatRequest { Token = "t" } } } }), ErrorCode.InvalidAssignment, 400);
            Sync.Run(server.AssignAsync(matchId, new AssignmentRequest { Connection = "203.0.113.9:7777" }));
            Refused(() => server.BackfillKeepaliveAsync(matchId), ErrorCode.BackfillNotFound, 404);
            var invalid = Refused(() => server.BackfillAsync(matchId, new BackfillRequest { Teams = new[] { new[] { "a1", "stranger" } } }), ErrorCode.InvalidBackfill, 400);
            Assert.AreEqual("teams", invalid.Details<InvalidBackfillError>().Field);
            Refused(() => stack.Client("a1").BackfillAsync(matchId, new BackfillRequest { Teams = new[] { new[] { "a1" } } }), ErrorCode.Forbidden, 403);
            Refused(() => server.BackfillAsync("18f3a-404", new BackfillRequest { Teams = new[] { new[] { "a1" } } }), ErrorCode.MatchNotFound, 404);

            // a2 dropped: the match asks for one player.
            var open = Sync.Run(server.BackfillAsync(matchId, new BackfillRequest { Teams = new[] { new[] { "a1" } } }));
            CollectionAssert.AreEqual(new[] { 1L }, open.Backfill.OpenSeats);
            Assert.AreEqual(0, open.Backfill.Fills);
            var renewed = Sync.Run(server.BackfillKeepaliveAsync(matchId));
            Assert.AreEqual(matchId, renewed.Backfill.MatchId);
            Assert.AreEqual(1, Sync.Run(server.MatchAsync(matchId)).AsServerMatchView().Backfill.OpenSeats[0]);

            // a3 joins the world: the seat is theirs.
            var a3 = new Recorder(stack.Connection("a3"));
            try
            {
                Sync.Run(a3.Connection.ConnectAsync());
                var joined = Sync.Run(stack.Client("a3").JoinAsync(new JoinRequest { WorldType = "pairs" }));
                var found = a3.Next<MatchFoundMessage>(m => m.MatchId == matchId);
                Assert.AreEqual(true, found.Backfill, joined.ToJson());
                var seat = a3.Next<MatchAssignedMessage>(m => m.MatchId == matchId);
                Assert.AreEqual("203.0.113.9:7777", seat.Assignment.Connection);
            }
            finally
            {
                a3.Connection.Close();
            }
            var view = Sync.Run(server.MatchAsync(matchId)).AsServerMatchView();
            CollectionAssert.Contains(view.Match.Participants, "a3");
            Refused(() => server.CancelBackfillAsync(matchId), ErrorCode.BackfillNotFound, 404);

            // A new backfill (a1 left too), cancelled at once.
            var again = Sync.Run(server.BackfillAsync(matchId, new BackfillRequest { Teams = new[] { new[] { "a3" } }, Fills = 1 }));
            Assert.AreEqual(1, again.Backfill.Fills);
            var cancelled = Sync.Run(server.CancelBackfillAsync(matchId));
            Assert.AreEqual(matchId, cancelled.Backfill.MatchId);
            Refused(() => server.CancelBackfillAsync(matchId), ErrorCode.BackfillNotFound, 404);

            var invalidResult = Refused(() => server.ReportAsync(matchId, new ResultRequest { TeamRanks = new[] { 1L, 2L, 3L } }), ErrorCode.InvalidResult, 400);
            Assert.AreEqual("result", invalidResult.Details<InvalidResultError>().Field);
            Sync.Run(server.ReportAsync(matchId, new ResultRequest { Cancelled = true }));
            Refused(() => server.BackfillAsync(matchId, new BackfillRequest { Teams = new[] { new[] { "a3" } } }), ErrorCode.MatchFinished, 409);
        }

        [Test]
        public void AvoidLists()
        {
            var stored = Sync.Run(server.AvoidAsync("b1", new AvoidRequest { Players = new[] { "b2" } }));
            CollectionAssert.AreEqual(new[] { "b2" }, stored.Players);
            var cleared = Sync.Run(server.AvoidAsync("b1", new AvoidRequest { Players = new string[0] }));
            CollectionAssert.AreEqual(new[] { "b2" }, cleared.PreviousPlayers);
            Refused(() => stack.Client("b1").AvoidAsync("b1", new AvoidRequest { Players = new string[0] }), ErrorCode.Forbidden, 403);
        }

        [Test]
        public void OperatorRoutes()
        {
            var reader = stack.Client("operator", ReadScope);
            var actor = stack.Client("operator", ActScope);
            Refused(() => stack.Client("c1").AdminTicketsAsync("pairs"), ErrorCode.Forbidden, 403);

            // A waiting ticket, seen and removed: its player hears TICKET_REMOVED.
            var c1 = new Recorder(stack.Connection("c1"));
            var d1 = new Recorder(stack.Connection("d1"));
            var d2 = new Recorder(stack.Connection("d2"));
            try
            {
                Sync.Run(c1.Connection.ConnectAsync());
                Sync.Run(d1.Connection.ConnectAsync());
                Sync.Run(d2.Connection.ConnectAsync());
                Sync.Run(stack.Client("c1").JoinAsync(new JoinRequest { WorldType = "pairs" }));
                c1.Next<QueuedMessage>(m => m.WorldType == "pairs");
                var tickets = Sync.Run(reader.AdminTicketsAsync("pairs", limit: 10));
                Assert.AreEqual(1, tickets.Waiting);
                CollectionAssert.AreEqual(new[] { "c1" }, tickets.Tickets[0].Players);
                var player = Sync.Run(reader.AdminPlayerAsync("c1"));
                Assert.AreEqual("c1", player.PlayerId);
                Assert.AreEqual(1, player.Connections);
                var removed = Sync.Run(actor.AdminRemoveTicketAsync("pairs", "c1", new AdminActionRequest { Note = "test" }));
                Assert.IsTrue(removed.Changed);
                Assert.AreEqual("OPERATOR", c1.Next<TicketRemovedMessage>(m => m.WorldType == "pairs").Reason);

                // A proposal cancelled by the operator: MATCH_CANCELLED, everyone requeued.
                Assert.AreEqual("QUEUED", Sync.Run(stack.Client("d1").JoinAsync(new JoinRequest { WorldType = "rc" })).Status);
                var proposed = Sync.Run(stack.Client("d2").JoinAsync(new JoinRequest { WorldType = "rc" }));
                var proposalId = proposed.Proposed.Proposal.MatchId;
                var page = Sync.Run(reader.AdminMatchesAsync("rc"));
                Assert.IsTrue(page.Proposals.Any(p => p.Raw["matchId"] as string == proposalId), page.ToJson());
                var cancelled = Sync.Run(actor.AdminCancelProposalAsync(proposalId, new AdminActionRequest { Note = "test" }));
                Assert.IsTrue(cancelled.Changed);
                var told = d1.Next<MatchCancelledMessage>(m => m.MatchId == proposalId);
                Assert.AreEqual("OPERATOR", told.Reason);
                Assert.IsTrue(told.Requeued);
                Sync.Run(stack.Client("d1").LeaveAsync(new LeaveRequest { WorldType = "rc" }));
            }
            catch (MatchmakingException e) when (e.Code == ErrorCode.NotQueued)
            {
                Assert.Fail("d1 was not requeued: " + e.Message);
            }
            finally
            {
                c1.Connection.Close();
                d1.Connection.Close();
                d2.Connection.Close();
            }

            // A match finished, another voided, by the operator: the players hear MATCH_RESULT.
            var e1 = new Recorder(stack.Connection("e1"));
            try
            {
                Sync.Run(e1.Connection.ConnectAsync());
                var finishedId = Match("teams", "e1", "e2");
                var finished = Sync.Run(actor.AdminFinishMatchAsync(finishedId, new AdminFinishRequest { Result = new AdminFinishRequestResult { TeamRanks = new[] { 1L, 2L } }, Note = "test" }));
                Assert.IsTrue(finished.Changed);
                Assert.AreEqual("FINISHED", finished.State);
                CollectionAssert.AreEqual(new[] { 1L, 2L }, e1.Next<MatchResultMessage>(m => m.MatchId == finishedId).Result.TeamRanks);
                var voidedId = Match("teams", "e1", "e3");
                var voided = Sync.Run(actor.AdminVoidMatchAsync(voidedId, new AdminActionRequest { Note = "test" }));
                Assert.IsTrue(voided.Changed);
                Assert.AreEqual(true, e1.Next<MatchResultMessage>(m => m.MatchId == voidedId).Result.Cancelled);
            }
            finally
            {
                e1.Connection.Close();
            }
            var matches = Sync.Run(reader.AdminMatchesAsync("teams", limit: 10));
            Assert.GreaterOrEqual(matches.Matches.Count, 2);
            var audit = Sync.Run(reader.AdminAuditAsync(limit: 50));
            // The four actions above, each by "operator" with its note.
            Assert.AreEqual(4, audit.Entries.Count(x => x.Operator == "operator" && x.Note == "test" && x.Changed), audit.ToJson());
        }

        static MatchmakingException Refused(Func<System.Threading.Tasks.Task> call, string code, int status)
        {
            var e = Sync.Throws<MatchmakingException>(call);
            Assert.AreEqual(code, e.Code, e.Message);
            Assert.AreEqual(status, e.Status, e.Message);
            return e;
        }
    }
}
