using System;
using System.Collections.Generic;

namespace Matchmaking.Client
{
    /// <summary>Any answer of the HTTP API that is not a success.</summary>
    public class ApiException : Exception
    {
        public ApiException(string message, int status, string body) : base(message)
        {
            Status = status;
            Body = body;
        }

        /// <summary>The HTTP status.</summary>
        public int Status { get; private set; }

        /// <summary>The body as received.</summary>
        public string Body { get; private set; }

        /// <summary>The typed error of an answer, or null for a success (2xx).</summary>
        public static ApiException Of(int status, string body)
        {
            if (status >= 200 && status < 300) return null;
            object parsed = null;
            try { parsed = Json.Parse(body ?? ""); } catch (FormatException) { }
            var o = parsed as JsonObject;
            if (o != null)
            {
                var data = o["data"] as JsonObject;
                var msg = o["msg"] as string;
                if (msg != null && data != null && data["error"] is string) return new MatchmakingException(status, msg, data, body);
                var message = o["message"] as string;
                if (message != null) return new GatewayException(status, message, body);
            }
            return new ApiException(status + ": unexpected answer " + body, status, body);
        }
    }

    /// <summary>
    /// A documented error answer of a function (the envelope
    /// <c>{"resultCode", "msg", "data": {"error": CODE, ...details}}</c>):
    /// <see cref="Code"/> is the stable code (see <see cref="ErrorCode"/>),
    /// <see cref="Data"/> its details, <see cref="Details{T}"/> them typed
    /// (<c>e.Details&lt;CoolingDownError&gt;().RetryAfterSeconds</c>).
    /// </summary>
    public sealed class MatchmakingException : ApiException
    {
        public MatchmakingException(int status, string msg, JsonObject data, string body)
            : base(status + " " + (data["error"] as string) + ": " + msg, status, body)
        {
            Code = data["error"] as string;
            Msg = msg;
            Data = data;
        }

        /// <summary>The stable code, <c>data.error</c> (one of <see cref="Spec.ErrorCodes"/>).</summary>
        public string Code { get; private set; }

        /// <summary>The server's message for humans; programs read <see cref="Code"/> and <see cref="Data"/>.</summary>
        public string Msg { get; private set; }

        /// <summary>The details (<c>data</c>, including <c>error</c>).</summary>
        public new JsonObject Data { get; private set; }

        /// <summary>The details as the code's generated type (e.g. <c>ForbiddenError</c>).</summary>
        public T Details<T>() where T : JsonModel, new() { return JsonModel.Wrap<T>(Data); }

        /// <summary>The details as the generated type <see cref="Spec.ErrorDetails"/> names for the code (a JsonModel when the code is new to this SDK).</summary>
        public JsonModel TypedDetails
        {
            get
            {
                Type t;
                var m = Spec.ErrorDetails.TryGetValue(Code, out t) ? (JsonModel)Activator.CreateInstance(t) : new JsonModel();
                m.Attach(Data);
                return m;
            }
        }

        /// <summary>Whether this is the error <paramref name="code"/>.</summary>
        public bool Is(string code) { return Code == code; }
    }

    /// <summary>
    /// API Gateway's own answer, never a function's: 401 (no token, or one
    /// the JWT authorizer refused), 404 (no such route), 429 (throttled), 500
    /// (the function failed). The body is <c>{"message": ...}</c>.
    /// </summary>
    public sealed class GatewayException : ApiException
    {
        public GatewayException(int status, string gatewayMessage, string body)
            : base(status + " " + gatewayMessage + " (API Gateway)", status, body)
        {
            GatewayMessage = gatewayMessage;
        }

        public string GatewayMessage { get; private set; }
    }
}
