using System;
using System.Collections.Generic;
using System.Threading;

namespace Matchmaking.Client
{
    /// <summary>Where a <see cref="Connection"/> runs its event handlers.</summary>
    public interface IEventDispatcher
    {
        void Post(Action action);
    }

    /// <summary>Runs handlers at once, on the socket's thread (the default; fine for servers and tests).</summary>
    public sealed class ImmediateDispatcher : IEventDispatcher
    {
        public static readonly ImmediateDispatcher Instance = new ImmediateDispatcher();
        public void Post(Action action) { action(); }
    }

    /// <summary>
    /// Posts handlers to a SynchronizationContext: in Unity, the main
    /// thread's (<c>new SynchronizationContextDispatcher(SynchronizationContext.Current)</c>
    /// from Awake or Start), so handlers may touch GameObjects.
    /// </summary>
    public sealed class SynchronizationContextDispatcher : IEventDispatcher
    {
        readonly SynchronizationContext context;
        public SynchronizationContextDispatcher(SynchronizationContext context)
        {
            if (context == null) throw new ArgumentNullException("context", "no SynchronizationContext on this thread");
            this.context = context;
        }
        public void Post(Action action) { context.Post(_ => action(), null); }
    }

    /// <summary>
    /// Queues handlers until the caller drains them on its own thread, e.g.
    /// once per frame in a MonoBehaviour's <c>Update</c>: <c>queue.Drain()</c>.
    /// </summary>
    public sealed class QueueDispatcher : IEventDispatcher
    {
        readonly Queue<Action> queue = new Queue<Action>();

        public void Post(Action action) { lock (queue) queue.Enqueue(action); }

        /// <summary>How many handlers wait.</summary>
        public int Pending { get { lock (queue) return queue.Count; } }

        /// <summary>Runs up to <paramref name="max"/> queued handlers on this thread, oldest first; returns how many ran.</summary>
        public int Drain(int max = int.MaxValue)
        {
            int ran = 0;
            while (ran < max)
            {
                Action next;
                lock (queue)
                {
                    if (queue.Count == 0) break;
                    next = queue.Dequeue();
                }
                next();
                ran++;
            }
            return ran;
        }
    }
}
