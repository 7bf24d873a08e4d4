using System;
using System.Collections.Generic;
using System.Linq;
using Matchmaking.Client;

namespace Matchmaking.Client.Tests
{
    /// <summary>Every message (and repeat) a connection delivered, in order; Next finds one already heard or waits for it.</summary>
    public sealed class Recorder
    {
        public static readonly TimeSpan Wait = TimeSpan.FromSeconds(15);
        readonly List<ServerMessage> messages = new List<ServerMessage>();
        readonly List<ServerMessage> duplicates = new List<ServerMessage>();

        public Recorder(Connection connection)
        {
            Connection = connection;
            connection.Message += m => { lock (messages) messages.Add(m); };
            connection.Duplicate += m => { lock (duplicates) duplicates.Add(m); };
        }

        public Connection Connection { get; private set; }

        public List<T> All<T>(Func<T, bool> predicate = null) where T : ServerMessage
        {
            lock (messages) return messages.OfType<T>().Where(m => predicate == null || predicate(m)).ToList();
        }

        public List<T> Duplicates<T>(Func<T, bool> predicate = null) where T : ServerMessage
        {
            lock (duplicates) return duplicates.OfType<T>().Where(m => predicate == null || predicate(m)).ToList();
        }

        /// <summary>The first delivered message of type T matching <paramref name="predicate"/>, waiting for it if none was heard yet.</summary>
        public T Next<T>(Func<T, bool> predicate = null, TimeSpan? timeout = null) where T : ServerMessage
        {
            return Eventually.Wait(() => All(predicate).FirstOrDefault(), m => m != null, timeout ?? Wait, "a " + typeof(T).Name);
        }

        /// <summary>The first dropped repeat of type T matching <paramref name="predicate"/>, waiting for it.</summary>
        public T NextDuplicate<T>(Func<T, bool> predicate = null) where T : ServerMessage
        {
            return Eventually.Wait(() => Duplicates(predicate).FirstOrDefault(), m => m != null, Wait, "a repeated " + typeof(T).Name);
        }
    }

    /// <summary>What the whole suite reached: operations answered, error codes, message types (the Coverage fixture checks it).</summary>
    public static class Coverage
    {
        public static readonly HashSet<string> Operations = new HashSet<string>();
        public static readonly HashSet<string> ErrorCodes = new HashSet<string>();
        public static readonly HashSet<int> GatewayStatuses = new HashSet<int>();
        public static readonly HashSet<string> MessageTypes = new HashSet<string>();
        public static readonly HashSet<string> Fixtures = new HashSet<string>();

        public static void Watch(MatchmakingClient client)
        {
            client.Answered += (op, status, error) =>
            {
                lock (Operations)
                {
                    if (status >= 200 && status < 300) Operations.Add(op);
                    var m = error as MatchmakingException;
                    if (m != null) ErrorCodes.Add(m.Code);
                    if (error is GatewayException) GatewayStatuses.Add(status);
                }
            };
        }

        public static void Watch(Connection connection)
        {
            connection.Message += m => { lock (Operations) MessageTypes.Add(m.Type); };
        }
    }
}
