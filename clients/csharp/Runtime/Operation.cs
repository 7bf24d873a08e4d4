using System;
using System.Collections.Generic;

namespace Matchmaking.Client
{
    /// <summary>An operation of docs/openapi.yaml (see <see cref="Spec.Operations"/>).</summary>
    public sealed class Operation
    {
        public Operation(string id, string method, string path, string scope, Type request, Type result, int successStatus, IDictionary<string, int> errors)
        {
            Id = id;
            Method = method;
            Path = path;
            Scope = scope;
            Request = request;
            Result = result;
            SuccessStatus = successStatus;
            Errors = errors;
        }

        public string Id { get; private set; }
        public string Method { get; private set; }
        /// <summary>With <c>{name}</c> parameters.</summary>
        public string Path { get; private set; }
        /// <summary>The rule set's setting naming the scope a token needs (e.g. <c>servers.scope</c>); null: any player.</summary>
        public string Scope { get; private set; }
        /// <summary>The request body's type, or null.</summary>
        public Type Request { get; private set; }
        /// <summary>The type of the success answer's <c>data</c>.</summary>
        public Type Result { get; private set; }
        public int SuccessStatus { get; private set; }
        /// <summary>The documented error codes and their status.</summary>
        public IDictionary<string, int> Errors { get; private set; }
    }
}
