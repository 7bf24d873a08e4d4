#!/usr/bin/env python3
"""Measures the figures of docs/deploy.md section 9 on this machine, through
the real function binaries. Run it with scripts/measure-costs.sh (which builds
them); Python standard library, openssl and redis-server/redis-cli only.

All on 127.0.0.1, nothing in AWS:
- a private redis-server on a free port (no persistence);
- a stand-in for the @connections API and the JWKS: it records every push
  with its HTTP request bytes and answers 200 as API Gateway does;
- a Lambda Runtime API emulator per function (the four endpoints of
  tests/src/runtime_api.rs, kept to what timing needs), and the binaries as
  child processes with env.json's environment. An invocation's duration is
  what Lambda bills: from handing over the event (the answer to GET
  .../invocation/next) to the POST of the response.

Redis is read around every invocation: CONFIG RESETSTAT before, INFO
commandstats / stats after (nothing else talks to Redis meanwhile), so each
invocation's script time is the server's own count without any logging on.
A short pass with SLOWLOG on, not counted, names the top-level commands of
each kind of invocation (SLOWLOG tells a client's command from one a script
runs).

Phases: warm-up (not counted), the naming pass, M matches of N players (N
$connect, N joins of which the last forms the match, N $disconnect), H
heartbeats ($default), one matcher tick deleting the matches' expired
records, and one matcher invocation with Lambda's 60 s deadline on the idle
system. Prints Markdown; writes it and the raw figures (JSON) to --out.
"""

import argparse
import base64
import glob
import hashlib
import http.server
import json
import math
import os
import queue
import shutil
import socket
import socketserver
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RUNTIME = "/2018-06-01/runtime"
LIB_ORDER = ["_lib.lua", "_tickets.lua", "_presence.lua", "_teams.lua",
             "_proposals.lua", "_matching.lua", "_rated.lua",
             "_config.lua"]

# AWS list prices, us-east-1, looked up 2026-11-30 and 2026-12-01 (docs/deploy.md
# section 9, with their sources).
PRICE = {"lambda_gb_s": 0.0000133334, "lambda_req": 0.20, "http_req": 1.00, "ws_msg": 1.00,
         "ws_conn_min": 0.25, "ecpu_valkey": 0.0023, "ecpu_redis": 0.0034,
         "nat_gb": 0.045, "logs_gb": 0.50,          # per 1 M, except GB-s and GB
         "xray_trace": 5.00, "events": 1.00,        # per 1 M traces recorded / custom events
         "nat_hour": 0.045, "ipv4_hour": 0.005, "eigw_hour": 0.0,
         "valkey_gb_hour": 0.084, "metric_month": 0.30, "alarm_metric": 0.10, "dashboard": 3.00}
MEMORY_GB = 256 / 1024                              # template: MemorySize 256
MONTH_HOURS = 730
MATCHER_INVOCATIONS_MONTH = 60 * MONTH_HOURS        # rate(1 minute), 730 h
VALKEY_MIN_GB = 0.1                                 # ElastiCache Serverless Valkey meters at least 100 MB
ALARM_METRICS = 15                                  # template.yaml, CacheMode=serverless (metric-math alarms count each metric)
DASHBOARDS = 1
NETWORK_MODES = ("Ipv6Egress", "NatGateway")        # template.yaml parameter NetworkMode, default first
SCENARIOS = (("idle month", 0), ("small steady load: 10,000 matches a month", 10_000))

# Estimates (not measurable on this machine); printed with every result.
EST = {
    "redis_rtt_ms": 0.5,       # per Redis round trip in the VPC with TLS (localhost here)
    "push_round_ms": 20.0,     # per @connections round trip through the NAT gateway
    "tls_tcp_bytes": 300,      # per push: TLS records, TCP/IP headers, ACKs
    "aws_host": "a1b2c3d4e5.execute-api.us-east-1.amazonaws.com",
    # Lambda role credentials add X-Amz-Security-Token (about 1,100 characters)
    "session_token_bytes": len("X-Amz-Security-Token: \r\n") + 1100,
    "cw_event_bytes": 26,      # CloudWatch Logs counts 26 bytes per log event
    "ecpu_us": 3.0,            # vCPU microseconds per ECPU (heuristic, see the doc)
    # The sleeping matcher (MM_MATCHER_SLEEP, the template's): the schedule
    # still starts one invocation a minute; one with nothing to do ticks once,
    # sleeps and returns (measured below, "matcher (sleeping, idle
    # invocation)"), with its summary line and no per-world EMF line; one with
    # work ticks until nothing is left (the 60 s loop measured here, at most).
    # A minute is busy while a ticket waits or a record is due: this many
    # busy minutes per match; the first join of a match usually finds the
    # matcher asleep and wakes it (one MatcherWake event and one invocation).
    "busy_minutes_per_match": 2,
    "connected_minutes": 5,    # small load: each player stays connected this long (t)
    "jwks_fetches_per_hour": 6,  # Ipv6Egress, under load: a warm ws-connect refetches at most every 10 min
}


def pct(values, p):
    s = sorted(values)
    k = (len(s) - 1) * p
    lo, hi = math.floor(k), math.ceil(k)
    return s[lo] + (s[hi] - s[lo]) * (k - lo)


def wait_until(condition, timeout_s, what):
    """Polls `condition` until it holds; fails after `timeout_s`."""
    deadline = time.monotonic() + timeout_s
    while not condition():
        if time.monotonic() > deadline:
            raise SystemExit(f"timed out waiting for {what}")
        time.sleep(0.02)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def b64url(data):
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


class Redis:
    """A minimal RESP client for the probe connection."""

    def __init__(self, port):
        self.sock = socket.create_connection(("127.0.0.1", port))
        self.f = self.sock.makefile("rb")

    def _reply(self):
        line = self.f.readline()[:-2]
        kind, rest = line[:1], line[1:]
        if kind == b"+":
            return rest.decode()
        if kind == b"-":
            raise RuntimeError(rest.decode())
        if kind == b":":
            return int(rest)
        if kind == b"$":
            n = int(rest)
            return None if n < 0 else self.f.read(n + 2)[:-2].decode(errors="replace")
        if kind == b"*":
            n = int(rest)
            return None if n < 0 else [self._reply() for _ in range(n)]
        raise RuntimeError(f"unexpected reply {line!r}")

    def call(self, *args):
        out = [b"*%d\r\n" % len(args)]
        for a in args:
            a = str(a).encode()
            out.append(b"$%d\r\n%s\r\n" % (len(a), a))
        self.sock.sendall(b"".join(out))
        return self._reply()

    def info(self, section):
        return dict(l.split(":", 1) for l in self.call("INFO", section).splitlines()
                    if ":" in l and not l.startswith("#"))

    def reset(self):
        self.call("CONFIG", "RESETSTAT")

    def read(self, own_bytes=None):
        """Commands and bytes since reset(), less the probe's own."""
        if own_bytes is None:
            own_bytes = self.own_bytes
        stats = self.info("stats")
        cmds = {}
        for k, v in self.info("commandstats").items():
            f = dict(x.split("=") for x in v.split(","))
            name = k.replace("cmdstat_", "")
            if name.split("|")[0] not in ("config", "info", "slowlog"):
                cmds[name] = (int(f["calls"]), int(f["usec"]))
        return {"cmds": cmds, "net": int(stats["total_net_input_bytes"])
                + int(stats["total_net_output_bytes"]) - own_bytes}

    def calibrate(self):
        """The bytes reset() and read() count of their own."""
        self.reset()
        self.own_bytes = self.read(0)["net"]


# --- HTTP: Runtime API emulator and the @connections/JWKS stand-in ---------
class Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def body(self):
        n = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(n) if n else b""

    def reply(self, status, body=b"", headers=()):
        self.send_response(status)
        for k, v in headers:
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


def serve(handler):
    server = Server(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


class Function:
    """A function binary against its own Runtime API emulator."""

    def __init__(self, binary, name, env):
        self.name, self.pending, self.current = name, queue.Queue(), None
        self.init_error, self.ready = None, threading.Event()
        fn = self

        class H(Handler):
            def do_GET(self):
                fn.ready.set()
                inv = fn.pending.get()
                fn.current = inv
                inv["t0"] = time.perf_counter_ns()        # billing starts
                self.reply(200, inv["event"], [
                    ("Lambda-Runtime-Aws-Request-Id", inv["id"]),
                    ("Lambda-Runtime-Deadline-Ms", str(inv["deadline_ms"])),
                    ("Lambda-Runtime-Invoked-Function-Arn",
                     f"arn:aws:lambda:us-east-1:123456789012:function:{fn.name}"),
                    ("Lambda-Runtime-Trace-Id", f"Root=1-{int(time.time()):08x}-{uuid.uuid4().hex[:24]}")])

            def do_POST(self):
                t1 = time.perf_counter_ns()
                body = self.body()
                if self.path.endswith("/init/error"):
                    fn.init_error = body
                elif fn.current and self.path.endswith(("/response", "/error")):
                    inv, fn.current = fn.current, None
                    inv.update(t1=t1, ok=self.path.endswith("/response"), answer=body)
                    inv["done"].set()
                self.reply(202, b'{"status":"OK"}')

        self.server = serve(H)
        env = dict(env, PATH=os.environ.get("PATH", "/usr/bin:/bin"),
                   AWS_LAMBDA_RUNTIME_API=f"127.0.0.1:{self.server.server_address[1]}",
                   AWS_LAMBDA_FUNCTION_NAME=name, AWS_LAMBDA_FUNCTION_MEMORY_SIZE="256",
                   AWS_LAMBDA_FUNCTION_VERSION="$LATEST", AWS_REGION="us-east-1",
                   AWS_ACCESS_KEY_ID="local", AWS_SECRET_ACCESS_KEY="local",
                   AWS_EC2_METADATA_DISABLED="true")
        t = time.perf_counter()
        self.proc = subprocess.Popen([binary], env=env, stdin=subprocess.DEVNULL,
                                     stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        self.lines, self.lock = [], threading.Lock()   # (time ns, bytes incl. newline, text)
        self.follower = threading.Thread(target=self._follow, daemon=True)
        self.follower.start()
        while not self.ready.wait(0.01):
            self._check()
            if time.perf_counter() - t > 60:
                raise SystemExit(f"{name}: never asked for an event")
        self.ready_ms = (time.perf_counter() - t) * 1e3

    def _follow(self):
        for raw in iter(self.proc.stdout.readline, b""):
            with self.lock:
                self.lines.append((time.perf_counter_ns(), len(raw), raw.decode(errors="replace").rstrip()))

    def _check(self):
        if self.init_error or self.proc.poll() is not None:
            self.follower.join(timeout=5)    # its last lines: the output ends with the process
            tail = "\n".join(l[2] for l in self.lines[-20:])
            raise SystemExit(f"{self.name}: init error {self.init_error!r} / exit "
                             f"{self.proc.poll()}\n{tail}")

    def invoke(self, event, deadline_ms=None, wait=90):
        inv = {"id": str(uuid.uuid4()), "event": json.dumps(event).encode(),
               "deadline_ms": deadline_ms or int(time.time() * 1000) + 10_000,
               "done": threading.Event()}
        self.pending.put(inv)
        end = time.time() + wait
        while not inv["done"].wait(0.05):
            self._check()
            if time.time() > end:
                raise SystemExit(f"{self.name}: no answer within {wait} s")
        if not inv["ok"]:
            raise SystemExit(f"{self.name}: error {inv['answer'][:500]!r}")
        inv["ms"] = (inv["t1"] - inv["t0"]) / 1e6
        inv["answer"] = json.loads(inv["answer"])
        return inv

    def output_since(self, t0):
        """Lines written since t0 (this process runs one invocation at a time)."""
        with self.lock:
            return [l for l in self.lines if l[0] >= t0]

    def peak_rss_kb(self):
        for line in open(f"/proc/{self.proc.pid}/status"):
            if line.startswith("VmHWM:"):
                return int(line.split()[1])

    def stop(self):
        self.proc.kill()
        self.proc.wait()
        self.server.shutdown()


class StandIn:
    """@connections (POST answers like API Gateway) and the JWKS."""

    def __init__(self, jwks):
        self.posts = []
        stand_in = self

        class H(Handler):
            def do_GET(self):
                self.reply(200, jwks, [("Content-Type", "application/json")])

            def do_DELETE(self):
                self.reply(204)

            def do_POST(self):
                body = self.body()
                head = len(self.requestline) + 2 + sum(
                    len(k) + len(v) + 4 for k, v in self.headers.items()) + 2
                stand_in.posts.append({"body": body, "request_bytes": head + len(body),
                                       "host_len": len(self.headers.get("Host", "")),
                                       "signed": "Authorization" in self.headers})
                # API Gateway's answer to PostToConnection, header for header.
                self.reply(200, b"", [("Date", time.strftime("%a, %d %b %Y %H:%M:%S GMT")),
                                      ("Content-Type", "application/json"),
                                      ("Connection", "keep-alive"),
                                      ("x-amzn-RequestId", str(uuid.uuid4())),
                                      ("x-amz-apigw-id", "Abcdefghijklmno=")])

        self.server = serve(H)
        self.base = f"http://127.0.0.1:{self.server.server_address[1]}"


class Issuer:
    """RS256 tokens signed with openssl, and their JWKS."""

    def __init__(self, tmp, iss, aud):
        self.key, self.iss, self.aud = os.path.join(tmp, "key.pem"), iss, aud
        subprocess.run(["openssl", "genrsa", "-out", self.key, "2048"], check=True, capture_output=True)
        mod = subprocess.run(["openssl", "rsa", "-in", self.key, "-noout", "-modulus"],
                             check=True, capture_output=True, text=True).stdout
        n = bytes.fromhex(mod.strip().split("=", 1)[1])
        self.jwks = json.dumps({"keys": [{"kty": "RSA", "kid": "cost", "use": "sig", "alg": "RS256",
                                          "n": b64url(n), "e": "AQAB"}]}).encode()

    def token(self, sub):
        now = int(time.time())
        head = b64url(json.dumps({"alg": "RS256", "typ": "JWT", "kid": "cost"}).encode())
        claims = b64url(json.dumps({"iss": self.iss, "aud": self.aud, "sub": sub,
                                    "iat": now, "exp": now + 3600}).encode())
        sig = subprocess.run(["openssl", "dgst", "-sha256", "-sign", self.key], check=True,
                             input=f"{head}.{claims}".encode(), capture_output=True).stdout
        return f"{head}.{claims}.{b64url(sig)}"


def event(name, **changes):
    e = json.load(open(os.path.join(ROOT, "events", name)))
    rc = e.get("requestContext", {})
    rc["requestId"] = b64url(os.urandom(9))
    if "connection" in changes:
        rc["connectionId"] = changes["connection"]
    if "token" in changes:
        e["queryStringParameters"]["token"] = changes["token"]
        e["multiValueQueryStringParameters"]["token"] = [changes["token"]]
    if "player" in changes:
        rc["authorizer"]["jwt"]["claims"]["sub"] = changes["player"]
        e["body"] = json.dumps(dict(json.loads(e["body"]), worldType=changes["world"]),
                               separators=(",", ":"))
        e["headers"]["content-length"] = str(len(e["body"]))
    return e


def script_label(names, args):
    """The operation a top-level FCALL (function mm_<hash>_<op>) or EVALSHA
    (by the standalone script's SHA1) ran; None for other commands."""
    cmd = args[0].upper()
    if cmd == "FCALL":
        parts = args[1].split("_", 2)
        return parts[2] if len(parts) == 3 else "script?"
    if cmd == "EVALSHA":
        return names.get(args[1].lower(), "script?")
    return None


def script_names():
    lib = "".join(open(os.path.join(ROOT, "lua", f)).read() + "\n" for f in LIB_ORDER)
    return {hashlib.sha1((lib + open(p).read()).encode()).hexdigest(): os.path.basename(p)[:-4]
            for p in glob.glob(os.path.join(ROOT, "lua", "[!_]*.lua"))}


def main():
    ap = argparse.ArgumentParser(description="see scripts/measure-costs.sh")
    ap.add_argument("--bin-dir", default=os.path.join(ROOT, "target", "release"))
    ap.add_argument("--matches", type=int, default=int(os.environ.get("COST_MATCHES", 300)))
    ap.add_argument("--heartbeats", type=int, default=int(os.environ.get("COST_HEARTBEATS", 300)))
    ap.add_argument("--matcher-secs", type=int, default=int(os.environ.get("COST_MATCHER_SECS", 60)))
    ap.add_argument("--out", default=os.path.join(ROOT, "bench-results", "costs.md"))
    ap.add_argument("--from-json", metavar="COSTS.json",
                    help="no measurement: recompute the costs and the report from a saved run's JSON "
                         "(after a change of prices or estimates here)")
    args = ap.parse_args()
    if args.from_json:
        res = json.load(open(args.from_json))
        res.update(estimates=EST, prices=PRICE)
        costs(res)
        md = report(res)
        print(md)
        os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
        open(args.out, "w").write(md)
        print(f"written: {args.out} (from {args.from_json})", file=sys.stderr)
        return
    for tool in ("redis-server", "openssl"):
        if not shutil.which(tool):
            raise SystemExit(f"{tool} not found (scripts/install-deps.sh redis installs redis-server)")

    tmp = tempfile.mkdtemp(prefix="mm-costs-")
    port = free_port()
    redis = subprocess.Popen(["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--save", "",
                              "--appendonly", "no", "--dir", tmp, "--slowlog-log-slower-than", "-1",
                              "--slowlog-max-len", "100000"], stdout=subprocess.DEVNULL)
    fns = {}
    try:
        for _ in range(200):
            try:
                r = Redis(port)
                break
            except OSError:
                time.sleep(0.05)
        else:
            raise SystemExit("redis-server did not start")
        r.calibrate()
        env = json.load(open(os.path.join(ROOT, "env.json")))["Parameters"]
        issuer = Issuer(tmp, env["AUTH_ISSUER"], env["AUTH_AUDIENCE"])
        stand_in = StandIn(issuer.jwks)
        env.update(REDIS_URL=f"redis://127.0.0.1:{port}", MM_WS_ENDPOINT=f"{stand_in.base}/prod",
                   AUTH_JWKS_URL=f"{stand_in.base}/.well-known/jwks.json")
        world, team = env["MM_WORLDS"].split(",")[0].split(":")
        team = int(team)
        for name in ("ws-connect", "join", "ws-disconnect", "matcher"):
            fns[name] = Function(os.path.join(args.bin_dir, name), name, env)
        # The deployed matcher: it sleeps when idle (env.json keeps it awake,
        # having no wake rule locally).
        fns["matcher-sleeping"] = Function(os.path.join(args.bin_dir, "matcher"), "matcher",
                                           dict(env, MM_MATCHER_SLEEP="true"))
        res = run(args, r, fns, issuer, stand_in, world, team, env)
        res["redis_version"] = r.info("server")["redis_version"]
    finally:
        for f in fns.values():
            f.stop()
        redis.kill()
        redis.wait()
        shutil.rmtree(tmp, ignore_errors=True)

    res.update(date=time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
               cpu=next(l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo")
                        if l.startswith("model name")),
               cores=os.cpu_count(), load=os.getloadavg(), bin_dir=args.bin_dir,
               rust_log=env.get("RUST_LOG"), estimates=EST, prices=PRICE)
    costs(res)
    md = report(res)
    print(md)
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    open(args.out, "w").write(md)
    json.dump(res, open(os.path.splitext(args.out)[0] + ".json", "w"), indent=1)
    print(f"written: {args.out} and {os.path.splitext(args.out)[0]}.json", file=sys.stderr)


def run(args, r, fns, issuer, stand_in, world, team, env):
    records = {}          # kind -> list of per-invocation records
    names = script_names()
    slowlog = {}          # kind -> list of top-level command labels per invocation
    starts = {}           # function -> start of every invocation

    def call(fn, ev, kind, count=True, **kw):
        """One invocation of function fn. count: True records it under kind;
        False (SLOWLOG on) records kind's top-level commands; None neither."""
        f = fns[fn]
        r.reset()
        if count is False:
            r.call("SLOWLOG", "RESET")
        start = time.perf_counter_ns()
        starts.setdefault(fn, []).append(start)
        inv = f.invoke(ev, **kw)
        red = r.read()
        if count:
            records.setdefault(kind, []).append({"fn": fn, "start": start, "ms": inv["ms"], "redis": red})
        elif count is False and kind is not None:
            # SLOWLOG: a client's commands carry its address, a script's own
            # commands "?" (Redis 7) or none; only the client's are round trips.
            entries = reversed(r.call("SLOWLOG", "GET", "-1") or [])
            top = [e for e in entries if len(e) > 4 and e[4] and not e[4].startswith("?")
                   and e[3][0].upper() not in ("CONFIG", "SLOWLOG", "INFO")]
            slowlog.setdefault(kind, []).append(
                [(script_label(names, e[3]) or e[3][0].upper(), int(e[2])) for e in top])
        return inv["answer"]

    def match(count=True):
        players = [str(uuid.uuid4()) for _ in range(team)]
        conns = [base64.b64encode(os.urandom(11)).decode() for _ in players]
        for p, c in zip(players, conns):
            a = call("ws-connect", event("ws-connect.json", connection=c, token=issuer.token(p)),
                     "connect", count)
            assert a["statusCode"] == 200, a
        for i, p in enumerate(players):
            kind = "join (forms the match)" if i == team - 1 else "join (queued)"
            a = call("join", event("join.json", player=p, world=world), kind, count)
            want = "MATCHED" if i == team - 1 else "QUEUED"
            assert json.loads(a["body"])["data"]["status"] == want, a
        for c in conns:
            a = call("ws-disconnect", event("ws-disconnect.json", connection=c), "disconnect", count)
            assert a["statusCode"] == 200, a

    # Warm-up: Redis connections, function library loaded (the first FCALL
    # answers "Function not found"), JWKS fetched, @connections client set up.
    for _ in range(5):
        match(count=None)
    c = base64.b64encode(os.urandom(11)).decode()
    call("ws-connect", event("ws-connect.json", connection=c, token=issuer.token("warm-up")), None, None)
    call("ws-connect", event("ws-message.json", connection=c), None, None)
    call("ws-disconnect", event("ws-disconnect.json", connection=c), None, None)
    call("matcher", event("matcher-schedule.json"), None, False, deadline_ms=600_000)
    # Naming pass, SLOWLOG on (not counted).
    r.call("CONFIG", "SET", "slowlog-log-slower-than", "0")
    for _ in range(5):
        match(count=False)
    r.call("CONFIG", "SET", "slowlog-log-slower-than", "-1")
    for k in list(slowlog):
        slowlog[k] = slowlog[k][-1]             # one invocation's list, as an example

    print(f"{args.matches} matches ...", file=sys.stderr)
    posts0 = len(stand_in.posts)
    for _ in range(args.matches):
        match()
    # Per match: a QUEUED push to each queued joiner, MATCH_FOUND to all.
    expected = args.matches * (2 * team - 1)
    wait_until(lambda: len(stand_in.posts) - posts0 >= expected, 10, f"{expected} pushes")
    pushes = stand_in.posts[posts0:]

    print(f"{args.heartbeats} heartbeats ...", file=sys.stderr)
    conns = []
    for _ in range(args.heartbeats):
        c = base64.b64encode(os.urandom(11)).decode()
        call("ws-connect", event("ws-connect.json", connection=c, token=issuer.token(str(uuid.uuid4()))),
             None, False)
        conns.append(c)
    r.call("CONFIG", "SET", "slowlog-log-slower-than", "0")
    call("ws-connect", event("ws-message.json", connection=conns[0]), "heartbeat ($default)", False)
    r.call("CONFIG", "SET", "slowlog-log-slower-than", "-1")
    slowlog["heartbeat ($default)"] = slowlog["heartbeat ($default)"][-1]
    for c in conns:
        a = call("ws-connect", event("ws-message.json", connection=c), "heartbeat ($default)")
        assert '"registered":true' in a["body"], a
    for c in conns:
        call("ws-disconnect", event("ws-disconnect.json", connection=c), None, False)

    # Housekeeping of the matches: their records expire later and a matcher
    # tick deletes them. Make them due now, time one tick, and an idle one.
    due = 0
    for k in r.call("KEYS", f"{env['MM_NAMESPACE']}*match-expiry*"):
        for m in r.call("ZRANGE", k, "0", "-1"):
            r.call("ZADD", k, "XX", "0", m)
            due += 1
    print(f"matcher: one tick deleting {due} expired match records, one idle tick ...", file=sys.stderr)
    hk = call("matcher", event("matcher-schedule.json"), "matcher tick (housekeeping)", deadline_ms=600_000)
    assert hk["matchesRemoved"] == due, hk
    for _ in range(5):
        call("matcher", event("matcher-schedule.json"), "matcher tick (idle)", deadline_ms=600_000)
    r.call("CONFIG", "SET", "slowlog-log-slower-than", "0")
    call("matcher", event("matcher-schedule.json"), "matcher tick (idle)", False, deadline_ms=600_000)
    r.call("CONFIG", "SET", "slowlog-log-slower-than", "-1")
    slowlog["matcher tick (idle)"] = slowlog["matcher tick (idle)"][-1]

    print(f"matcher: one invocation with a {args.matcher_secs} s deadline, idle ...", file=sys.stderr)
    summary = call("matcher", event("matcher-schedule.json"), "matcher (idle invocation)",
                   deadline_ms=int(time.time() * 1000) + args.matcher_secs * 1000,
                   wait=args.matcher_secs + 30)
    print(f"matcher: the same, sleeping when idle (MM_MATCHER_SLEEP=true) ...", file=sys.stderr)
    for _ in range(5):
        slept = call("matcher-sleeping", event("matcher-schedule.json"), "matcher (sleeping, idle invocation)",
                     deadline_ms=int(time.time() * 1000) + args.matcher_secs * 1000,
                     wait=args.matcher_secs + 30)
        assert slept["stop"] == "asleep" and slept["ticks"] == 1, slept

    # Each invocation's output: the lines its process wrote from its start
    # to the start of the process's next invocation.
    # Everything was written before each response; the readers may lag:
    # wait until no process's output has grown for five polls.
    history = []

    def outputs_settled():
        history.append([len(f.lines) for f in fns.values()])
        return len(history) >= 5 and all(h == history[-1] for h in history[-5:])

    wait_until(outputs_settled, 10, "the functions' output to settle")
    for recs in records.values():
        for x in recs:
            later = [t for t in starts[x["fn"]] if t > x["start"]]
            out = [l for l in fns[x["fn"]].output_since(x["start"]) if not later or l[0] < min(later)]
            emf = [l for l in out if '"_aws"' in l[2]]
            # The warning a one-tick run writes for this emulator's deadline
            # (600000, not Lambda's): never written in AWS.
            local = [l for l in out if LOCAL_ONLY_LINE in l[2]]
            x.update(log_bytes=sum(l[1] for l in out), log_lines=len(out), sample=[l[2] for l in out][:3],
                     emf_bytes=sum(l[1] for l in emf), emf_lines=len(emf),
                     emf_metrics=sorted(emf_metrics(l[2] for l in emf)),
                     local_bytes=sum(l[1] for l in local), local_lines=len(local))

    return {"team": team, "matches": args.matches, "heartbeats": args.heartbeats,
            "records": records, "top_level": slowlog, "pushes": pushes, "due": due,
            "matcher_summary": summary,
            "ready_ms": {n: f.ready_ms for n, f in fns.items()},
            "peak_rss_kb": {n: f.peak_rss_kb() for n, f in fns.items()}}


LOCAL_ONLY_LINE = "implausible invocation deadline"


def emf_metrics(lines):
    """The CloudWatch metrics EMF lines publish: namespace|dimension=value,...|name."""
    out = set()
    for text in lines:
        try:
            line = json.loads(text)
        except ValueError:
            continue
        for directive in line.get("_aws", {}).get("CloudWatchMetrics", []):
            for dims in directive.get("Dimensions", [[]]):
                key = ",".join(f"{d}={line.get(d)}" for d in dims)
                for m in directive.get("Metrics", []):
                    out.add(f"{directive.get('Namespace')}|{key}|{m.get('Name')}")
    return out


# The commands that run an operation: FCALL of the function library, or
# EVALSHA/EVAL where functions are unavailable.
SCRIPT_CALLS = ("fcall", "evalsha", "eval")


def ecpu(red, top_level):
    """ECPUs of one invocation's Redis work (an estimate): per script call
    max(1, execution us / EST["ecpu_us"]) summed as max(calls, usec / 3) per
    command name, 1 per top-level simple command, and at least the KB
    transferred."""
    cmds = red["cmds"]
    cpu = sum(max(c, u / EST["ecpu_us"]) for n, (c, u) in cmds.items() if n in SCRIPT_CALLS)
    cpu += sum(1 for label, _ in top_level if label.isupper() and label.lower() not in SCRIPT_CALLS)
    return max(cpu, red["net"] / 1024)


def summarize(res):
    S = {}
    for kind, recs in res["records"].items():
        ms = [x["ms"] for x in recs]
        top = res["top_level"].get("matcher tick (idle)" if kind.startswith("matcher") else kind, [])
        ev = [tuple(map(sum, zip(*(x["redis"]["cmds"].get(n, (0, 0)) for n in SCRIPT_CALLS))))
              for x in recs]
        S[kind] = {
            "n": len(recs), "p50_ms": pct(ms, 0.5), "p90_ms": pct(ms, 0.9), "p99_ms": pct(ms, 0.99),
            "mean_ms": statistics.mean(ms), "billed_ms": statistics.mean(math.ceil(x) for x in ms),
            "log_bytes": statistics.mean(x["log_bytes"] for x in recs),
            "log_lines": statistics.mean(x["log_lines"] for x in recs),
            "round_trips": len(top), "commands": [t[0] for t in top],
            "scripts": statistics.mean(c for c, _ in ev), "script_us": statistics.mean(u for _, u in ev),
            "redis_kb": statistics.mean(x["redis"]["net"] for x in recs) / 1024,
            "ecpu": statistics.mean(ecpu(x["redis"], top) for x in recs),
            "emf_bytes": statistics.mean(x.get("emf_bytes", 0) for x in recs),
            "emf_lines": statistics.mean(x.get("emf_lines", 0) for x in recs),
            "emf_metrics": sorted({m for x in recs for m in x.get("emf_metrics", [])}),
            "local_bytes": statistics.mean(x.get("local_bytes", 0) for x in recs),
            "local_lines": statistics.mean(x.get("local_lines", 0) for x in recs),
            "sample": recs[0]["sample"]}
    return S


def costs(res):
    S = res["kinds"] = summarize(res)
    N, M = res["team"], res["matches"]
    per_match = {"connect": N, "join (queued)": N - 1, "join (forms the match)": 1, "disconnect": N}
    push_rounds = {"join (queued)": 1, "join (forms the match)": 1}
    # Lambda: measured billed ms, and with the network allowances (estimate).
    for k, s in S.items():
        s["billed_ms_aws_est"] = math.ceil(s["billed_ms"] + s["round_trips"] * EST["redis_rtt_ms"]
                                           + push_rounds.get(k, 0) * EST["push_round_ms"])
    ms_meas = sum(n * S[k]["billed_ms"] for k, n in per_match.items())
    ms_est = sum(n * S[k]["billed_ms_aws_est"] for k, n in per_match.items())
    # Pushes: HTTP bytes, corrected to the AWS host name and role credentials (estimate).
    by_type = {}
    for p in res.get("pushes", []):
        by_type.setdefault(json.loads(p["body"])["type"], []).append(p)
    resp = len("HTTP/1.1 200 OK\r\n") + sum(len(h) for h in (
        "Date: Mon, 30 Nov 2026 12:00:00 GMT\r\n", "Content-Type: application/json\r\n",
        "Content-Length: 0\r\n", "Connection: keep-alive\r\n",
        f"x-amzn-RequestId: {uuid.uuid4()}\r\n", "x-amz-apigw-id: Abcdefghijklmno=\r\n", "\r\n"))
    if "pushes" in res:          # a fresh run (a saved one has push_types already)
        res["push_types"] = {t: {
            "per_match": len(v) / M, "payload": statistics.mean(len(p["body"]) for p in v),
            "request": statistics.mean(p["request_bytes"] for p in v),
            "request_aws": statistics.mean(p["request_bytes"] - p["host_len"] + len(EST["aws_host"])
                                           + EST["session_token_bytes"] for p in v),
            "signed": all(p["signed"] for p in v), "example": v[0]["body"].decode()}
            for t, v in by_type.items()}
        del res["pushes"]
    push_bytes = sum(v["per_match"] * v["request"] for v in res["push_types"].values())
    nat = sum(v["per_match"] * (v["request_aws"] + resp + EST["tls_tcp_bytes"])
              for v in res["push_types"].values())
    # Logs: function output measured; Lambda's platform lines (LogFormat JSON:
    # platform.start and platform.report with X-Ray ids) and the access-log
    # lines of template.yaml's formats sized from their templates (estimate).
    cw = EST["cw_event_bytes"]
    platform = 2 * cw + len('{"time":"2026-11-30T12:00:00.000Z","type":"platform.start","record":'
                            '{"requestId":"8f5a1b2c-3d4e-4f60-8a7b-9c0d1e2f3a4b","version":"$LATEST",'
                            '"tracing":{"spanId":"4a1b7c9d2e3f5a6b","type":"X-Amzn-Trace-Id","value":'
                            '"Root=1-6746c1f0-5e1a2b3c4d5e6f7a8b9c0d1e;Parent=1a2b3c4d5e6f7a8b;Sampled=1"}}}'
                            ) + len('{"time":"2026-11-30T12:00:00.000Z","type":"platform.report","record":'
                                    '{"requestId":"8f5a1b2c-3d4e-4f60-8a7b-9c0d1e2f3a4b","metrics":'
                                    '{"durationMs":5.123,"billedDurationMs":6,"memorySizeMB":256,'
                                    '"maxMemoryUsedMB":31},"tracing":{"spanId":"4a1b7c9d2e3f5a6b","type":'
                                    '"X-Amzn-Trace-Id","value":"Root=1-6746c1f0-5e1a2b3c4d5e6f7a8b9c0d1e;'
                                    'Parent=1a2b3c4d5e6f7a8b;Sampled=1"},"status":"success"}}') + 2
    access_http = cw + 1 + len('{"requestId":"H7bXkjJ1oAMEJdA=","ip":"203.0.113.24","requestTime":'
                               '"30/Nov/2026:12:00:01 +0000","method":"POST","routeKey":"POST /v1/matching/join",'
                               '"status":"200","protocol":"HTTP/1.1","responseLength":"231","responseLatency":"38",'
                               '"integrationLatency":"36","integrationStatus":"200","integrationError":"-",'
                               '"authorizerError":"-"}')
    access_ws = cw + 1 + len('{"requestId":"ABCD1234=","ip":"192.0.2.1","requestTime":"30/Nov/2026:12:00:01 +0000",'
                             '"routeKey":"$disconnect","eventType":"DISCONNECT","connectionId":"L0SM9cOFvHcCIhw=",'
                             '"status":"200","integrationStatus":"200","integrationLatency":"12",'
                             '"integrationError":"-","error":"-"}')
    fn_log = lambda k: S[k]["log_bytes"] + S[k]["log_lines"] * cw
    log_fn = sum(n * fn_log(k) for k, n in per_match.items())
    log_platform = 3 * N * platform
    log_access = N * (access_http + 2 * access_ws)
    ecpu_match = sum(n * S[k]["ecpu"] for k, n in per_match.items())
    hk = S["matcher tick (housekeeping)"]["ecpu"] - S["matcher tick (idle)"]["ecpu"]
    ecpu_match += max(0.0, hk) / max(res["due"], 1)
    script_us_match = sum(n * S[k]["script_us"] for k, n in per_match.items()) + max(
        0.0, S["matcher tick (housekeeping)"]["script_us"] - S["matcher tick (idle)"]["script_us"]) / max(res["due"], 1)
    gbs = MEMORY_GB * PRICE["lambda_gb_s"]
    res["per_match"] = {
        "lambda_ms_measured": ms_meas, "lambda_ms_est": ms_est,
        "script_us": script_us_match, "ecpu_est": ecpu_match,
        "redis_round_trips": sum(n * S[k]["round_trips"] for k, n in per_match.items()),
        "push_bytes_local": push_bytes, "nat_bytes_est": nat,
        "log_bytes_function": log_fn, "log_bytes_platform_est": log_platform,
        "log_bytes_access_est": log_access, "log_bytes": log_fn + log_platform + log_access}
    pm = res["per_match"]
    c = {"http": N * PRICE["http_req"], "ws_messages": (2 * N - 1) * PRICE["ws_msg"],
         "lambda_requests": 3 * N * PRICE["lambda_req"],
         "lambda_duration_measured": ms_meas / 1000 * gbs * 1e6,
         "lambda_duration_est": ms_est / 1000 * gbs * 1e6,
         "ecpu": ecpu_match * PRICE["ecpu_valkey"], "ecpu_redis_oss": ecpu_match * PRICE["ecpu_redis"],
         "nat": nat * 1e6 / 1e9 * PRICE["nat_gb"], "logs": pm["log_bytes"] * 1e6 / 1e9 * PRICE["logs_gb"]}
    c["total"] = sum(c[k] for k in ("http", "ws_messages", "lambda_requests", "lambda_duration_est",
                                    "ecpu", "nat", "logs"))
    hb = S["heartbeat ($default)"]
    hb_c = {"messages": 2 * PRICE["ws_msg"], "lambda_request": PRICE["lambda_req"],
            "lambda_duration": hb["billed_ms_aws_est"] / 1000 * gbs * 1e6,
            "ecpu": hb["ecpu"] * PRICE["ecpu_valkey"],
            "logs": (fn_log("heartbeat ($default)") + platform + access_ws) * 1e6 / 1e9 * PRICE["logs_gb"]}
    hb_c["total"] = sum(hb_c.values())
    c["per_1m_heartbeats"] = hb_c
    res["cost_per_1m_matches"] = c
    # Idle month: the matcher.
    m = S["matcher (idle invocation)"]
    ticks = int(res["matcher_summary"].get("ticks", 1))
    rec = res["records"]["matcher (idle invocation)"][0]
    m["ticks"] = ticks
    m["ecpu_per_tick"] = m["ecpu"] / ticks
    m["script_us_per_tick"] = m["script_us"] / ticks
    m["scripts_per_tick"] = m["scripts"] / ticks
    log = m["log_bytes"] + m["log_lines"] * cw + platform
    res["idle_month"] = {
        "ecpus": MATCHER_INVOCATIONS_MONTH * m["ecpu"],
        "ecpu_cost": MATCHER_INVOCATIONS_MONTH * m["ecpu"] * PRICE["ecpu_valkey"] / 1e6,
        "ecpu_cost_redis_oss": MATCHER_INVOCATIONS_MONTH * m["ecpu"] * PRICE["ecpu_redis"] / 1e6,
        "gb_s": MATCHER_INVOCATIONS_MONTH * m["billed_ms"] / 1000 * MEMORY_GB,
        "duration_cost": MATCHER_INVOCATIONS_MONTH * m["billed_ms"] / 1000 * MEMORY_GB * PRICE["lambda_gb_s"],
        "log_bytes_invocation": log, "log_gb": MATCHER_INVOCATIONS_MONTH * log / 1e9,
        "log_cost": MATCHER_INVOCATIONS_MONTH * log / 1e9 * PRICE["logs_gb"],
        "redis_kb_per_invocation": rec["redis"]["net"] / 1024}
    res["months"] = {mode: {label: month(res, mode, matches, platform)
                            for label, matches in SCENARIOS} for mode in NETWORK_MODES}


def month(res, mode, matches, platform):
    """One month per network mode: rows of (item, quantity, USD, kind), kind
    being list price, measured or estimate as docs/deploy.md labels them."""
    S, c, pm = res["kinds"], res["cost_per_1m_matches"], res["per_match"]
    N, cw, gbs = res["team"], EST["cw_event_bytes"], MEMORY_GB * PRICE["lambda_gb_s"]
    t = EST["connected_minutes"] if matches else 0
    rows = []

    def row(item, quantity, usd, kind):
        rows.append({"item": item, "quantity": quantity, "usd": usd, "kind": kind})

    # Network: the only lines that differ between the modes (and NAT data).
    if mode == "NatGateway":
        row("NAT gateway", f"{MONTH_HOURS} h × ${PRICE['nat_hour']}", MONTH_HOURS * PRICE["nat_hour"], "list price")
        row("its public IPv4 address", f"{MONTH_HOURS} h × ${PRICE['ipv4_hour']}",
            MONTH_HOURS * PRICE["ipv4_hour"], "list price")
    else:
        row("egress-only internet gateway", "no hourly or per-GB charge", 0.0, "list price")
    row("Valkey serverless, minimum data", f"{VALKEY_MIN_GB} GB × {MONTH_HOURS} h × ${PRICE['valkey_gb_hour']}",
        VALKEY_MIN_GB * MONTH_HOURS * PRICE["valkey_gb_hour"], "list price")
    row("alarms", f"{ALARM_METRICS} alarm metrics", ALARM_METRICS * PRICE["alarm_metric"], "list price")
    row("dashboard", f"{DASHBOARDS}", DASHBOARDS * PRICE["dashboard"], "list price")

    # The matcher, sleeping when idle: an idle minute costs one measured
    # sleeping invocation (one tick, the sleep script), a busy minute (EST) the
    # measured 60 s loop.
    idle, busy = S["matcher (sleeping, idle invocation)"], S["matcher (idle invocation)"]
    busy_n = min(MATCHER_INVOCATIONS_MONTH, EST["busy_minutes_per_match"] * matches)
    idle_n = MATCHER_INVOCATIONS_MONTH - busy_n
    idle_ms = idle["billed_ms_aws_est"]
    idle_log = ((idle["log_bytes"] - idle["emf_bytes"] - idle["local_bytes"])
                + (idle["log_lines"] - idle["emf_lines"] - idle["local_lines"]) * cw + platform)
    busy_log = busy["log_bytes"] + busy["log_lines"] * cw + platform
    row("matcher requests", f"{MATCHER_INVOCATIONS_MONTH:,}", MATCHER_INVOCATIONS_MONTH * PRICE["lambda_req"] / 1e6,
        "list price")
    row("matcher duration, idle minutes", f"{idle_n:,} × {idle_ms} ms (an invocation that ticks once and "
        f"sleeps, measured {idle['billed_ms']:.1f} ms + Redis allowance)", idle_n * idle_ms / 1000 * gbs,
        "estimate")
    if busy_n:
        row("matcher duration, busy minutes", f"{busy_n:,} × {busy['billed_ms'] / 1000:.3f} s (the measured 60 s loop; "
            f"{EST['busy_minutes_per_match']} busy minutes per match)", busy_n * busy["billed_ms"] / 1000 * gbs,
            "estimate")
    ecpus = idle_n * idle["ecpu"] + busy_n * busy["ecpu"]
    row("Valkey ECPUs of the matcher", f"{ecpus / 1e6:.1f} M ({idle['ecpu']:.0f} per idle tick"
        + (f", {busy['ecpu']:.0f} per busy minute" if busy_n else "") + ")",
        ecpus * PRICE["ecpu_valkey"] / 1e6, "estimate")
    log_bytes = idle_n * idle_log + busy_n * busy_log
    row("matcher log ingestion", f"{log_bytes / 1e9:.3f} GB ({idle_log:.0f} B per idle invocation: summary and "
        "platform lines, no EMF" + (f"; {busy_log:,.0f} B per busy one" if busy_n else "") + ")",
        log_bytes / 1e9 * PRICE["logs_gb"], "estimate")
    metrics = busy["emf_metrics"] or idle["emf_metrics"]
    n_metrics = len(metrics) or 6 * 3
    hours_with_data = 1 - math.exp(-busy_n / MONTH_HOURS) if busy_n else 0.0
    row("custom metrics (EMF)", f"{n_metrics} metrics (measured) × {hours_with_data:.0%} of the hours with data",
        n_metrics * PRICE["metric_month"] * hours_with_data, "estimate")
    api_invocations = matches * (3 * N + N * t)
    traces = MATCHER_INVOCATIONS_MONTH + api_invocations
    row("X-Ray traces", f"{traces:,} (every invocation sampled: the default rule records the first request "
        "each second)", traces * PRICE["xray_trace"] / 1e6, "estimate")

    if matches:
        f = matches / 1e6
        row("matches: HTTP API joins, WebSocket pushes, Lambda requests",
            f"{matches:,} matches of {N}", f * (c["http"] + c["ws_messages"] + c["lambda_requests"]), "list price")
        row("matches: Lambda duration, ECPUs, logs", f"{pm['lambda_ms_est']:.0f} ms, {pm['ecpu_est']:.0f} ECPUs, "
            f"{pm['log_bytes']:,.0f} log bytes per match", f * (c["lambda_duration_est"] + c["ecpu"] + c["logs"]),
            "estimate")
        row("connection minutes and heartbeats", f"{N} players × {t} min per match",
            f * N * t * (PRICE["ws_conn_min"] + c["per_1m_heartbeats"]["total"]), "estimate")
        row("match events (EventBridge PutEvents)", f"{matches:,}", f * PRICE["events"], "estimate")
        # At 14 matches an hour and 2 busy minutes each, nearly every match's
        # first join finds the matcher asleep: one wake-up each, at most.
        row("matcher wake-ups (a MatcherWake event and an invocation each)", f"≤ {matches:,}",
            f * (PRICE["events"] + PRICE["lambda_req"]), "estimate")
        if mode == "NatGateway":
            row("NAT gateway data", f"{pm['nat_bytes_est']:,.0f} B per match", f * c["nat"], "estimate")
        else:
            fetches = min(EST["jwks_fetches_per_hour"] * MONTH_HOURS, matches * N)
            row("JWKS proxy requests", f"≤ {fetches:,}", fetches * PRICE["http_req"] / 1e6, "estimate")
    total = sum(r["usd"] for r in rows)
    # Should idle invocations keep writing their per-world EMF lines, every
    # metric is billed every hour and the lines are ingested.
    idle_emf = (n_metrics * PRICE["metric_month"] * (1 - hours_with_data)
                + idle_n * (idle["emf_bytes"] + idle["emf_lines"] * cw) / 1e9 * PRICE["logs_gb"])
    return {"rows": rows, "total": total, "total_rounded_rows": sum(round(r["usd"], 2) for r in rows),
            "busy_minutes": busy_n, "metrics": metrics, "if_idle_ticks_write_emf": idle_emf}


def report(res):
    S, pm, c, i = res["kinds"], res["per_match"], res["cost_per_1m_matches"], res["idle_month"]
    L = ["## Cost measurements (scripts/measure-costs.sh)", "",
         f"Measured {res['date']} on this machine ({res['cpu']}, {res['cores']} cores, load "
         f"{' '.join(f'{x:.2f}' for x in res['load'])}; x86_64, not AWS's arm64), redis-server "
         f"{res['redis_version']} on 127.0.0.1, binaries {res['bin_dir']}, RUST_LOG={res['rust_log']}; "
         f"{res['matches']} matches of N = {res['team']}, {res['heartbeats']} heartbeats.", "",
         "| invocation | n | p50 ms | p90 ms | p99 ms | mean billed ms | est. in AWS ms | Redis round trips "
         "| script calls | script us | Redis KB | ECPU est. | log bytes | log lines |",
         "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for k, s in S.items():
        L.append(f"| {k} | {s['n']} | {s['p50_ms']:.2f} | {s['p90_ms']:.2f} | {s['p99_ms']:.2f} | "
                 f"{s['billed_ms']:.2f} | {s['billed_ms_aws_est']} | {s['round_trips']} | {s['scripts']:.2f} | "
                 f"{s['script_us']:.1f} | {s['redis_kb']:.2f} | {s['ecpu']:.1f} | {s['log_bytes']:.0f} | "
                 f"{s['log_lines']:.2f} |")
    L += ["", "Top-level Redis commands (one invocation, SLOWLOG pass, us with SLOWLOG on): "
          + "; ".join(f"{k}: {', '.join(f'{n} {us}' for n, us in v)}" for k, v in res["top_level"].items()),
          "", "Peak RSS (VmHWM, kB): " + ", ".join(f"{k} {v}" for k, v in res["peak_rss_kb"].items()),
          "Start to first GET .../next (ms): " + ", ".join(f"{k} {v:.1f}" for k, v in res["ready_ms"].items()),
          f"Matcher summary: {json.dumps(res['matcher_summary'])}", ""]
    m = S["matcher (idle invocation)"]
    L.append(f"Idle matcher: {m['ticks']} ticks, per tick {m['scripts_per_tick']:.2f} scripts, "
             f"{m['script_us_per_tick']:.1f} us, {m['ecpu_per_tick']:.1f} ECPU (est.); "
             f"{i['redis_kb_per_invocation']:.1f} KB Redis traffic per invocation")
    L.append(f"Housekeeping: {res['due']} expired match records deleted in one tick")
    L += ["", "| push | per match | payload bytes | HTTP request bytes (local / AWS est.) | SigV4 |", "|---|---|---|---|---|"]
    for t, v in res["push_types"].items():
        L.append(f"| {t} | {v['per_match']:.2f} | {v['payload']:.0f} | {v['request']:.0f} / "
                 f"{v['request_aws']:.0f} | {v['signed']} |")
    L += ["", "Per match: " + ", ".join(f"{k} {v:.1f}" for k, v in pm.items()), "",
          "Costs per 1 M matches (USD): " + ", ".join(f"{k} {v:.2f}" for k, v in c.items()
                                                       if not isinstance(v, dict)),
          "Per 1 M heartbeats (USD): " + ", ".join(f"{k} {v:.3f}" for k, v in c["per_1m_heartbeats"].items()),
          "Idle month: " + ", ".join(f"{k} {v:.3f}" for k, v in i.items()), "",
          "Estimates used: " + json.dumps(EST), ""]
    for mode, scenarios in res["months"].items():
        for label, mo in scenarios.items():
            L += [f"### {label}, NetworkMode={mode}{' (default)' if mode == NETWORK_MODES[0] else ''}", "",
                  "| item | quantity | cost | kind |", "|---|---|---|---|"]
            L += [f"| {r['item']} | {r['quantity']} | ${r['usd']:.2f} | {r['kind']} |" for r in mo["rows"]]
            L += [f"| **total** | | **${mo['total']:.2f}** | |", "",
                  f"If idle invocations kept writing their per-world EMF lines: "
                  f"+${mo['if_idle_ticks_write_emf']:.2f} (metrics billed every hour, and the lines).", ""]
    for k, s in S.items():
        if s["sample"]:
            L.append(f"{k}, first output line: `{s['sample'][0][:240]}`")
    return "\n".join(L) + "\n"


if __name__ == "__main__":
    main()
