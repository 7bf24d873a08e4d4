using System;
using System.Collections.Generic;
using System.IO;
using System.Net.WebSockets;
using System.Text;
using System.Threading;
using System.Threading.Tasks;

namespace Matchmaking.Client
{
    /// <summary>How a <see cref="Connection"/> behaves.</summary>
    public sealed class ConnectionOptions
    {
        public ConnectionOptions(string wsUrl, TokenProvider token)
        {
            WsUrl = wsUrl;
            Token = token;
            Reconnect = true;
            InitialDelayMs = 500;
            MaxDelayMs = 30000;
            Factor = 2;
            Jitter = true;
            MaxAttempts = int.MaxValue;
            HeartbeatSeconds = 60;
            PongTimeoutMs = 10000;
            Dedupe = true;
        }

        /// <summary>The WebSocket API's URL, e.g. <c>wss://abc.execute-api.eu-west-1.amazonaws.com/prod</c> or <c>ws://127.0.0.1:3001</c>.</summary>
        public string WsUrl { get; set; }
        /// <summary>The player's JWT; asked again before every (re)connect, with refresh after a connect that failed.</summary>
        public TokenProvider Token { get; set; }
        /// <summary>Reconnect whenever the socket closes without <see cref="Connection.Close"/> (default true).</summary>
        public bool Reconnect { get; set; }
        /// <summary>The first delay, ms (500).</summary>
        public int InitialDelayMs { get; set; }
        /// <summary>The longest delay, ms (30 000).</summary>
        public int MaxDelayMs { get; set; }
        /// <summary>Each failed attempt multiplies the delay by this (2).</summary>
        public double Factor { get; set; }
        /// <summary>Wait a random 50–100 % of the delay, so clients do not return in step (true).</summary>
        public bool Jitter { get; set; }
        /// <summary>Give up after this many failed attempts in a row (default: never).</summary>
        public int MaxAttempts { get; set; }
        /// <summary>The heartbeat interval until the server's first PONG names one (60 s).</summary>
        public int HeartbeatSeconds { get; set; }
        /// <summary>A heartbeat unanswered this long means the socket is dead: reconnect (10 000 ms).</summary>
        public int PongTimeoutMs { get; set; }
        /// <summary>Drop the repeats of at-least-once delivery (true; see <see cref="Deduper"/>).</summary>
        public bool Dedupe { get; set; }
        /// <summary>Where handlers run (default: at once, on the socket's thread). Unity: a <see cref="QueueDispatcher"/> drained in Update, or a <see cref="SynchronizationContextDispatcher"/>.</summary>
        public IEventDispatcher Dispatcher { get; set; }
    }

    /// <summary>Why the socket closed.</summary>
    public sealed class CloseInfo
    {
        public CloseInfo(int code, string reason, bool willReconnect) { Code = code; Reason = reason; WillReconnect = willReconnect; }
        public int Code { get; private set; }
        public string Reason { get; private set; }
        /// <summary>False after <see cref="Connection.Close"/>, or when attempts ran out.</summary>
        public bool WillReconnect { get; private set; }
        public override string ToString() { return Code + " " + Reason + (WillReconnect ? " (reconnecting)" : ""); }
    }

    public enum ConnectionState { Idle, Connecting, Open, Reconnecting, Closed }

    /// <summary>
    /// A player's WebSocket connection: authenticates with <c>?token=</c>,
    /// sends a heartbeat (<c>{"action":"ping"}</c>) at once and then every
    /// <c>heartbeatSeconds</c> the server's PONG names, reconnects with
    /// exponential backoff whenever the socket closes (asking the token
    /// provider each time), and raises one typed event per server message
    /// (the events are generated per AsyncAPI message type:
    /// <c>MatchFound</c>, <c>MatchAssigned</c>, ...), without the repeats
    /// of at-least-once delivery (<see cref="Duplicate"/> gets those).
    /// </summary>
    public sealed partial class Connection : IDisposable
    {
        static readonly byte[] Ping = Encoding.UTF8.GetBytes("{\"action\":\"ping\"}");
        readonly ConnectionOptions options;
        readonly IEventDispatcher dispatcher;
        readonly Deduper deduper;
        readonly object gate = new object();
        readonly List<TaskCompletionSource<bool>> openWaiters = new List<TaskCompletionSource<bool>>();
        readonly List<Func<ServerMessage, bool, bool>> observers = new List<Func<ServerMessage, bool, bool>>();
        readonly SemaphoreSlim sendLock = new SemaphoreSlim(1, 1);
        readonly Random random = new Random();
        bool wanted;
        // Each ConnectAsync that starts the loop starts a new generation; a loop of an older one
        // (asleep in its backoff when Close and ConnectAsync came) ends instead of opening a second socket.
        int generation;
        bool everOpened;
        int attempt;
        ClientWebSocket socket;
        CancellationTokenSource session;
        CancellationTokenSource pongTimer;
        CancellationTokenSource heartbeatWake;
        int? dropDelayMs;
        string dropReason;
        int dropCode;

        public Connection(ConnectionOptions options)
        {
            if (options == null) throw new ArgumentNullException("options");
            if (options.WsUrl == null || options.Token == null) throw new ArgumentException("WsUrl and Token are required");
            this.options = options;
            dispatcher = options.Dispatcher ?? ImmediateDispatcher.Instance;
            deduper = options.Dedupe ? new Deduper() : null;
            HeartbeatSeconds = options.HeartbeatSeconds;
            State = ConnectionState.Idle;
        }

        /// <summary>A connection with the default options.</summary>
        public Connection(string wsUrl, TokenProvider token) : this(new ConnectionOptions(wsUrl, token)) { }

        public ConnectionState State { get; private set; }

        /// <summary>The heartbeat interval in use: the latest PONG's <c>heartbeatSeconds</c>.</summary>
        public int HeartbeatSeconds { get; private set; }

        /// <summary>How many heartbeats this connection sent (every socket).</summary>
        public int PingsSent { get { return pingsSent; } }
        int pingsSent;

        /// <summary>The socket opened (true: again, after a reconnect).</summary>
        public event Action<bool> Opened;
        /// <summary>The socket closed.</summary>
        public event Action<CloseInfo> Closed;
        /// <summary>The next attempt (1, 2, ...) starts in the given ms.</summary>
        public event Action<int, int> Reconnecting;
        /// <summary>Every new server message (repeats go to <see cref="Duplicate"/> instead).</summary>
        public event Action<ServerMessage> Message;
        /// <summary>A repeat (or stale copy) of a message already delivered, dropped.</summary>
        public event Action<ServerMessage> Duplicate;
        /// <summary>A frame that is not a JSON message: the plain-text heartbeat failure (<c>service unavailable</c>, <c>internal error</c>).</summary>
        public event Action<string> Text;
        /// <summary>Something failed (a token provider that threw, a socket error); the connection carries on.</summary>
        public event Action<Exception> Error;

        /// <summary>Opens the socket; completes once it is open (retrying per the options meanwhile).</summary>
        public Task ConnectAsync()
        {
            var tcs = new TaskCompletionSource<bool>(TaskCreationOptions.RunContinuationsAsynchronously);
            lock (gate)
            {
                if (State == ConnectionState.Open) tcs.TrySetResult(true);
                else openWaiters.Add(tcs);
                if (!wanted)
                {
                    wanted = true;
                    attempt = 0;
                    int gen = ++generation;
                    Forget(Task.Run(() => RunAsync(gen)));
                }
            }
            return tcs.Task;
        }

        /// <summary>Closes the socket for good (no reconnect); <see cref="ConnectAsync"/> opens it again.</summary>
        public void Close()
        {
            ClientWebSocket ws;
            bool wasOpen;
            lock (gate)
            {
                if (!wanted) return;
                wanted = false;
                ws = socket;
                wasOpen = State == ConnectionState.Open;
                State = ConnectionState.Closed;
                if (session != null) session.Cancel();
                if (pongTimer != null) { pongTimer.Cancel(); pongTimer = null; }
            }
            // A close handshake in the background (never blocking the caller, e.g. Unity's main thread), then abort.
            if (ws != null) Forget(CloseGracefully(ws));
            if (wasOpen) Emit(() => { var h = Closed; if (h != null) h(new CloseInfo(1000, "client closed", false)); });
            SettleOpen(new InvalidOperationException("connection closed before it opened"));
        }

        public void Dispose() { Close(); }

        static async Task CloseGracefully(ClientWebSocket ws)
        {
            try
            {
                if (ws.State == WebSocketState.Open)
                {
                    var close = ws.CloseOutputAsync(WebSocketCloseStatus.NormalClosure, "client closed", CancellationToken.None);
                    await Task.WhenAny(close, Task.Delay(2000)).ConfigureAwait(false);
                }
            }
            catch (Exception) { }
            try { ws.Abort(); } catch (Exception) { }
        }

        /// <summary>Drops the socket and opens a new one at once (e.g. after the token changed).</summary>
        public void Reconnect() { Drop(4000, "client reconnect", 0); }

        /// <summary>Sends a heartbeat now (one is sent on every open and then on the server's interval anyway).</summary>
        public Task PingAsync() { return SendPingAsync(); }

        /// <summary>
        /// The next new message of type <typeparamref name="T"/> matching
        /// <paramref name="predicate"/> (from now on), within
        /// <paramref name="timeout"/>; independent of the dispatcher.
        /// </summary>
        public Task<T> WaitForAsync<T>(Func<T, bool> predicate, TimeSpan timeout, bool duplicates = false) where T : ServerMessage
        {
            var tcs = new TaskCompletionSource<T>(TaskCreationOptions.RunContinuationsAsynchronously);
            Func<ServerMessage, bool, bool> observer = (m, dup) =>
            {
                var t = m as T;
                if (t == null || dup != duplicates || (predicate != null && !predicate(t))) return false;
                tcs.TrySetResult(t);
                return true;
            };
            lock (observers) observers.Add(observer);
            var cts = new CancellationTokenSource(timeout);
            cts.Token.Register(() =>
            {
                lock (observers) observers.Remove(observer);
                tcs.TrySetException(new TimeoutException("no " + typeof(T).Name + " within " + timeout.TotalMilliseconds + " ms"));
            });
            return tcs.Task;
        }

        async Task RunAsync(int gen)
        {
            bool refreshToken = false;
            while (true)
            {
                lock (gate)
                {
                    if (!wanted || gen != generation) return;
                    State = everOpened || attempt > 0 ? ConnectionState.Reconnecting : ConnectionState.Connecting;
                }
                ClientWebSocket ws = null;
                bool opened = false;
                int closeCode = 1006;
                string closeReason = "";
                try
                {
                    var jwt = await options.Token(refreshToken, CancellationToken.None).ConfigureAwait(false);
                    var url = options.WsUrl + (options.WsUrl.Contains("?") ? "&" : "?") + "token=" + Uri.EscapeDataString(jwt);
                    ws = new ClientWebSocket();
                    lock (gate)
                    {
                        if (!wanted || gen != generation) { ws.Dispose(); return; }
                        socket = ws;
                        session = new CancellationTokenSource();
                        dropDelayMs = null;
                        dropReason = null;
                    }
                    using (var connectTimeout = new CancellationTokenSource(15000))
                    {
                        await ws.ConnectAsync(new Uri(url), connectTimeout.Token).ConfigureAwait(false);
                    }
                    opened = true;
                    refreshToken = false;
                    bool reconnected;
                    lock (gate)
                    {
                        if (!wanted || gen != generation) { ws.Abort(); return; }
                        reconnected = everOpened;
                        everOpened = true;
                        attempt = 0;
                        State = ConnectionState.Open;
                    }
                    Emit(() => { var h = Opened; if (h != null) h(reconnected); });
                    SettleOpen(null);
                    var token = session.Token;
                    Task heartbeat = HeartbeatLoop(ws, token);
                    await SendPingAsync().ConfigureAwait(false);
                    await ReceiveLoop(ws, token).ConfigureAwait(false);
                    GC.KeepAlive(heartbeat);
                    if (ws.CloseStatus.HasValue)
                    {
                        closeCode = (int)ws.CloseStatus.Value;
                        closeReason = ws.CloseStatusDescription ?? "";
                    }
                }
                catch (Exception e)
                {
                    bool deliberate;
                    lock (gate) deliberate = !wanted || gen != generation || dropReason != null;
                    if (!deliberate) EmitError(e);
                    if (!opened) refreshToken = true;
                }
                int? delayOverride;
                bool wasOpen;
                lock (gate)
                {
                    // A newer loop (Close, then ConnectAsync) owns the fields now: leave them alone.
                    if (gen != generation) { if (ws != null) ws.Dispose(); return; }
                    if (session != null) session.Cancel();
                    if (pongTimer != null) { pongTimer.Cancel(); pongTimer = null; }
                    socket = null;
                    wasOpen = State == ConnectionState.Open;
                    if (dropReason != null) { closeCode = dropCode; closeReason = dropReason; }
                    delayOverride = dropDelayMs;
                    if (!wanted) { if (ws != null) ws.Dispose(); return; }
                }
                try { if (ws != null) ws.Abort(); } catch (Exception) { }
                if (ws != null) ws.Dispose();
                bool willReconnect = options.Reconnect && attempt < options.MaxAttempts;
                if (wasOpen || !willReconnect)
                {
                    var info = new CloseInfo(closeCode, closeReason, willReconnect);
                    Emit(() => { var h = Closed; if (h != null) h(info); });
                }
                if (!willReconnect)
                {
                    lock (gate) { wanted = false; State = ConnectionState.Closed; }
                    SettleOpen(new InvalidOperationException("WebSocket closed (" + closeCode + " " + closeReason + "); not reconnecting"));
                    return;
                }
                attempt++;
                double delay = delayOverride ?? Math.Min(options.MaxDelayMs, options.InitialDelayMs * Math.Pow(options.Factor, attempt - 1));
                if (!delayOverride.HasValue && options.Jitter) lock (random) delay = delay / 2 + random.NextDouble() * delay / 2;
                int ms = (int)Math.Round(delay);
                int n = attempt;
                lock (gate) State = ConnectionState.Reconnecting;
                Emit(() => { var h = Reconnecting; if (h != null) h(n, ms); });
                if (ms > 0) await Task.Delay(ms).ConfigureAwait(false);
            }
        }

        async Task ReceiveLoop(ClientWebSocket ws, CancellationToken token)
        {
            var buffer = new byte[16 * 1024];
            using (var frame = new MemoryStream())
            {
                while (ws.State == WebSocketState.Open && !token.IsCancellationRequested)
                {
                    var r = await ws.ReceiveAsync(new ArraySegment<byte>(buffer), token).ConfigureAwait(false);
                    if (r.MessageType == WebSocketMessageType.Close) return;
                    frame.Write(buffer, 0, r.Count);
                    if (!r.EndOfMessage) continue;
                    var text = Encoding.UTF8.GetString(frame.GetBuffer(), 0, (int)frame.Length);
                    frame.SetLength(0);
                    Receive(text);
                }
            }
        }

        async Task HeartbeatLoop(ClientWebSocket ws, CancellationToken token)
        {
            while (!token.IsCancellationRequested)
            {
                using (var wake = CancellationTokenSource.CreateLinkedTokenSource(token))
                {
                    lock (gate) heartbeatWake = wake;
                    try
                    {
                        await Task.Delay(TimeSpan.FromSeconds(HeartbeatSeconds), wake.Token).ConfigureAwait(false);
                    }
                    catch (OperationCanceledException)
                    {
                        // The socket is gone, or a PONG named another interval: wait anew from now.
                        continue;
                    }
                    finally
                    {
                        lock (gate) if (heartbeatWake == wake) heartbeatWake = null;
                    }
                }
                await SendPingAsync().ConfigureAwait(false);
            }
        }

        async Task SendPingAsync()
        {
            ClientWebSocket ws;
            lock (gate)
            {
                ws = socket;
                if (ws == null || State != ConnectionState.Open) return;
                if (pongTimer == null)
                {
                    var timer = new CancellationTokenSource();
                    pongTimer = timer;
                    Forget(Task.Delay(options.PongTimeoutMs, timer.Token).ContinueWith(t =>
                    {
                        if (t.IsCanceled) return;
                        EmitError(new TimeoutException("no PONG within " + options.PongTimeoutMs + " ms; reconnecting"));
                        Drop(4001, "heartbeat timeout", null);
                    }));
                }
            }
            await sendLock.WaitAsync().ConfigureAwait(false);
            try
            {
                await ws.SendAsync(new ArraySegment<byte>(Ping), WebSocketMessageType.Text, true, CancellationToken.None).ConfigureAwait(false);
                Interlocked.Increment(ref pingsSent);
            }
            catch (Exception e)
            {
                EmitError(e);
            }
            finally
            {
                sendLock.Release();
            }
        }

        /// <summary>Drops the current socket on purpose; the loop reconnects after <paramref name="delayMs"/> (null: the backoff).</summary>
        void Drop(int code, string reason, int? delayMs)
        {
            ClientWebSocket ws;
            lock (gate)
            {
                if (!wanted || socket == null) return;
                ws = socket;
                dropCode = code;
                dropReason = reason;
                dropDelayMs = delayMs;
                if (session != null) session.Cancel();
            }
            try { ws.Abort(); } catch (Exception) { }
        }

        void Receive(string text)
        {
            JsonObject o = null;
            try { o = Json.Parse(text) as JsonObject; } catch (FormatException) { }
            if (o == null || !(o["type"] is string))
            {
                Emit(() => { var h = Text; if (h != null) h(text); });
                return;
            }
            var msg = ServerMessage.From(o);
            var pong = msg as PongMessage;
            if (pong != null) OnPong(pong);
            bool fresh;
            lock (gate) fresh = deduper == null || deduper.Accept(msg);
            Observe(msg, !fresh);
            if (!fresh)
            {
                Emit(() => { var h = Duplicate; if (h != null) h(msg); });
                return;
            }
            Emit(() =>
            {
                var h = Message;
                if (h != null) h(msg);
                RaiseTyped(msg);
            });
        }

        void OnPong(PongMessage pong)
        {
            lock (gate)
            {
                if (pongTimer != null) { pongTimer.Cancel(); pongTimer = null; }
                if (pong.HeartbeatSeconds > 0 && pong.HeartbeatSeconds != HeartbeatSeconds)
                {
                    HeartbeatSeconds = (int)pong.HeartbeatSeconds;
                    if (heartbeatWake != null) heartbeatWake.Cancel();
                }
            }
            // A lapsed registration: the server closes this socket; don't wait for it.
            if (!pong.Registered) Drop(4002, "registration lapsed", 0);
        }

        void Observe(ServerMessage msg, bool duplicate)
        {
            List<Func<ServerMessage, bool, bool>> copy;
            lock (observers) copy = new List<Func<ServerMessage, bool, bool>>(observers);
            foreach (var o in copy)
            {
                if (o(msg, duplicate)) lock (observers) observers.Remove(o);
            }
        }

        void SettleOpen(Exception error)
        {
            List<TaskCompletionSource<bool>> waiters;
            lock (gate)
            {
                waiters = new List<TaskCompletionSource<bool>>(openWaiters);
                openWaiters.Clear();
            }
            foreach (var w in waiters)
            {
                if (error == null) w.TrySetResult(true);
                else w.TrySetException(error);
            }
        }

        /// <summary>Runs <paramref name="task"/> without waiting for it (its failure, if any, observed).</summary>
        static void Forget(Task task)
        {
            task.ContinueWith(t => { var ignored = t.Exception; }, TaskContinuationOptions.OnlyOnFaulted);
        }

        void EmitError(Exception e) { Emit(() => { var h = Error; if (h != null) h(e); }); }

        void Emit(Action action)
        {
            dispatcher.Post(() =>
            {
                try { action(); }
                catch (Exception e)
                {
                    // A handler that throws must not stop the socket; tell the Error handlers (unless they threw).
                    var h = Error;
                    if (h != null) { try { h(e); } catch (Exception) { } }
                }
            });
        }
    }
}
