// A real local stack (tools/local-stack's mm-local binary: HTTP API,
// WebSocket API, matcher and an embedded redis-server) on free loopback
// ports, started with the settings a test gives, as the TypeScript SDK's
// tests do (clients/typescript/test/support/stack.ts).
using System;
using System.Collections.Generic;
using System.Diagnostics;
using System.Text;
using System.Text.RegularExpressions;
using System.Threading;
using System.Threading.Tasks;
using Matchmaking.Client;

namespace Matchmaking.Client.Tests
{
    public sealed class Stack : IDisposable
    {
        static readonly string[] Cleared = { "MM_RULES", "MM_RULES_FILE", "MM_WORLDS", "REDIS_URL", "MM_HTTP_ADDR", "MM_WS_ADDR", "RUST_LOG" };
        readonly Process process;
        readonly StringBuilder log = new StringBuilder();

        public string HttpUrl { get; private set; }
        public string WsUrl { get; private set; }

        /// <summary>The mm-local binary: MM_LOCAL_BIN (clients/csharp/test.sh sets it).</summary>
        public static string Binary
        {
            get
            {
                var bin = Environment.GetEnvironmentVariable("MM_LOCAL_BIN");
                if (string.IsNullOrEmpty(bin)) throw new InvalidOperationException("MM_LOCAL_BIN is not set: run clients/csharp/test.sh");
                return bin;
            }
        }

        /// <summary>The repository's root (MM_REPO, set by test.sh).</summary>
        public static string Repo
        {
            get
            {
                var repo = Environment.GetEnvironmentVariable("MM_REPO");
                if (string.IsNullOrEmpty(repo)) throw new InvalidOperationException("MM_REPO is not set: run clients/csharp/test.sh");
                return repo;
            }
        }

        /// <summary>A stack on free ports, or on <paramref name="httpAddr"/>/<paramref name="wsAddr"/> (host:port) to take over a stopped one's.</summary>
        public static Stack Start(IDictionary<string, string> settings, string httpAddr = null, string wsAddr = null)
        {
            return new Stack(settings, httpAddr ?? "127.0.0.1:0", wsAddr ?? "127.0.0.1:0");
        }

        /// <summary>host:port of the HTTP API.</summary>
        public string HttpAddr { get { return new Uri(HttpUrl).Authority; } }
        /// <summary>host:port of the WebSocket API.</summary>
        public string WsAddr { get { return new Uri(WsUrl).Authority; } }

        Stack(IDictionary<string, string> settings, string httpAddr, string wsAddr)
        {
            var psi = new ProcessStartInfo(Binary)
            {
                UseShellExecute = false,
                RedirectStandardOutput = true,
                RedirectStandardError = true,
                RedirectStandardInput = false,
            };
            foreach (var k in Cleared) psi.EnvironmentVariables.Remove(k);
            psi.EnvironmentVariables["MM_HTTP_ADDR"] = httpAddr;
            psi.EnvironmentVariables["MM_WS_ADDR"] = wsAddr;
            psi.EnvironmentVariables["NO_COLOR"] = "1";
            foreach (var kv in settings) psi.EnvironmentVariables[kv.Key] = kv.Value;
            var ready = new TaskCompletionSource<bool>();
            var page = new Regex(@"^\s+Demo page\s+(http://\S+?)/?$");
            var ws = new Regex(@"^\s+WebSocket API\s+(ws://\S+?)/?\?token=");
            process = new Process { StartInfo = psi, EnableRaisingEvents = true };
            process.OutputDataReceived += (s, e) =>
            {
                if (e.Data == null) return;
                lock (log) log.AppendLine(e.Data);
                var m = page.Match(e.Data);
                if (m.Success) HttpUrl = m.Groups[1].Value;
                m = ws.Match(e.Data);
                if (m.Success && HttpUrl != null)
                {
                    WsUrl = m.Groups[1].Value;
                    ready.TrySetResult(true);
                }
            };
            process.ErrorDataReceived += (s, e) => { if (e.Data != null) lock (log) log.AppendLine(e.Data); };
            process.Exited += (s, e) => ready.TrySetException(new Exception("mm-local exited before it was ready:\n" + Output));
            process.Start();
            process.BeginOutputReadLine();
            process.BeginErrorReadLine();
            if (!ready.Task.Wait(TimeSpan.FromSeconds(30)))
            {
                Dispose();
                throw new TimeoutException("mm-local did not start within 30 s:\n" + Output);
            }
        }

        /// <summary>Everything the stack printed (for failure messages).</summary>
        public string Output { get { lock (log) return log.ToString(); } }

        /// <summary>A development token for <paramref name="sub"/> with extra claims.</summary>
        public string Token(string sub, IDictionary<string, object> claims = null)
        {
            return DevTokens.MintAsync(HttpUrl, sub, claims).Result;
        }

        public TokenProvider TokenSource(string sub, IDictionary<string, object> claims = null)
        {
            return DevTokens.Source(HttpUrl, sub, claims);
        }

        /// <summary>A client with <paramref name="sub"/>'s token (and the scopes given).</summary>
        public MatchmakingClient Client(string sub, params string[] scopes)
        {
            IDictionary<string, object> claims = null;
            if (scopes.Length > 0) claims = new Dictionary<string, object> { { "scp", scopes } };
            var client = new MatchmakingClient(HttpUrl, TokenSource(sub, claims));
            Coverage.Watch(client);
            return client;
        }

        /// <summary>A connection of <paramref name="sub"/>'s (not yet connected).</summary>
        public Connection Connection(string sub, Action<ConnectionOptions> configure = null)
        {
            var o = new ConnectionOptions(WsUrl, TokenSource(sub));
            if (configure != null) configure(o);
            var c = new Connection(o);
            Coverage.Watch(c);
            return c;
        }

        /// <summary>SIGTERM, and wait for it (and its redis-server) to exit.</summary>
        public void Dispose()
        {
            try
            {
                if (!process.HasExited)
                {
                    using (var kill = Process.Start(new ProcessStartInfo("kill", "-TERM " + process.Id) { UseShellExecute = false })) kill.WaitForExit();
                    if (!process.WaitForExit(10000)) process.Kill();
                }
            }
            catch (Exception) { }
        }
    }

    /// <summary>Polls a condition with a deadline (no fixed sleeps).</summary>
    public static class Eventually
    {
        public static T Wait<T>(Func<T> probe, Func<T, bool> done, TimeSpan timeout, string what)
        {
            var deadline = DateTime.UtcNow + timeout;
            T last = default(T);
            while (DateTime.UtcNow < deadline)
            {
                last = probe();
                if (done(last)) return last;
                Thread.Sleep(50);
            }
            throw new TimeoutException("not within " + timeout.TotalSeconds + " s: " + what + " (last: " + last + ")");
        }
    }
}
