using System;
using System.Collections.Generic;
using System.Globalization;
using System.Net.Http;
using System.Text;
using System.Threading;
using System.Threading.Tasks;

namespace Matchmaking.Client
{
    /// <summary>
    /// Where the caller's JWT comes from: asked before every request and
    /// every WebSocket connect; <paramref name="refresh"/> is true after the
    /// gateway refused the last one (401), so a cached token should be
    /// renewed.
    /// </summary>
    public delegate Task<string> TokenProvider(bool refresh, CancellationToken cancellationToken);

    /// <summary>
    /// Typed calls for every route of the HTTP API (docs/openapi.yaml; one
    /// method per operation, generated into Generated/Client.cs). Each returns
    /// the answer's <c>data</c> typed from the spec and throws a
    /// <see cref="MatchmakingException"/> (the documented <c>data.error</c>
    /// codes), a <see cref="GatewayException"/> (API Gateway's own
    /// 401/404/429/500) or, for a network failure, what HttpClient threw. A
    /// 401 from the gateway is retried once with a refreshed token.
    /// </summary>
    public partial class MatchmakingClient : IDisposable
    {
        protected static readonly string[] NoParams = new string[0];
        readonly HttpClient http;
        readonly bool ownsHttp;
        readonly TokenProvider token;

        /// <summary>A client with a fixed token.</summary>
        public MatchmakingClient(string httpUrl, string token, HttpClient httpClient = null)
            : this(httpUrl, (refresh, ct) => Task.FromResult(token), httpClient) { }

        /// <summary>A client asking <paramref name="token"/> for its token before every request.</summary>
        public MatchmakingClient(string httpUrl, TokenProvider token, HttpClient httpClient = null)
        {
            if (httpUrl == null) throw new ArgumentNullException("httpUrl");
            if (token == null) throw new ArgumentNullException("token");
            HttpUrl = httpUrl.TrimEnd('/');
            this.token = token;
            http = httpClient ?? new HttpClient();
            ownsHttp = httpClient == null;
        }

        /// <summary>After every answer: the operation, the HTTP status, and the error thrown (null for a success). For logs and metrics.</summary>
        public event Action<string, int, ApiException> Answered;

        /// <summary>The HTTP API's base URL, e.g. <c>http://127.0.0.1:3000</c>.</summary>
        public string HttpUrl { get; private set; }

        /// <summary>Calls operation <paramref name="operationId"/> and reads <c>data</c> as <typeparamref name="T"/>; what the generated methods do.</summary>
        public async Task<T> CallAsync<T>(string operationId, string[] pathParams, string[] queryParams, JsonModel body, CancellationToken cancellationToken = default(CancellationToken))
            where T : JsonModel, new()
        {
            var data = await SendAsync(operationId, pathParams, queryParams, body == null ? null : body.ToJson(), "application/json", cancellationToken).ConfigureAwait(false);
            return JsonModel.Wrap<T>(data);
        }

        /// <summary>
        /// Sends operation <paramref name="operationId"/> with a body as given
        /// (raw text, any content type) and returns the answer's <c>data</c>,
        /// or throws the typed error.
        /// </summary>
        public async Task<JsonObject> SendAsync(string operationId, string[] pathParams, string[] queryParams, string body, string contentType, CancellationToken cancellationToken = default(CancellationToken))
        {
            Operation op;
            if (!Spec.Operations.TryGetValue(operationId, out op)) throw new ArgumentException("no operation " + operationId + " in docs/openapi.yaml");
            var url = HttpUrl + FillPath(op.Path, pathParams) + Query(queryParams);
            for (bool refresh = false; ; refresh = true)
            {
                var jwt = await token(refresh, cancellationToken).ConfigureAwait(false);
                using (var req = new HttpRequestMessage(new HttpMethod(op.Method), url))
                {
                    req.Headers.TryAddWithoutValidation("Authorization", "Bearer " + jwt);
                    if (body != null)
                    {
                        req.Content = new ByteArrayContent(Encoding.UTF8.GetBytes(body));
                        if (contentType != null) req.Content.Headers.TryAddWithoutValidation("Content-Type", contentType);
                    }
                    using (var res = await http.SendAsync(req, cancellationToken).ConfigureAwait(false))
                    {
                        var bytes = await res.Content.ReadAsByteArrayAsync().ConfigureAwait(false);
                        var text = Encoding.UTF8.GetString(bytes);
                        var status = (int)res.StatusCode;
                        var error = ApiException.Of(status, text);
                        var answered = Answered;
                        if (answered != null) answered(operationId, status, error);
                        if (error == null)
                        {
                            var envelope = Json.Parse(text) as JsonObject;
                            var data = envelope == null ? null : envelope["data"] as JsonObject;
                            if (data == null) throw new ApiException(status + ": a success without a data object: " + text, status, text);
                            return data;
                        }
                        if (!(error is GatewayException && status == 401) || refresh) throw error;
                    }
                }
            }
        }

        /// <summary><paramref name="path"/> with its <c>{name}</c> parameters filled in (each percent-encoded).</summary>
        public static string FillPath(string path, string[] pathParams)
        {
            var sb = new StringBuilder();
            int i = 0;
            while (i < path.Length)
            {
                int open = path.IndexOf('{', i);
                if (open < 0) { sb.Append(path, i, path.Length - i); break; }
                int close = path.IndexOf('}', open);
                sb.Append(path, i, open - i);
                string name = path.Substring(open + 1, close - open - 1);
                string value = null;
                for (int k = 0; k + 1 < pathParams.Length; k += 2) if (pathParams[k] == name) value = pathParams[k + 1];
                if (value == null) throw new ArgumentException("missing path parameter " + name + " for " + path);
                sb.Append(Uri.EscapeDataString(value));
                i = close + 1;
            }
            return sb.ToString();
        }

        static string Query(string[] queryParams)
        {
            var sb = new StringBuilder();
            for (int k = 0; k + 1 < queryParams.Length; k += 2)
            {
                if (queryParams[k + 1] == null) continue;
                sb.Append(sb.Length == 0 ? '?' : '&').Append(Uri.EscapeDataString(queryParams[k])).Append('=').Append(Uri.EscapeDataString(queryParams[k + 1]));
            }
            return sb.ToString();
        }

        protected static string Str(long? v) { return v.HasValue ? v.Value.ToString(CultureInfo.InvariantCulture) : null; }

        public void Dispose() { if (ownsHttp) http.Dispose(); }
    }

    /// <summary>Development tokens of the local stack (<c>POST /dev/token</c>; never on a deployed API).</summary>
    public static class DevTokens
    {
        static readonly HttpClient Http = new HttpClient();

        /// <summary>Mints a token for <paramref name="sub"/> with extra <paramref name="claims"/> (e.g. <c>{"scp": ["matchmaking/server"]}</c>).</summary>
        public static async Task<string> MintAsync(string httpUrl, string sub, IDictionary<string, object> claims = null, CancellationToken cancellationToken = default(CancellationToken))
        {
            var body = new JsonObject();
            body["sub"] = sub;
            if (claims != null) body["claims"] = Codecs.ToJsonValue(claims);
            using (var content = new StringContent(Json.Serialize(body), Encoding.UTF8, "application/json"))
            using (var res = await Http.PostAsync(httpUrl.TrimEnd('/') + "/dev/token", content, cancellationToken).ConfigureAwait(false))
            {
                var text = await res.Content.ReadAsStringAsync().ConfigureAwait(false);
                var o = (int)res.StatusCode == 200 ? Json.Parse(text) as JsonObject : null;
                var jwt = o == null ? null : o["token"] as string;
                if (jwt == null) throw new ApiException("POST /dev/token: " + (int)res.StatusCode + " " + text, (int)res.StatusCode, text);
                return jwt;
            }
        }

        /// <summary>A token provider minting <paramref name="sub"/>'s tokens at the local stack (a fresh one when asked to refresh).</summary>
        public static TokenProvider Source(string httpUrl, string sub, IDictionary<string, object> claims = null)
        {
            string cached = null;
            return async (refresh, ct) =>
            {
                if (cached == null || refresh) cached = await MintAsync(httpUrl, sub, claims, ct).ConfigureAwait(false);
                return cached;
            };
        }
    }
}
