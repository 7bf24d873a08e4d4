using System;
using System.Threading.Tasks;
using NUnit.Framework;

namespace Matchmaking.Client.Tests
{
    /// <summary>Runs the SDK's tasks to completion in NUnit 2.6's synchronous tests (the exception as thrown, not wrapped).</summary>
    public static class Sync
    {
        public static T Run<T>(Task<T> task) { return task.GetAwaiter().GetResult(); }
        public static void Run(Task task) { task.GetAwaiter().GetResult(); }

        public static T Throws<T>(Func<Task> call) where T : Exception
        {
            try
            {
                call().GetAwaiter().GetResult();
            }
            catch (T e)
            {
                return e;
            }
            catch (Exception e)
            {
                Assert.Fail("expected a " + typeof(T).Name + ", got " + e);
            }
            Assert.Fail("expected a " + typeof(T).Name + ", got a success");
            return null;
        }
    }
}
