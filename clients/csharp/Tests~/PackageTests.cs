// The Unity package and the quick starts: package.json's Unity fields, the
// assembly definition, a .meta beside every asset Unity imports, the
// library's references (the base class library only), the Unity sample
// compiled against stand-in UnityEngine types (test.sh builds it) and the
// README's quick starts being those compiled samples; the server quick
// start run against a real match.
using System;
using System.Collections.Generic;
using System.Diagnostics;
using System.IO;
using System.Linq;
using System.Reflection;
using System.Text.RegularExpressions;
using Matchmaking.Client;
using NUnit.Framework;

namespace Matchmaking.Client.Tests
{
    [TestFixture]
    public class PackageTests
    {
        static string Package { get { return Path.Combine(Stack.Repo, "clients/csharp"); } }

        [Test]
        public void PackageJsonHasTheUnityFields()
        {
            var o = (JsonObject)Json.Parse(File.ReadAllText(Path.Combine(Package, "package.json")));
            StringAssert.IsMatch("^com\\.[a-z0-9-]+\\.[a-z0-9.-]+$", (string)o["name"]);
            StringAssert.IsMatch("^\\d+\\.\\d+\\.\\d+$", (string)o["version"]);
            StringAssert.IsMatch("^\\d{4}\\.\\d+$", (string)o["unity"]);
            Assert.IsNotEmpty((string)o["displayName"]);
            Assert.IsNotEmpty((string)o["description"]);
            foreach (JsonObject sample in (List<object>)o["samples"])
                Assert.IsTrue(Directory.Exists(Path.Combine(Package, (string)sample["path"])), (string)sample["path"]);
            var asmdef = (JsonObject)Json.Parse(File.ReadAllText(Path.Combine(Package, "Runtime/Matchmaking.Client.asmdef")));
            Assert.AreEqual("Matchmaking.Client", asmdef["name"]);
            Assert.AreEqual(true, asmdef["noEngineReferences"], "the runtime needs nothing of the engine");
        }

        [Test]
        public void EveryAssetUnityImportsHasItsMeta()
        {
            var psi = new ProcessStartInfo("node", "tools/unity-meta.mjs --check") { UseShellExecute = false, RedirectStandardError = true, WorkingDirectory = Package };
            using (var p = Process.Start(psi))
            {
                var err = p.StandardError.ReadToEnd();
                p.WaitForExit();
                Assert.AreEqual(0, p.ExitCode, err);
            }
        }

        [Test]
        public void TheLibraryReferencesOnlyTheBaseClassLibrary()
        {
            var refs = typeof(MatchmakingClient).Assembly.GetReferencedAssemblies().Select(a => a.Name).OrderBy(n => n).ToArray();
            CollectionAssert.IsSubsetOf(refs, new[] { "mscorlib", "System", "System.Core", "System.Net.Http" }, string.Join(", ", refs));
        }

        [Test]
        public void TheUnitySampleIsAMonoBehaviourCompiledAgainstTheLibrary()
        {
            var dll = Path.Combine(Path.GetDirectoryName(typeof(PackageTests).Assembly.Location), "Matchmaking.Samples.dll");
            Assert.IsTrue(File.Exists(dll), "test.sh compiles Samples~ into " + dll);
            var asm = Assembly.LoadFrom(dll);
            var sample = asm.GetType("MatchmakingQuickStart");
            Assert.IsNotNull(sample);
            Assert.AreEqual("UnityEngine.MonoBehaviour", sample.BaseType.FullName);
            Assert.IsNotNull(sample.GetMethod("Update", BindingFlags.NonPublic | BindingFlags.Instance), "drains the events each frame");
            CollectionAssert.Contains(asm.GetReferencedAssemblies().Select(a => a.Name).ToArray(), "Matchmaking.Client");
        }

        [Test]
        public void TheReadmesQuickStartsAreTheCompiledSamples()
        {
            var readme = File.ReadAllText(Path.Combine(Package, "README.md"));
            var blocks = Regex.Matches(readme, "```csharp\n(.*?)```", RegexOptions.Singleline).Cast<Match>().Select(m => m.Groups[1].Value).ToList();
            CollectionAssert.Contains(blocks, File.ReadAllText(Path.Combine(Package, "Samples~/QuickStart/MatchmakingQuickStart.cs")), "the Unity quick start");
            CollectionAssert.Contains(blocks, File.ReadAllText(Path.Combine(Package, "Samples~/Server/GameServerQuickStart.cs")), "the server quick start");
        }

        [Test]
        public void TheServerQuickStartHostsAMatch()
        {
            using (var stack = Stack.Start(new Dictionary<string, string>
            {
                { "MM_RULES", @"{ ""servers"": { ""scope"": ""matchmaking/server"" }, ""worlds"": [{ ""name"": ""arena"", ""teamSize"": 1, ""teams"": 2 }] }" },
                { "MM_DEMO_ALLOCATOR", "false" },
            }))
            {
                Sync.Run(stack.Client("p1").JoinAsync(new JoinRequest { WorldType = "arena" }));
                var matched = Sync.Run(stack.Client("p2").JoinAsync(new JoinRequest { WorldType = "arena" }));
                var matchId = matched.AsMatchedState().Match.MatchId;
                var dll = Path.Combine(Path.GetDirectoryName(typeof(PackageTests).Assembly.Location), "Matchmaking.Samples.dll");
                var sample = Assembly.LoadFrom(dll).GetType("GameServerQuickStart");
                var server = stack.Client("game-server", "matchmaking/server");
                var assigned = Sync.Run((System.Threading.Tasks.Task<MatchReported>)sample.GetMethod("AssignAsync").Invoke(null, new object[] { server, matchId, "203.0.113.5:7777" }));
                Assert.AreEqual("ASSIGNED", assigned.State);
                Assert.AreEqual("203.0.113.5:7777", assigned.Assignment.Connection);
                var report = sample.GetMethod("ReportAsync");
                var reported = Sync.Run((System.Threading.Tasks.Task<MatchReported>)report.Invoke(null, new object[] { server, assigned.Match, "p2" }));
                Assert.AreEqual("FINISHED", reported.State);
                Assert.IsTrue(reported.Changed);
                var winner = reported.Match.Teams.Select((t, i) => new { t, i }).First(x => x.t.Contains("p2")).i;
                Assert.AreEqual(1, reported.Result.TeamRanks[winner]);
                // A retry: the same result again changes nothing.
                var again = Sync.Run((System.Threading.Tasks.Task<MatchReported>)report.Invoke(null, new object[] { server, assigned.Match, "p2" }));
                Assert.IsFalse(again.Changed);
            }
        }
    }
}
