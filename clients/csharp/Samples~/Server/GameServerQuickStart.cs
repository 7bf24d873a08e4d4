// Server quick start: a C# game server (or allocator) names a formed
// match's server, then reports the result when the game ends. Its token
// carries the rule set's servers.scope. Both calls are safe to retry: the
// same assignment or result again answers Changed == false.
using System.Collections.Generic;
using System.Threading.Tasks;
using Matchmaking.Client;

public static class GameServerQuickStart
{
    public static async Task<MatchReported> AssignAsync(MatchmakingClient server, string matchId, string address)
    {
        // Where the players connect (each hears MATCH_ASSIGNED; Players can give each a seat token).
        return await server.AssignAsync(matchId, new AssignmentRequest
        {
            Connection = address,
            Properties = new Dictionary<string, object> { { "map", "harbor" } },
        });
    }

    public static async Task<MatchReported> ReportAsync(MatchmakingClient server, MatchRecord match, string winner)
    {
        // Each team's place (1 = won), in the record's team order; rated worlds move every rating.
        var ranks = new List<long>();
        foreach (IList<string> team in match.Teams) ranks.Add(team.Contains(winner) ? 1 : 2);
        try
        {
            return await server.ReportAsync(match.MatchId, new ResultRequest { TeamRanks = ranks });
        }
        catch (MatchmakingException e) when (e.Code == ErrorCode.ResultConflict)
        {
            // Another result is stored (an operator's, say): read it.
            throw new System.InvalidOperationException("match " + match.MatchId + " already ended: " + e.Msg, e);
        }
    }
}
