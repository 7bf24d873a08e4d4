// The SDK held to the specs: the generated types, methods, events and
// tables are what today's docs/openapi.yaml and docs/asyncapi.yaml give
// (tools/generate.mjs --check), a changed spec is caught, and every
// operation, error code and message type has its typed counterpart.
using System;
using System.Collections.Generic;
using System.Diagnostics;
using System.IO;
using System.Linq;
using System.Reflection;
using System.Threading.Tasks;
using Matchmaking.Client;
using NUnit.Framework;

namespace Matchmaking.Client.Tests
{
    [TestFixture]
    public class SpecTests
    {
        static int Generate(string args, IDictionary<string, string> env, out string output)
        {
            var psi = new ProcessStartInfo("node", "tools/generate.mjs " + args)
            {
                UseShellExecute = false,
                RedirectStandardOutput = true,
                RedirectStandardError = true,
                WorkingDirectory = Path.Combine(Stack.Repo, "clients/csharp"),
            };
            foreach (var kv in env) psi.EnvironmentVariables[kv.Key] = kv.Value;
            using (var p = Process.Start(psi))
            {
                var err = p.StandardError.ReadToEndAsync();
                var stdout = p.StandardOutput.ReadToEnd();
                p.WaitForExit();
                output = stdout + err.Result;
                return p.ExitCode;
            }
        }

        [Test]
        public void TheGeneratedFilesAreTodaysSpecs()
        {
            string output;
            int code = Generate("--check", new Dictionary<string, string>(), out output);
            Assert.AreEqual(0, code, "the specs changed: run node clients/csharp/tools/generate.mjs\n" + output);
        }

        [Test]
        public void AChangedSpecIsCaught()
        {
            // A field renamed in the OpenAPI document (the match record's matchedAt),
            // and a message field renamed in the AsyncAPI one: each makes the check fail.
            var dir = Path.Combine(Path.GetTempPath(), "mm-csharp-drift-" + Guid.NewGuid().ToString("N"));
            Directory.CreateDirectory(dir);
            try
            {
                var openapi = Path.Combine(dir, "openapi.yaml");
                File.WriteAllText(openapi, File.ReadAllText(Path.Combine(Stack.Repo, "docs/openapi.yaml")).Replace("matchedAt", "formedAt"));
                string output;
                Assert.AreEqual(1, Generate("--check", new Dictionary<string, string> { { "MM_OPENAPI", openapi } }, out output), output);
                StringAssert.Contains("Types.cs differs", output);

                var asyncapi = Path.Combine(dir, "asyncapi.yaml");
                File.WriteAllText(asyncapi, File.ReadAllText(Path.Combine(Stack.Repo, "docs/asyncapi.yaml")).Replace("presenceTimeoutSeconds", "presenceSeconds"));
                Assert.AreEqual(1, Generate("--check", new Dictionary<string, string> { { "MM_ASYNCAPI", asyncapi } }, out output), output);
            }
            finally
            {
                Directory.Delete(dir, true);
            }
        }

        [Test]
        public void EveryOperationHasATypedMethod()
        {
            Assert.GreaterOrEqual(Spec.Operations.Count, 25);
            foreach (var op in Spec.Operations.Values)
            {
                var name = char.ToUpperInvariant(op.Id[0]) + op.Id.Substring(1) + "Async";
                var method = typeof(MatchmakingClient).GetMethod(name);
                Assert.IsNotNull(method, "MatchmakingClient." + name + " for " + op.Method + " " + op.Path);
                Assert.AreEqual(typeof(Task<>).MakeGenericType(op.Result), method.ReturnType, name);
                if (op.Request != null) Assert.IsTrue(method.GetParameters().Any(p => p.ParameterType == op.Request), name + " takes a " + op.Request.Name);
                foreach (var error in op.Errors) Assert.Contains(error.Key, Spec.ErrorCodes, op.Id + ": " + error.Key);
            }
        }

        [Test]
        public void EveryErrorCodeHasAConstantAndADetailsType()
        {
            var constants = typeof(ErrorCode).GetFields().Select(f => (string)f.GetValue(null)).ToList();
            CollectionAssert.AreEquivalent(Spec.ErrorCodes, constants);
            foreach (var code in Spec.ErrorCodes)
            {
                Assert.IsTrue(Spec.ErrorDetails.ContainsKey(code), code + " has a details type");
                var details = (JsonModel)Activator.CreateInstance(Spec.ErrorDetails[code]);
                Assert.IsNotNull(details.GetType().GetProperty("Error"), code);
            }
        }

        [Test]
        public void EveryMessageTypeHasAClassAndAnEvent()
        {
            Assert.GreaterOrEqual(Spec.MessageTypes.Count, 12);
            var events = typeof(Connection).GetEvents().ToDictionary(e => e.Name);
            foreach (var kv in Spec.MessageTypes)
            {
                var o = new JsonObject();
                o["type"] = kv.Key;
                var msg = ServerMessage.From(o);
                Assert.AreEqual(kv.Value, msg.GetType());
                Assert.AreEqual(kv.Key, msg.Type);
                var name = string.Concat(kv.Key.ToLowerInvariant().Split('_').Select(w => char.ToUpperInvariant(w[0]) + w.Substring(1)).ToArray());
                Assert.IsTrue(events.ContainsKey(name), "Connection." + name + " for " + kv.Key);
                Assert.AreEqual(typeof(Action<>).MakeGenericType(kv.Value), events[name].EventHandlerType);
            }
            var unknown = new JsonObject();
            unknown["type"] = "SOMETHING_NEW";
            Assert.AreEqual(typeof(ServerMessage), ServerMessage.From(unknown).GetType(), "a type new to the SDK is still delivered");
        }

        /// <summary>Every generated property reads and writes the JSON field its attribute names, with a value of the spec's type.</summary>
        [Test]
        public void EveryGeneratedPropertyRoundTripsItsField()
        {
            var types = typeof(JsonModel).Assembly.GetTypes().Where(t => t.GetCustomAttributes(typeof(SpecSchemaAttribute), false).Length > 0).ToList();
            Assert.Greater(types.Count, 80);
            int fields = 0;
            foreach (var t in types)
            {
                foreach (var p in t.GetProperties())
                {
                    var attr = (JsonFieldAttribute)p.GetCustomAttributes(typeof(JsonFieldAttribute), false).FirstOrDefault();
                    if (attr == null) continue;
                    var model = (JsonModel)Activator.CreateInstance(t);
                    var value = Sample(p.PropertyType);
                    p.SetValue(model, value, null);
                    Assert.IsTrue(model.Raw.ContainsKey(attr.Name), t.Name + "." + p.Name + " writes " + attr.Name);
                    var again = JsonModel.Parse<JsonModel>(model.ToJson());
                    var copy = (JsonModel)Activator.CreateInstance(t);
                    typeof(JsonModel).GetMethod("Attach", BindingFlags.NonPublic | BindingFlags.Instance).Invoke(copy, new object[] { again.Raw });
                    Assert.AreEqual(Json.Serialize(Codecs.ToJsonValue(value)), Json.Serialize(Codecs.ToJsonValue(p.GetValue(copy, null))), t.Name + "." + p.Name);
                    fields++;
                }
            }
            Assert.Greater(fields, 300);
        }

        static object Sample(Type t)
        {
            if (t == typeof(string)) return "x";
            if (t == typeof(long) || t == typeof(long?)) return 7L;
            if (t == typeof(double) || t == typeof(double?)) return 1.5;
            if (t == typeof(bool) || t == typeof(bool?)) return true;
            if (t == typeof(object)) return "any";
            if (typeof(JsonModel).IsAssignableFrom(t))
            {
                var m = (JsonModel)Activator.CreateInstance(t);
                m.Raw["k"] = 1L;
                return m;
            }
            if (t.IsGenericType && t.GetGenericTypeDefinition() == typeof(IList<>))
            {
                var item = t.GetGenericArguments()[0];
                var list = (System.Collections.IList)Activator.CreateInstance(typeof(List<>).MakeGenericType(item));
                list.Add(Sample(item));
                return list;
            }
            if (t.IsGenericType && t.GetGenericTypeDefinition() == typeof(IDictionary<,>))
            {
                var item = t.GetGenericArguments()[1];
                var dict = (System.Collections.IDictionary)Activator.CreateInstance(typeof(Dictionary<,>).MakeGenericType(typeof(string), item));
                dict["key"] = Sample(item);
                return dict;
            }
            throw new NotSupportedException(t.FullName);
        }
    }
}
