// Stand-ins for the few UnityEngine types the sample uses, so the test
// command compiles Samples~ against the library without the engine (same
// names and signatures as Unity's; no behaviour).
namespace UnityEngine
{
    public class Object { }
    public class Component : Object { }
    public class Behaviour : Component { public bool enabled { get; set; } }
    public class MonoBehaviour : Behaviour { }

    public static class Debug
    {
        public static void Log(object message) { System.Console.WriteLine(message); }
        public static void LogWarning(object message) { System.Console.WriteLine("warning: " + message); }
        public static void LogError(object message) { System.Console.Error.WriteLine(message); }
        public static void LogException(System.Exception exception) { System.Console.Error.WriteLine(exception); }
    }

    [System.AttributeUsage(System.AttributeTargets.Field)]
    public sealed class SerializeField : System.Attribute { }
}
