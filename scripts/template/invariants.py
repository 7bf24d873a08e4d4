#!/usr/bin/env python3
"""Properties of the deployed stack that the Rust code and the docs assume.

Usage: invariants.py TRANSLATED.json [--network-mode Ipv6Egress|NatGateway]

The network layout is checked for the given NetworkMode, or for every mode
when none is given (scripts/check-template.sh runs it once per mode)."""
import argparse
import json
import re
import sys

NETWORK_MODES = ["Ipv6Egress", "NatGateway"]
cli = argparse.ArgumentParser(description="template invariants (see the docstring)")
cli.add_argument("template")
cli.add_argument("--network-mode", choices=NETWORK_MODES)
args = cli.parse_args()

t = json.load(open(args.template))
res = t["Resources"]
params = t.get("Parameters", {})
conditions = t.get("Conditions", {})
errors = []


def check(cond, msg):
    if not cond:
        errors.append(msg)


def props(name):
    return res.get(name, {}).get("Properties", {})


def ref(name):
    return {"Ref": name}


def arn_of(name):
    return {"Fn::GetAtt": [name, "Arn"]}


def is_alarm_actions(v):
    """AlarmActions/OKActions: the topic if AlarmTopicArn is set, else none."""
    return v == {"Fn::If": ["HasAlarmTopic", [ref("AlarmTopicArn")], ref("AWS::NoValue")]}


NO_VALUE = ref("AWS::NoValue")

binaries = {
    "JoinFunction": "join",
    "LeaveFunction": "leave",
    "StatusFunction": "status",
    "MatcherFunction": "matcher",
    "WsConnectFunction": "ws-connect",
    "WsDisconnectFunction": "ws-disconnect",
}
# The functions that may call @connections (POST: push, DELETE: close).
pushers = {"JoinFunction", "MatcherFunction", "WsConnectFunction"}
# Every function gets all of these (MM_RULES / MM_WORLDS: exactly one, below).
env_vars = {
    "REDIS_URL", "REDIS_CLUSTER", "MM_REPLICA_ACKS", "MM_NAMESPACE", "MM_INSTANT_MATCH",
    "MM_HEARTBEAT_SECS", "MM_PRESENCE_TIMEOUT_SECS", "MM_PARTY_TTL_SECS",
    "MM_MATCH_EVENTS", "MM_WS_ENDPOINT", "AUTH_ISSUER", "AUTH_AUDIENCE", "AUTH_JWKS_URL", "RUST_LOG",
    "MM_MATCHER_SLEEP", "MM_WAKE_BUS", "MM_EVENTS_ENDPOINT",
}
# The functions that can make work for a sleeping matcher: each may wake it
# (PutEvents, source matchmaking.wake, on MatchEventBus).
wakers = {"JoinFunction", "LeaveFunction", "StatusFunction", "WsConnectFunction", "WsDisconnectFunction"}
# Gone from the application (registrations lapse on missed heartbeats now).
removed_env_vars = {"MM_CONNECTION_TTL_SECS"}


def param_default(name):
    return params.get(name, {}).get("Default")


def eval_condition(expr, values):
    """A Conditions expression, with parameters taken from `values`."""
    if isinstance(expr, dict) and len(expr) == 1:
        (fn, arg), = expr.items()
        if fn == "Ref":
            return values.get(arg)
        if fn == "Condition":
            return eval_condition(conditions[arg], values)
        if fn == "Fn::Equals":
            a, b = (eval_condition(x, values) for x in arg)
            return str(a) == str(b)
        if fn == "Fn::Not":
            return not eval_condition(arg[0], values)
        if fn == "Fn::And":
            return all(eval_condition(x, values) for x in arg)
        if fn == "Fn::Or":
            return any(eval_condition(x, values) for x in arg)
    if isinstance(expr, (str, int, float, bool)):
        return expr
    raise ValueError("cannot evaluate condition %s" % json.dumps(expr))


def resolve_if(value, values):
    """Resolves Fn::If (nested) under the parameter `values`; NO_VALUE stays."""
    while isinstance(value, dict) and list(value) == ["Fn::If"]:
        name, yes, no = value["Fn::If"]
        value = yes if eval_condition(conditions[name], values) else no
    return value


defaults = {k: param_default(k) for k in params}
# (label, parameter values, the variable that must be set, what it must be)
world_config_cases = [
    ("default parameters", defaults, "MM_WORLDS", ref("Worlds")),
    ("Rules given", dict(defaults, Rules='{"worlds":[{"name":"duel","teamSize":2}]}'), "MM_RULES", ref("Rules")),
]

# ---------------------------------------------------------------- functions
functions = {k for k, v in res.items() if v["Type"] == "AWS::Lambda::Function"}
check(functions == set(binaries), "Lambda functions are %s" % sorted(functions))

# arm64 unless the Architecture parameter (only meant for local x86 builds) says otherwise.
check(params.get("Architecture", {}).get("Default") == "arm64", "parameter Architecture must default to arm64")

log_groups = {k: v["Properties"] for k, v in res.items() if v["Type"] == "AWS::Logs::LogGroup"}
for fn, binary in binaries.items():
    r = res.get(fn)
    if r is None:
        continue
    p, meta = r["Properties"], r.get("Metadata", {})
    check(meta.get("BuildMethod") == "rust-cargolambda", fn + ": BuildMethod")
    check(meta.get("BuildProperties", {}).get("Binary") == binary, fn + ": Binary != " + binary)
    check(p.get("Runtime") == "provided.al2023", fn + ": Runtime")
    check(p.get("Architectures") == [ref("Architecture")], fn + ": Architectures is not [!Ref Architecture]")
    check(p.get("Handler") == "bootstrap", fn + ": Handler")
    check(p.get("MemorySize") == 256, fn + ": MemorySize")
    check(p.get("Timeout") == (60 if fn == "MatcherFunction" else 10), fn + ": Timeout")
    check(p.get("TracingConfig", {}).get("Mode") == "Active", fn + ": tracing not Active")
    subnets = [s.get("Ref") for s in p.get("VpcConfig", {}).get("SubnetIds", [])]
    check(subnets == ["PrivateSubnetA", "PrivateSubnetB"], fn + ": not in the private subnets")
    env = p.get("Environment", {}).get("Variables", {})
    missing = env_vars - set(env)
    check(not missing, "%s: missing env %s" % (fn, sorted(missing)))
    check(not (removed_env_vars & set(env)), "%s: obsolete env %s" % (fn, sorted(removed_env_vars & set(env))))
    check(env.get("MM_HEARTBEAT_SECS") == ref("HeartbeatSeconds"), fn + ": MM_HEARTBEAT_SECS is not HeartbeatSeconds")
    check(env.get("MM_PRESENCE_TIMEOUT_SECS") == ref("PresenceTimeoutSeconds"),
          fn + ": MM_PRESENCE_TIMEOUT_SECS is not PresenceTimeoutSeconds")
    check(env.get("MM_PARTY_TTL_SECS") == ref("PartyTtlSeconds"), fn + ": MM_PARTY_TTL_SECS is not PartyTtlSeconds")
    # Every function that may form a match must know events are on, or it
    # would settle the match's outbox entry with its event unsent.
    check(env.get("MM_MATCH_EVENTS") == ref("MatchEvents"), fn + ": MM_MATCH_EVENTS is not MatchEvents")
    # Only the matcher publishes match events: the bus and source are its
    # alone (the endpoint serves every function's wake-ups too).
    for var in ("MM_EVENT_BUS", "MM_EVENT_SOURCE"):
        check((var in env) == (fn == "MatcherFunction"), "%s: %s should be set only on the matcher" % (fn, var))
    # The matcher sleeps only where every function that makes work wakes it.
    check(env.get("MM_MATCHER_SLEEP") == "true", fn + ": MM_MATCHER_SLEEP is not true")
    check(env.get("MM_WAKE_BUS") == ref("MatchEventBus"), fn + ": MM_WAKE_BUS is not MatchEventBus")
    # The application refuses MM_RULES next to MM_WORLDS: exactly one is set,
    # whatever the Rules parameter says.
    for label, values, want_var, want_value in world_config_cases:
        try:
            present = {v: resolve_if(env[v], values) for v in ("MM_RULES", "MM_WORLDS") if v in env}
        except (ValueError, KeyError) as e:
            check(False, "%s: MM_RULES/MM_WORLDS do not resolve (%s)" % (fn, e))
            continue
        present = {v: x for v, x in present.items() if x != NO_VALUE}
        check(present == {want_var: want_value},
              "%s, %s: expected only %s=%s, got %s" % (fn, label, want_var, json.dumps(want_value), json.dumps(present)))
    # JSON logs into the default group /aws/lambda/<name>, which the stack
    # creates with a retention (no LoggingConfig.LogGroup: it would have to
    # be named independently of the function, and Lambda would write there).
    check(p.get("LoggingConfig") == {"LogFormat": "JSON"}, fn + ": LoggingConfig is not {LogFormat: JSON}")
    lg = log_groups.get(fn + "LogGroup", {})
    check(lg.get("LogGroupName") == {"Fn::Sub": "/aws/lambda/${%s}" % fn},
          fn + ": no log group /aws/lambda/${%s}" % fn)
    check(lg.get("RetentionInDays") == ref("LogRetentionDays"), fn + ": log group retention is not LogRetentionDays")
    if fn != "MatcherFunction":
        check("ReservedConcurrentExecutions" not in p, fn + ": unexpected reserved concurrency")
    role = props(fn + "Role")
    arns = json.dumps(role.get("ManagedPolicyArns", []))
    check("AWSLambdaVPCAccessExecutionRole" in arns, fn + ": no VPC access policy")
    check(("PushToConnectionsPolicy" in arns) == (fn in pushers),
          fn + ": push permission should be %s" % (fn in pushers))
    check(("PublishMatchEventsPolicy" in arns) == (fn == "MatcherFunction"),
          fn + ": match-event permission should be %s" % (fn == "MatcherFunction"))
    check(("WakeMatcherPolicy" in arns) == (fn in wakers),
          fn + ": wake permission should be %s" % (fn in wakers))
    # The only inline policy: the matcher's on-failure destination (SAM adds it).
    inline = role.get("Policies", [])
    if fn == "MatcherFunction":
        statements = [s for pol in inline for s in pol["PolicyDocument"]["Statement"]]
        check(statements == [{"Action": "sqs:SendMessage", "Effect": "Allow",
                              "Resource": arn_of("MatcherFailureQueue")}],
              "MatcherFunctionRole: inline policies are %s" % json.dumps(inline))
    else:
        check(not inline, fn + ": unexpected inline role policies")

# ------------------------------------------------------------------ matcher
# Reserved concurrency is a parameter, off by default: new accounts have a
# concurrency quota of 10, and Lambda keeps up to 100 of it unreserved.
matcher = props("MatcherFunction")
check(matcher.get("ReservedConcurrentExecutions") ==
      {"Fn::If": ["HasMatcherReservedConcurrency", ref("MatcherReservedConcurrency"), NO_VALUE]},
      "matcher: ReservedConcurrentExecutions is not conditional on MatcherReservedConcurrency")
check(str(params.get("MatcherReservedConcurrency", {}).get("Default")) == "0",
      "parameter MatcherReservedConcurrency must default to 0 (no reservation)")
check(conditions.get("HasMatcherReservedConcurrency") ==
      {"Fn::Not": [{"Fn::Equals": [ref("MatcherReservedConcurrency"), 0]}]},
      "condition HasMatcherReservedConcurrency changed")

all_rules = {k: v["Properties"] for k, v in res.items() if v["Type"] == "AWS::Events::Rule"}
# The matcher's schedule (on the default bus); the match-event rule is checked below.
rules = {k: v for k, v in all_rules.items() if "ScheduleExpression" in v}
check([r.get("ScheduleExpression") for r in rules.values()] == ["rate(1 minute)"],
      "matcher schedule is %s" % [r.get("ScheduleExpression") for r in rules.values()])
check(set(all_rules) - set(rules) == {"MatchFormedRule", "AllocatorRule", "MatcherFunctionWake"},
      "event rules besides the schedule: %s" % sorted(set(all_rules) - set(rules)))
# The wake-up rule: MatcherWake (source matchmaking.wake) on MatchEventBus
# invokes the matcher, with the schedule's retries and dead-letter queue.
wake_rule = all_rules.get("MatcherFunctionWake", {})
check(wake_rule.get("EventBusName") == ref("MatchEventBus"), "MatcherFunctionWake: not on MatchEventBus")
check(wake_rule.get("EventPattern") == {"source": ["matchmaking.wake"], "detail-type": ["MatcherWake"]},
      "MatcherFunctionWake: pattern is %s" % json.dumps(wake_rule.get("EventPattern")))
check([t.get("Arn") for t in wake_rule.get("Targets", [])] == [arn_of("MatcherFunction")],
      "MatcherFunctionWake: target is not the matcher")
for target in wake_rule.get("Targets", []):
    check(target.get("DeadLetterConfig") == {"Arn": arn_of("MatcherFailureQueue")},
          "MatcherFunctionWake: target has no dead-letter queue MatcherFailureQueue")
for name, rule in rules.items():
    for target in rule.get("Targets", []):
        check(target.get("Arn") == arn_of("MatcherFunction"), name + ": target is not the matcher")
        check(target.get("DeadLetterConfig") == {"Arn": arn_of("MatcherFailureQueue")},
              name + ": target has no dead-letter queue MatcherFailureQueue")

# Async invocations: no retry after a function error, events older than a
# minute dropped (throttled ones are retried until then), failures recorded.
eics = [v["Properties"] for v in res.values() if v["Type"] == "AWS::Lambda::EventInvokeConfig"]
check(len(eics) == 1 and eics[0].get("FunctionName") == ref("MatcherFunction"),
      "expected one EventInvokeConfig, for the matcher")
for eic in eics:
    check(eic.get("MaximumRetryAttempts") == 0, "matcher: MaximumRetryAttempts != 0")
    check(eic.get("MaximumEventAgeInSeconds") == 60, "matcher: MaximumEventAgeInSeconds != 60")
    check(eic.get("DestinationConfig", {}).get("OnFailure", {}).get("Destination") == arn_of("MatcherFailureQueue"),
          "matcher: on-failure destination is not MatcherFailureQueue")
check(res.get("MatcherFailureQueue", {}).get("Type") == "AWS::SQS::Queue", "MatcherFailureQueue missing")
qp = [v["Properties"] for v in res.values() if v["Type"] == "AWS::SQS::QueuePolicy"]
check(any(st.get("Principal") == {"Service": "events.amazonaws.com"} and
          st.get("Condition", {}).get("ArnEquals", {}).get("aws:SourceArn") ==
          [arn_of(next(iter(rules), "?")), arn_of("MatcherFunctionWake")]
          for p in qp for st in p["PolicyDocument"]["Statement"]),
      "MatcherFailureQueue: no policy letting the matcher's rules (only) send to it")

# ------------------------------------------------------------- match events
# A custom bus; PutEvents on it (source matchmaking) for the matcher only;
# the matcher told the bus (MM_EVENT_BUS) and the source its rule matches.
check(res.get("MatchEventBus", {}).get("Type") == "AWS::Events::EventBus", "MatchEventBus missing")
check(props("MatchEventBus").get("Name") == {"Fn::Sub": "${AWS::StackName}-matches"}, "MatchEventBus: name")
publish_policy = props("PublishMatchEventsPolicy").get("PolicyDocument", {}).get("Statement", [])
check(publish_policy == [{"Effect": "Allow", "Action": "events:PutEvents", "Resource": arn_of("MatchEventBus"),
                          "Condition": {"StringEquals": {"events:source": "matchmaking"}}}],
      "PublishMatchEventsPolicy: expected events:PutEvents on MatchEventBus (source matchmaking) only, got %s"
      % json.dumps(publish_policy))
wake_policy = props("WakeMatcherPolicy").get("PolicyDocument", {}).get("Statement", [])
check(wake_policy == [{"Effect": "Allow", "Action": "events:PutEvents", "Resource": arn_of("MatchEventBus"),
                       "Condition": {"StringEquals": {"events:source": "matchmaking.wake"}}}],
      "WakeMatcherPolicy: expected events:PutEvents on MatchEventBus (source matchmaking.wake) only, got %s"
      % json.dumps(wake_policy))
for name, v in res.items():
    if v["Type"] in ("AWS::IAM::ManagedPolicy", "AWS::IAM::Policy", "AWS::IAM::Role") and \
            name not in ("PublishMatchEventsPolicy", "WakeMatcherPolicy"):
        check("events:PutEvents" not in json.dumps(v.get("Properties", {})), name + ": grants events:PutEvents")
matcher_env = props("MatcherFunction").get("Environment", {}).get("Variables", {})
check(matcher_env.get("MM_EVENT_BUS") == ref("MatchEventBus"), "matcher: MM_EVENT_BUS is not MatchEventBus")
check(matcher_env.get("MM_EVENT_SOURCE") == "matchmaking", "matcher: MM_EVENT_SOURCE is not matchmaking")
check(param_default("MatchEvents") == "true" and params.get("MatchEvents", {}).get("AllowedValues") == ["true", "false"],
      "parameter MatchEvents must default to true (true/false)")
for rule_name, want_target, condition in (("MatchFormedRule", arn_of("MatchEventsLogGroup"), None),
                                          ("AllocatorRule", ref("AllocatorFunctionArn"), "HasAllocatorFunction")):
    event_rule = all_rules.get(rule_name, {})
    check(res.get(rule_name, {}).get("Condition") == condition, "%s: condition is not %s" % (rule_name, condition))
    check(event_rule.get("EventBusName") == ref("MatchEventBus"), rule_name + ": not on MatchEventBus")
    check(event_rule.get("EventPattern") == {"source": ["matchmaking"],
                                           "detail-type": ["MatchFormed", "BackfillFilled", "BackfillExpired"]},
          "%s: pattern is %s" % (rule_name, json.dumps(event_rule.get("EventPattern"))))
    targets = event_rule.get("Targets", [])
    check([x.get("Arn") for x in targets] == [want_target], "%s targets are %s" % (rule_name, json.dumps(targets)))
    for x in targets:
        check(x.get("DeadLetterConfig") == {"Arn": arn_of("MatchEventsDeadLetterQueue")},
              "%s target %s: no dead-letter queue" % (rule_name, x.get("Id")))
allocator_permission = res.get("AllocatorInvokePermission", {})
check(allocator_permission.get("Condition") == "HasAllocatorFunction"
      and allocator_permission.get("Properties", {}).get("SourceArn") == arn_of("AllocatorRule")
      and allocator_permission.get("Properties", {}).get("Principal") == "events.amazonaws.com",
      "AllocatorInvokePermission: EventBridge may invoke the allocator for MatchFormedRule only, if given")
check(props("MatchEventsLogGroup").get("RetentionInDays") == ref("LogRetentionDays"),
      "MatchEventsLogGroup: retention is not LogRetentionDays")

# ----------------------------------------------------------------- HTTP API
# The routes come from the template itself (the OpenAPI body SAM builds from
# the functions' HttpApi events); that they are exactly the Rust route table
# (functions/lambda-common/src/http/routes.rs) is checked by
# functions/lambda-common/tests/routes.rs. Here: each route is sound.
body = props("HttpApi").get("Body", {})
routes = {}  # (method, path) -> function logical id
for path, methods in body.get("paths", {}).items():
    for method, op in methods.items():
        integ = op.get("x-amazon-apigateway-integration", {})
        target = json.dumps(integ.get("uri", ""))
        fn = next((f for f in binaries if "${%s.Arn}" % f in target), None)
        check(fn is not None, "%s %s: integration targets none of the functions (%s)" % (method, path, target))
        routes[(method, path)] = fn
        check(op.get("security") == [{"JwtAuthorizer": []}], "%s %s: not behind JwtAuthorizer" % (method, path))
        check(integ.get("payloadFormatVersion") == "2.0", "%s %s: payload format" % (method, path))
check(routes, "HTTP API: no routes")


def http_api_source_arn(method, path):
    """The SourceArn SAM gives a route's invoke permission: path parameters
    become `*`, any stage."""
    return {"Fn::Sub": ["arn:${AWS::Partition}:execute-api:${AWS::Region}:${AWS::AccountId}:${__ApiId__}/${__Stage__}/%s%s"
                        % (method.upper(), re.sub(r"\{[^}/]+\}", "*", path)),
                        {"__ApiId__": ref("HttpApi"), "__Stage__": "*"}]}


# API Gateway may invoke each route's function for that route, and for
# nothing else: one permission per route, none left over.
http_permissions = [p for p in (v["Properties"] for v in res.values() if v["Type"] == "AWS::Lambda::Permission")
                    if "HttpApi" in json.dumps(p.get("SourceArn"))]
for (method, path), fn in routes.items():
    want_permission = {"Action": "lambda:InvokeFunction", "FunctionName": ref(fn),
                       "Principal": "apigateway.amazonaws.com", "SourceArn": http_api_source_arn(method, path)}
    check(want_permission in http_permissions, "%s %s: no permission for API Gateway to invoke %s" % (method, path, fn))
check(len(http_permissions) == len(routes),
      "HTTP API: %d invoke permissions for %d routes" % (len(http_permissions), len(routes)))

# CORS only when origins are given, as a list made at deploy time.
cors = body.get("x-amazon-apigateway-cors")
check(isinstance(cors, dict) and cors.get("Fn::If", [None])[0] == "HasCors" and cors["Fn::If"][2] == NO_VALUE,
      "HTTP API: CORS is not conditional on HasCors")
if isinstance(cors, dict) and "Fn::If" in cors:
    check(isinstance(cors["Fn::If"][1].get("allowOrigins"), dict) and "Fn::Split" in cors["Fn::If"][1]["allowOrigins"],
          "HTTP API: allowOrigins is not a Fn::Split of CorsAllowedOrigins")
    # A browser's preflight must allow every method a route answers.
    allowed = {m.upper() for m in cors["Fn::If"][1].get("allowMethods", [])}
    missing = {m.upper() for m, _ in routes} - allowed
    check(not missing, "HTTP API: CORS allowMethods lacks %s" % sorted(missing))

stages = {k: v["Properties"] for k, v in res.items() if v["Type"] == "AWS::ApiGatewayV2::Stage"}
http_stages = [p for p in stages.values() if p.get("ApiId") == ref("HttpApi")]
ws_stages = [p for p in stages.values() if p.get("ApiId") == ref("WebSocketApi")]
check(len(http_stages) == 1 and len(ws_stages) == 1, "expected one stage per API, got %s" % sorted(stages))


def check_stage(label, stage, log_group, rate, burst):
    als = stage.get("AccessLogSettings", {})
    check(als.get("DestinationArn") == arn_of(log_group), label + ": access logs do not go to " + log_group)
    fmt = als.get("Format", "")
    try:
        fields = json.loads(re.sub(r"\$context\.[A-Za-z.]+", "x", fmt))
    except ValueError:
        fields = None
    check(isinstance(fields, dict) and "requestId" in fields, label + ": access log format is not a JSON object with requestId")
    check("querystring" not in fmt.lower() and "$context.path" not in fmt,
          label + ": access log format must not log the query string (WebSocket tokens travel in ?token=)")
    drs = stage.get("DefaultRouteSettings", {})
    check(drs.get("ThrottlingRateLimit") == ref(rate) and drs.get("ThrottlingBurstLimit") == ref(burst),
          label + ": default route throttling is not %s/%s" % (rate, burst))
    check(log_groups.get(log_group, {}).get("RetentionInDays") == ref("LogRetentionDays"),
          log_group + ": retention is not LogRetentionDays")


for s in http_stages:
    check_stage("HTTP API stage", s, "HttpApiAccessLogs", "HttpApiThrottleRate", "HttpApiThrottleBurst")

# ------------------------------------------------------------ WebSocket API
ws_routes = {v["Properties"]["RouteKey"]: (k, v["Properties"]) for k, v in res.items()
             if v["Type"] == "AWS::ApiGatewayV2::Route" and v["Properties"].get("ApiId") == ref("WebSocketApi")}
check(set(ws_routes) == {"$connect", "$disconnect", "$default"}, "WebSocket routes are %s" % sorted(ws_routes))
# Which function serves each route: ws-connect dispatches $connect and
# $default (heartbeats) on requestContext.routeKey.
ws_route_functions = {"$connect": "WsConnectFunction", "$default": "WsConnectFunction",
                      "$disconnect": "WsDisconnectFunction"}
integrations = {k: v["Properties"] for k, v in res.items() if v["Type"] == "AWS::ApiGatewayV2::Integration"}
permissions = [v["Properties"] for v in res.values() if v["Type"] == "AWS::Lambda::Permission"]
for key, fn in ws_route_functions.items():
    if key not in ws_routes:
        continue
    route_name, route = ws_routes[key]
    target = json.dumps(route.get("Target", ""))
    integ = next((i for n, i in integrations.items() if "${%s}" % n in target), {})
    check(integ.get("ApiId") == ref("WebSocketApi") and integ.get("IntegrationType") == "AWS_PROXY"
          and "${%s.Arn}" % fn in json.dumps(integ.get("IntegrationUri", "")),
          "WebSocket route %s: not an AWS_PROXY integration of %s" % (key, fn))
    source_arn = "arn:${AWS::Partition}:execute-api:${AWS::Region}:${AWS::AccountId}:${WebSocketApi}/${Stage}/" + key
    check(any(p.get("FunctionName") == ref(fn) and p.get("Principal") == "apigateway.amazonaws.com"
              and p.get("SourceArn") == {"Fn::Sub": source_arn} for p in permissions),
          "WebSocket route %s: no permission for API Gateway to invoke %s" % (key, fn))
# $default is two-way: the Lambda proxy answer (PONG) goes back to the client.
if "$default" in ws_routes:
    default_name, default_route = ws_routes["$default"]
    check(default_route.get("RouteResponseSelectionExpression") == "$default",
          "WebSocket route $default: RouteResponseSelectionExpression is not $default")
    route_responses = [v["Properties"] for v in res.values() if v["Type"] == "AWS::ApiGatewayV2::RouteResponse"]
    check(any(rr.get("RouteId") == ref(default_name) and rr.get("RouteResponseKey") == "$default"
              and rr.get("ApiId") == ref("WebSocketApi") for rr in route_responses),
          "WebSocket route $default: no route response $default (PONG would not reach the client)")
for s in ws_stages:
    check_stage("WebSocket stage", s, "WebSocketAccessLogs", "WebSocketThrottleRate", "WebSocketThrottleBurst")
    # Route changes reach the stage without a hand-made deployment.
    check(s.get("AutoDeploy") is True, "WebSocket stage: AutoDeploy is not true")
    check("DeploymentId" not in s, "WebSocket stage: DeploymentId next to AutoDeploy")
check(not [k for k, v in res.items() if v["Type"] == "AWS::ApiGatewayV2::Deployment"],
      "an AWS::ApiGatewayV2::Deployment exists (the stages auto-deploy)")
ws_stage_name = next((k for k, v in stages.items() if v.get("ApiId") == ref("WebSocketApi")), None)
depends = res.get(ws_stage_name, {}).get("DependsOn", [])
check("ApiGatewayAccountReady" in depends, "WebSocket stage does not wait for the API Gateway account logging role")
for route_name, _ in ws_routes.values():
    check(route_name in depends, "WebSocket stage does not depend on route " + route_name)

# ---------------------------------------------------------------- the cache
sc = props("ServerlessCache")
check(sc.get("MajorEngineVersion") == {"Fn::FindInMap": ["CacheEngineVersions", ref("CacheEngine"), "Serverless"]},
      "ServerlessCache: MajorEngineVersion is not pinned")
check(sc.get("CacheUsageLimits") == {
    "DataStorage": {"Maximum": ref("CacheMaxDataStorageGb"), "Unit": "GB"},
    "ECPUPerSecond": {"Maximum": ref("CacheMaxEcpuPerSecond")},
}, "ServerlessCache: CacheUsageLimits are not the parameters")
check(props("ReplicationGroup").get("EngineVersion") ==
      {"Fn::FindInMap": ["CacheEngineVersions", ref("CacheEngine"), "Nodes"]},
      "ReplicationGroup: EngineVersion is not pinned")
check("CANNOT BE CHANGED" in params.get("VpcCidr", {}).get("Description", ""),
      "parameter VpcCidr must say it cannot be changed after creation")

# ------------------------------------------------------------------- alarms
alarms = {k: v for k, v in res.items() if v["Type"] == "AWS::CloudWatch::Alarm"}
want_alarms = {
    "MatcherErrorsAlarm": None,
    "MatcherThrottlesAlarm": None,
    "MatcherNotRunningAlarm": None,
    "MatcherFailedEventsAlarm": None,
    "FunctionErrorsAlarm": None,
    "HttpApi5xxAlarm": None,
    "WebSocketErrorsAlarm": None,
    "CacheThrottledAlarm": "UseServerlessCache",
    "CacheEcpuAlarm": "UseServerlessCache",
    "CacheStorageAlarm": "UseServerlessCache",
    "CacheCpuAlarm": "UseClusterCache",
    "CacheMemoryAlarm": "UseClusterCache",
}
check(set(alarms) == set(want_alarms), "alarms are %s" % sorted(alarms))
for name, cond in want_alarms.items():
    a = alarms.get(name)
    if a is None:
        continue
    check(a.get("Condition") == cond, "%s: condition %s, expected %s" % (name, a.get("Condition"), cond))
    p = a["Properties"]
    check(is_alarm_actions(p.get("AlarmActions")), name + ": AlarmActions is not the optional AlarmTopicArn")
    check(is_alarm_actions(p.get("OKActions")), name + ": OKActions is not the optional AlarmTopicArn")
nr = alarms.get("MatcherNotRunningAlarm", {}).get("Properties", {})
check(nr.get("MetricName") == "Invocations" and nr.get("ComparisonOperator") == "LessThanThreshold"
      and nr.get("TreatMissingData") == "breaching",
      "MatcherNotRunningAlarm: must alarm on missing invocations (missing data = breaching)")
for name in ("CacheThrottledAlarm", "CacheEcpuAlarm", "CacheStorageAlarm"):
    dims = json.dumps(alarms.get(name, {}).get("Properties", {}))
    check('"Name": "clusterId"' in dims, name + ": serverless cache metrics use the dimension clusterId")

# ---------------------------------------------------------------- dashboard
dash = [v["Properties"] for v in res.values() if v["Type"] == "AWS::CloudWatch::Dashboard"]
check(len(dash) == 1, "expected one dashboard")
for d in dash:
    sub = d.get("DashboardBody", {}).get("Fn::Sub")
    check(isinstance(sub, list) and len(sub) == 2, "dashboard body is not a Fn::Sub with variables")
    if not (isinstance(sub, list) and len(sub) == 2):
        continue
    placeholder = lambda text: re.sub(r"\$\{[^}]+\}", "1", text)
    cache_if = sub[1].get("CacheWidgets", {}).get("Fn::If", [])
    check(len(cache_if) == 3 and cache_if[0] == "UseServerlessCache", "dashboard: cache widgets not chosen by CacheMode")
    network_if = sub[1].get("NetworkWidgets", {}).get("Fn::If", [])
    check(len(network_if) == 3 and network_if[0] == "UseNatGateway",
          "dashboard: network widgets not chosen by NetworkMode")
    # Every combination of CacheMode and NetworkMode is a JSON dashboard.
    for cache_branch in cache_if[1:]:
        for network_index, network_branch in enumerate(network_if[1:]):
            body_text = (sub[0].replace("${CacheWidgets}", cache_branch.get("Fn::Sub", ""))
                         .replace("${NetworkWidgets}", network_branch.get("Fn::Sub", "")))
            try:
                board = json.loads(placeholder(body_text))
            except ValueError as e:
                check(False, "dashboard body is not JSON: %s" % e)
                continue
            text = json.dumps(board)
            check(all(isinstance(w, dict) for w in board["widgets"]), "dashboard: a widget is not an object")
            expressions = [m.get("expression", "") for w in board["widgets"] if isinstance(w, dict)
                           for line in w.get("properties", {}).get("metrics", []) for m in line if isinstance(m, dict)]
            for metric in ("MatchesFormed", "PlayersMatched", "QueueDepth", "OldestWaitMs", "ExpiredTickets"):
                check(any("{Matchmaking,World} MetricName=\"%s\"" % metric in e for e in expressions),
                      "dashboard: no per-world widget for " + metric)
            for ns in ("AWS/Lambda", "AWS/ApiGateway", "AWS/ElastiCache"):
                check(ns in text, "dashboard: no %s metrics" % ns)
        # The NAT gateway only where it exists (NatGateway), the JWKS proxy
        # only where it exists (Ipv6Egress).
        if len(network_if) == 3:
            nat_text, ipv6_text = (b.get("Fn::Sub", "") for b in network_if[1:])
            check("${NatGateway}" in nat_text and "NatGateway" not in ipv6_text,
                  "dashboard: NAT gateway widgets must be the NatGateway branch only")
            check("${JwksProxyApi}" in ipv6_text and "JwksProxyApi" not in nat_text,
                  "dashboard: JWKS proxy widgets must be the Ipv6Egress branch only")
    check("NatGateway" not in sub[0] and "JwksProxyApi" not in sub[0],
          "dashboard: the body names a mode's resource outside ${NetworkWidgets}")

# ------------------------------------------------------------------ network
# Per NetworkMode (docs/deploy.md, "Network path"): what exists, what the
# private subnets route where, what the functions may send where, and that
# nothing left in a mode refers to a resource of the other mode.
PSEUDO = {"AWS::Region", "AWS::AccountId", "AWS::Partition", "AWS::StackName", "AWS::StackId",
          "AWS::URLSuffix", "AWS::NoValue", "AWS::NotificationARNs"}
FUNCTIONS = sorted(binaries)


def resolve(value, values):
    """`value` with every Fn::If resolved under the parameter `values` (inside
    lists and objects too); entries that resolve to AWS::NoValue are dropped."""
    if isinstance(value, dict):
        if list(value) == ["Fn::If"]:
            name, yes, no = value["Fn::If"]
            return resolve(yes if eval_condition(conditions[name], values) else no, values)
        out = {}
        for k, v in value.items():
            r = resolve(v, values)
            if r != NO_VALUE:
                out[k] = r
        return out
    if isinstance(value, list):
        return [r for r in (resolve(x, values) for x in value) if r != NO_VALUE]
    return value


def exists(entry, values):
    return "Condition" not in entry or eval_condition(conditions[entry["Condition"]], values)


def referenced(value, local=()):
    """Names a resolved value refers to: Ref, Fn::GetAtt and ${...} of Fn::Sub."""
    names = set()
    if isinstance(value, dict):
        if list(value) == ["Ref"]:
            return {value["Ref"]}
        if list(value) == ["Fn::GetAtt"]:
            target = value["Fn::GetAtt"]
            return {target[0] if isinstance(target, list) else target.split(".")[0]}
        if list(value) == ["Fn::Sub"]:
            sub = value["Fn::Sub"]
            text, variables = (sub, {}) if isinstance(sub, str) else (sub[0], sub[1])
            for v in variables.values():
                names |= referenced(v)
            for m in re.findall(r"\$\{([^}!][^}]*)\}", text):
                name = m.split(".")[0]
                if name not in variables:
                    names.add(name)
            return names
        for v in value.values():
            names |= referenced(v)
    elif isinstance(value, list):
        for v in value:
            names |= referenced(v)
    return names


network_param = params.get("NetworkMode", {})
check(network_param.get("Default") == "Ipv6Egress" and network_param.get("AllowedValues") == NETWORK_MODES,
      "parameter NetworkMode must default to Ipv6Egress, values %s" % NETWORK_MODES)
check(conditions.get("UseIpv6Egress") == {"Fn::Equals": [ref("NetworkMode"), "Ipv6Egress"]}
      and conditions.get("UseNatGateway") == {"Fn::Equals": [ref("NetworkMode"), "NatGateway"]},
      "conditions UseIpv6Egress / UseNatGateway changed")
# The subnets the functions and the cache live in, and their route table,
# are the same in both modes (a mode switch does not replace the cache).
for name in ("Vpc", "PrivateSubnetA", "PrivateSubnetB", "PrivateRouteTable",
             "PrivateSubnetARouteTableAssociation", "PrivateSubnetBRouteTableAssociation"):
    check(name in res and "Condition" not in res[name], name + ": must exist in every NetworkMode")
check("NetworkType" not in props("ServerlessCache"),
      "ServerlessCache: NetworkType is create-only; setting it would replace (and, with its fixed name, fail) the cache")
# An execute-api interface endpoint with private DNS would send the public
# @connections calls to it, and they would be refused (403).
check(not [k for k, v in res.items() if v["Type"] == "AWS::EC2::VPCEndpoint"
           and "execute-api" in json.dumps(v["Properties"].get("ServiceName"))],
      "an execute-api VPC endpoint exists (it cannot serve @connections; see docs/deploy.md)")

connections_sub = "https://${WebSocketApi}.execute-api.${AWS::Region}.${AWS::URLSuffix}/${Stage}"
jwks_proxy_sub = "https://${JwksProxyApi}.execute-api.${AWS::Region}.${AWS::URLSuffix}/jwks.json"
events_sub = "https://events.${AWS::Region}.api.aws"
event_senders = set(FUNCTIONS)

for fn in FUNCTIONS:
    deps = res.get(fn, {}).get("DependsOn", [])
    check("NetworkReady" in ([deps] if isinstance(deps, str) else deps), fn + ": does not depend on NetworkReady")

for mode in ([args.network_mode] if args.network_mode else NETWORK_MODES):
    values = dict(defaults, NetworkMode=mode)
    label = "NetworkMode=" + mode
    R = {k: dict(v, Properties=resolve(v.get("Properties", {}), values), Metadata=resolve(v.get("Metadata", {}), values))
         for k, v in res.items() if exists(v, values)}

    def of_type(kind):
        return {k: v["Properties"] for k, v in R.items() if v["Type"] == kind}

    # Nothing that exists in this mode refers to something that does not.
    for name, r in R.items():
        deps = r.get("DependsOn", [])
        deps = [deps] if isinstance(deps, str) else deps
        missing = {n for n in referenced(r["Properties"]) | referenced(r["Metadata"]) | set(deps)
                   if n not in R and n not in params and n not in PSEUDO}
        check(not missing, "%s: %s refers to %s, which does not exist in this mode" % (label, name, sorted(missing)))
    for name, o in t.get("Outputs", {}).items():
        if exists(o, values):
            missing = {n for n in referenced(resolve(o.get("Value"), values)) if n not in R and n not in params and n not in PSEUDO}
            check(not missing, "%s: output %s refers to %s" % (label, name, sorted(missing)))

    routes = of_type("AWS::EC2::Route")
    private_routes = [r for r in routes.values() if r.get("RouteTableId") == ref("PrivateRouteTable")]
    subnets = of_type("AWS::EC2::Subnet")
    check(not any(s.get("MapPublicIpOnLaunch") for s in subnets.values()), label + ": a subnet maps public IPv4 addresses")
    sg_egress = R.get("FunctionSecurityGroup", {}).get("Properties", {}).get("SecurityGroupEgress")
    cache_egress = of_type("AWS::EC2::SecurityGroupEgress")
    check(list(cache_egress.values()) == [{"GroupId": ref("FunctionSecurityGroup"), "IpProtocol": "tcp", "FromPort": 6379,
                                           "ToPort": 6380, "DestinationSecurityGroupId": ref("CacheSecurityGroup"),
                                           "Description": "Valkey/Redis (TLS)"}],
          "%s: the functions' only other egress must be the cache ports to CacheSecurityGroup, got %s"
          % (label, json.dumps(cache_egress)))
    ws_api = R.get("WebSocketApi", {}).get("Properties", {})
    handle = R.get("NetworkReady", {})
    check(handle.get("Type") == "AWS::CloudFormation::WaitConditionHandle", label + ": no NetworkReady handle")
    for fn in FUNCTIONS:
        fprops = R.get(fn, {}).get("Properties", {})
        vpc = fprops.get("VpcConfig", {})
        check(vpc.get("Ipv6AllowedForDualStack") is (mode == "Ipv6Egress"),
              "%s: %s Ipv6AllowedForDualStack is %s" % (label, fn, vpc.get("Ipv6AllowedForDualStack")))
        env = fprops.get("Environment", {}).get("Variables", {})
        check(env.get("MM_WS_ENDPOINT") == {"Fn::Sub": connections_sub}, "%s: %s MM_WS_ENDPOINT changed" % (label, fn))
        want_jwks = {"Fn::Sub": jwks_proxy_sub} if mode == "Ipv6Egress" else ref("AuthJwksUrl")
        check(env.get("AUTH_JWKS_URL") == want_jwks, "%s: %s AUTH_JWKS_URL is %s" % (label, fn, json.dumps(env.get("AUTH_JWKS_URL"))))
        if fn in event_senders:
            want_events = {"Fn::Sub": events_sub} if mode == "Ipv6Egress" else ""
            check(env.get("MM_EVENTS_ENDPOINT") == want_events,
                  "%s: %s MM_EVENTS_ENDPOINT is %s" % (label, fn, json.dumps(env.get("MM_EVENTS_ENDPOINT"))))
            # The @connections client has a custom endpoint: the SDK refuses
            # it when dual-stack endpoints are switched on globally.
        check("AWS_USE_DUALSTACK_ENDPOINT" not in env, "%s: %s sets AWS_USE_DUALSTACK_ENDPOINT" % (label, fn))

    https_rule = {"IpProtocol": "tcp", "FromPort": 443, "ToPort": 443}
    if mode == "Ipv6Egress":
        for kind in ("AWS::EC2::NatGateway", "AWS::EC2::EIP", "AWS::EC2::InternetGateway",
                     "AWS::EC2::VPCGatewayAttachment", "AWS::EC2::VPCEndpoint"):
            check(not of_type(kind), "%s: %s exists: %s" % (label, kind, sorted(of_type(kind))))
        check(set(subnets) == {"PrivateSubnetA", "PrivateSubnetB"}, "%s: subnets are %s" % (label, sorted(subnets)))
        check(not [r for r in routes.values() if "DestinationCidrBlock" in r],
              label + ": an IPv4 route leaves the VPC (there is no IPv4 way out in this mode)")
        eigw = of_type("AWS::EC2::EgressOnlyInternetGateway")
        check(list(eigw.values()) == [{"VpcId": ref("Vpc")}], "%s: egress-only internet gateways %s" % (label, sorted(eigw)))
        check([r for r in private_routes] == [{"RouteTableId": ref("PrivateRouteTable"), "DestinationIpv6CidrBlock": "::/0",
                                               "EgressOnlyInternetGatewayId": ref(next(iter(eigw), "?"))}],
              "%s: the private route table must route exactly ::/0 to the egress-only gateway, got %s"
              % (label, json.dumps(private_routes)))
        blocks = of_type("AWS::EC2::VPCCidrBlock")
        check(list(blocks.values()) == [{"VpcId": ref("Vpc"), "AmazonProvidedIpv6CidrBlock": True}],
              "%s: the VPC needs exactly one Amazon-provided IPv6 block, got %s" % (label, json.dumps(blocks)))
        subnet_blocks = {k: v for k, v in of_type("AWS::EC2::SubnetCidrBlock").items()}
        check(sorted(v.get("SubnetId", {}).get("Ref") for v in subnet_blocks.values()) == ["PrivateSubnetA", "PrivateSubnetB"],
              "%s: each private subnet needs one IPv6 block, got %s" % (label, json.dumps(subnet_blocks)))
        for k in subnet_blocks:
            check(R[k].get("DependsOn") == next(iter(blocks), "?"), "%s: %s must depend on the VPC's IPv6 block" % (label, k))
        check(sg_egress == [dict(https_rule, CidrIpv6="::/0", Description=(sg_egress or [{}])[0].get("Description"))],
              "%s: the functions' HTTPS egress must be tcp 443 to ::/0 only, got %s" % (label, json.dumps(sg_egress)))
        check(handle.get("Metadata") == {"Egress": [ref("PrivateSubnetAIpv6CidrBlock"), ref("PrivateSubnetBIpv6CidrBlock"),
                                                    ref("PrivateIpv6DefaultRoute")]},
              "%s: NetworkReady must wait for the IPv6 blocks and route, got %s" % (label, json.dumps(handle.get("Metadata"))))
        check(ws_api.get("IpAddressType") == "dualstack",
              label + ": WebSocketApi must be dualstack (its @connections host name needs IPv6 addresses)")
        # The JWKS proxy: an HTTP API (OpenAPI body) with one unauthenticated
        # GET route, an HTTP proxy to AuthJwksUrl, dualstack.
        body = R.get("JwksProxyApi", {}).get("Properties", {}).get("Body", {})
        check(str(body.get("openapi", "")).startswith("3."), label + ": JwksProxyApi must be an HTTP API defined by an OpenAPI 3 body")
        servers = body.get("servers", [])
        check([sv.get("x-amazon-apigateway-endpoint-configuration") for sv in servers] == [{"ipAddressType": "dualstack"}],
              label + ": JwksProxyApi must be dualstack (x-amazon-apigateway-endpoint-configuration of its server)")
        paths = body.get("paths", {})
        check(list(paths) == ["/jwks.json"] and list(paths.get("/jwks.json", {})) == ["get"],
              "%s: JwksProxyApi routes are %s" % (label, {p: list(m) for p, m in paths.items()}))
        op = paths.get("/jwks.json", {}).get("get", {})
        integ = op.get("x-amazon-apigateway-integration", {})
        check(integ.get("type") == "http_proxy" and integ.get("httpMethod") == "GET"
              and integ.get("uri") == ref("AuthJwksUrl") and integ.get("connectionType") == "INTERNET",
              "%s: GET /jwks.json must be an HTTP proxy GET of AuthJwksUrl, got %s" % (label, json.dumps(integ)))
        check("security" not in op and "x-amazon-apigateway-authorizer" not in json.dumps(body),
              label + ": the JWKS proxy route has no authorizer (a public document)")
        check(not [k for k, v in R.items() if v["Type"] in ("AWS::ApiGatewayV2::Route", "AWS::ApiGatewayV2::Integration")
                   and v["Properties"].get("ApiId") == ref("JwksProxyApi")],
              label + ": the JWKS proxy's route must be its OpenAPI body's (tests read every AWS::ApiGatewayV2::Route as a WebSocket route)")
        proxy_stages = [v for v in of_type("AWS::ApiGatewayV2::Stage").values() if v.get("ApiId") == ref("JwksProxyApi")]
        check(len(proxy_stages) == 1, "%s: JwksProxyApi needs one stage" % label)
        for st in proxy_stages:
            check(st.get("StageName") == "$default" and st.get("AutoDeploy") is True,
                  label + ": the JWKS proxy stage must be $default with AutoDeploy")
            check_stage(label + " JWKS proxy stage", st, "JwksProxyAccessLogs", "WebSocketThrottleRate", "WebSocketThrottleBurst")
    else:
        for kind in ("AWS::EC2::EgressOnlyInternetGateway", "AWS::EC2::VPCCidrBlock", "AWS::EC2::SubnetCidrBlock"):
            check(not of_type(kind), "%s: %s exists: %s" % (label, kind, sorted(of_type(kind))))
        check(not [k for k in R if k.startswith("JwksProxy")], label + ": JWKS proxy resources exist")
        check(set(subnets) == {"PublicSubnetA", "PublicSubnetB", "PrivateSubnetA", "PrivateSubnetB"},
              "%s: subnets are %s" % (label, sorted(subnets)))
        nat = of_type("AWS::EC2::NatGateway")
        check(list(nat.values()) == [{"AllocationId": {"Fn::GetAtt": ["NatEip", "AllocationId"]}, "SubnetId": ref("PublicSubnetA"),
                                      "Tags": [{"Key": "Name", "Value": {"Fn::Sub": "${AWS::StackName}-nat"}}]}],
              "%s: expected one NAT gateway in PublicSubnetA with NatEip, got %s" % (label, json.dumps(nat)))
        check(len(of_type("AWS::EC2::EIP")) == 1 and len(of_type("AWS::EC2::InternetGateway")) == 1,
              label + ": expected one Elastic IP and one internet gateway")
        check(private_routes == [{"RouteTableId": ref("PrivateRouteTable"), "DestinationCidrBlock": "0.0.0.0/0",
                                  "NatGatewayId": ref(next(iter(nat), "?"))}],
              "%s: the private route table must route exactly 0.0.0.0/0 to the NAT gateway, got %s"
              % (label, json.dumps(private_routes)))
        check(any(r.get("RouteTableId") == ref("PublicRouteTable") and r.get("DestinationCidrBlock") == "0.0.0.0/0"
                  and r.get("GatewayId") == ref("InternetGateway") for r in routes.values()),
              label + ": the public route table must route 0.0.0.0/0 to the internet gateway")
        check(sg_egress == [dict(https_rule, CidrIp="0.0.0.0/0", Description=(sg_egress or [{}])[0].get("Description"))],
              "%s: the functions' HTTPS egress must be tcp 443 to 0.0.0.0/0 only, got %s" % (label, json.dumps(sg_egress)))
        check(handle.get("Metadata") == {"Egress": [ref("PrivateDefaultRoute")]},
              "%s: NetworkReady must wait for the NAT route, got %s" % (label, json.dumps(handle.get("Metadata"))))
        check(ws_api.get("IpAddressType") == "ipv4", label + ": WebSocketApi stays ipv4 in NatGateway mode")

# ----------------------------------------------------------- configuration
check(param_default("Rules") == "", "parameter Rules must default to empty (worlds from Worlds)")
check(conditions.get("HasRules") == {"Fn::Not": [{"Fn::Equals": [ref("Rules"), ""]}]}, "condition HasRules changed")
hb, pt = params.get("HeartbeatSeconds", {}), params.get("PresenceTimeoutSeconds", {})
check(str(hb.get("Default")) == "60" and str(hb.get("MinValue")) == "1",
      "parameter HeartbeatSeconds must default to 60, minimum 1")
check(str(pt.get("Default")) == "150", "parameter PresenceTimeoutSeconds must default to 150")
try:
    check(int(pt.get("Default")) > int(hb.get("Default")),
          "PresenceTimeoutSeconds must default to more than HeartbeatSeconds (the functions refuse otherwise)")
except (TypeError, ValueError):
    check(False, "HeartbeatSeconds / PresenceTimeoutSeconds defaults are not numbers")
check("longer than HeartbeatSeconds" in pt.get("Description", ""),
      "parameter PresenceTimeoutSeconds must say it has to be longer than HeartbeatSeconds")
# The application's default (shared::config) and minimum (1 s: it refuses 0).
ptt = params.get("PartyTtlSeconds", {})
check(str(ptt.get("Default")) == "120" and str(ptt.get("MinValue")) == "1",
      "parameter PartyTtlSeconds must default to 120, minimum 1")
for name in sorted(removed_env_vars):
    check(name not in json.dumps(t), "the template still mentions " + name)

# ---------------------------------------------------------------------- IAM
# @connections: POST (push) and DELETE (close), this API and stage only.
push_policy = props("PushToConnectionsPolicy").get("PolicyDocument", {}).get("Statement", [])
connections_arn = "arn:${AWS::Partition}:execute-api:${AWS::Region}:${AWS::AccountId}:${WebSocketApi}/${Stage}/%s/@connections/*"
check(push_policy == [{"Effect": "Allow", "Action": "execute-api:ManageConnections",
                       "Resource": [{"Fn::Sub": connections_arn % "POST"}, {"Fn::Sub": connections_arn % "DELETE"}]}],
      "PushToConnectionsPolicy: expected ManageConnections on POST and DELETE @connections/* only, got %s"
      % json.dumps(push_policy))
# No IAM statement of ours grants anything on "*".
for name, v in res.items():
    if v["Type"] in ("AWS::IAM::ManagedPolicy", "AWS::IAM::Policy"):
        for st in v["Properties"]["PolicyDocument"]["Statement"]:
            rs = st["Resource"] if isinstance(st["Resource"], list) else [st["Resource"]]
            check("*" not in rs, name + ": Resource *")
# The API Gateway logging role outlives the stack (the account setting does).
agw_role = res.get("ApiGatewayCloudWatchLogsRole", {})
check(agw_role.get("DeletionPolicy") == "Retain" and agw_role.get("Condition") == "CreateApiGatewayCloudWatchRole",
      "ApiGatewayCloudWatchLogsRole: must be conditional and retained")

for o in ("HttpApiUrl", "WebSocketUrl", "ConnectionsEndpoint", "DashboardUrl", "MatcherFailureQueueUrl"):
    check(o in t.get("Outputs", {}), "missing output " + o)

for e in errors:
    print("    " + e, file=sys.stderr)
sys.exit(1 if errors else 0)
