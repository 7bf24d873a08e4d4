// Unity quick start: joins a world and logs the match. Add it to any
// GameObject of a scene, set the URLs (the local stack: ./scripts/run-local.sh),
// press Play. Handlers run on the main thread: the socket's events wait in
// a QueueDispatcher that Update drains once per frame.
using Matchmaking.Client;
using UnityEngine;

public class MatchmakingQuickStart : MonoBehaviour
{
    public string httpUrl = "http://127.0.0.1:3000";
    public string wsUrl = "ws://127.0.0.1:3001";
    public string playerId = "alice";
    public string worldType = "world1";

    readonly QueueDispatcher events = new QueueDispatcher();
    MatchmakingClient client;
    Connection socket;

    async void Start()
    {
        // The local stack's development tokens; in a game, your identity provider's JWT.
        TokenProvider token = DevTokens.Source(httpUrl, playerId);
        client = new MatchmakingClient(httpUrl, token);
        socket = new Connection(new ConnectionOptions(wsUrl, token) { Dispatcher = events });
        socket.MatchFound += m => Debug.Log("matched " + m.MatchId + ": " + string.Join(", ", m.Participants));
        socket.MatchAssigned += m => Debug.Log("play on " + m.Assignment.Connection);
        socket.Closed += c => Debug.Log("socket closed: " + c);
        await socket.ConnectAsync();
        try
        {
            JoinResult joined = await client.JoinAsync(new JoinRequest { WorldType = worldType });
            Debug.Log("join: " + joined.Status);
        }
        catch (MatchmakingException e) when (e.Code == ErrorCode.AlreadyQueued)
        {
            Debug.Log("already queued at position " + e.Details<AlreadyQueuedError>().Position + "; waiting for MATCH_FOUND");
        }
        catch (MatchmakingException e) when (e.Code == ErrorCode.InMatch)
        {
            Debug.Log("back to match " + e.Details<InMatchError>().MatchId);
        }
    }

    void Update() { events.Drain(); }

    void OnDestroy()
    {
        if (socket != null) socket.Close();
        if (client != null) client.Dispose();
    }
}
