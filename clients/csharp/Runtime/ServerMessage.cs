namespace Matchmaking.Client
{
    /// <summary>
    /// A message the server pushes over the WebSocket (docs/asyncapi.yaml):
    /// one generated subclass per type (<c>MatchFoundMessage</c>, ...), or
    /// this base class for a type new to this SDK.
    /// </summary>
    public partial class ServerMessage : JsonModel
    {
        /// <summary>The message type (see <see cref="MessageType"/>).</summary>
        public string Type { get { return Get("type", Codecs.String); } set { Set("type", value, Codecs.String); } }

        /// <summary>The typed message of a JSON object (by its <c>type</c>; the base class for an unknown type).</summary>
        public static ServerMessage From(JsonObject o)
        {
            System.Type t;
            var type = o["type"] as string;
            var m = type != null && Spec.MessageTypes.TryGetValue(type, out t) ? (ServerMessage)System.Activator.CreateInstance(t) : new ServerMessage();
            m.Attach(o);
            return m;
        }
    }
}
