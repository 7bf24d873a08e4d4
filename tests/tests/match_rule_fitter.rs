//! Property test of the incremental match-rule check (`MatchRules.fitter`
//! in `lua/_match_rules.lua`) and of FIFO fills that resume from one page
//! to the next (`Rated.fill_match` with `opts.resume`), run inside a real
//! Redis by EVAL. For random rules (every kind, parties aggregated every
//! way, relaxations, compounds), random tickets (attributes missing at
//! times) and a random history of the match being filled:
//!
//! * every candidate's answer from the fitter equals the full check it
//!   replaces (`MatchRules.holds` on the partial match with the candidate);
//! * a fill over the first candidates, resumed over all of them, chooses
//!   what one fresh fill over all of them chooses, and both choose what a
//!   fill checking each candidate with `holds` chooses.

use integration_tests::RedisServer;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use serde_json::{json, Value};

/// ARGV[1]: a case (see `case`). Replies { mismatches, accepted,
/// rejected, first mismatching candidate (0: none), the resumed fill's
/// tickets, the fresh fill's, the `holds` fill's } (fills: ids joined by
/// ',', '-' when none forms).
const DRIVER: &str = r#"
local case = cjson.decode(ARGV[1])
local cfg = { match_rules = case.rules, seats = case.seats, teams = case.teams }
local infos = {}
for i, t in ipairs(case.tickets) do
  local players = {}
  for j = 1, #t do players[j] = 't' .. i .. 'p' .. j end
  infos[i] = { ticket = 't' .. i, size = #t, players = players, attrs = t, sum = 0 }
end
local a, wait = infos[1], case.wait
local m = { a = a, wait = wait }

local fits = MatchRules.fitter(cfg, a, wait)
local chosen = { a }
local mismatches, accepted, rejected, first = 0, 0, 0, 0
for i = 2, #infos do
  local it, n = infos[i], #chosen
  chosen[n + 1] = it
  m.items = chosen
  local want = MatchRules.holds(cfg, m, true)
  chosen[n + 1] = nil
  if fits(it, chosen) ~= want then
    mismatches = mismatches + 1
    if first == 0 then first = i end
  end
  if want then
    accepted = accepted + 1
    if case.ops[i] == 'keep' then chosen[n + 1] = it end
  else
    rejected = rejected + 1
  end
  if case.ops[i] == 'restart' then chosen = { a } end
end

local function ids(items)
  if not items then return '-' end
  local out = {}
  for i, it in ipairs(items) do out[i] = it.ticket end
  return table.concat(out, ',')
end
-- No keys: fill_match reads none here (a call without block lists).
local ctx = { cfg = cfg, k = {} }
local candidates = {}
for i = 2, #infos do candidates[i - 1] = infos[i] end
local head = {}
for i = 1, case.head do head[i] = candidates[i] end
local resumed = Rated.with_rules(ctx, a, wait, { wait = wait, resume = {} })
Rated.fill_match(ctx, a, head, resumed)
local resumed_ids = ids(Rated.fill_match(ctx, a, candidates, resumed))
local fresh_ids = ids(Rated.fill_match(ctx, a, candidates, Rated.with_rules(ctx, a, wait, { wait = wait })))
local whole = {
  accept = function(info, items)
    local n = #items
    items[n + 1] = info
    m.items = items
    local ok = MatchRules.holds(cfg, m, true)
    items[n + 1] = nil
    return ok
  end,
  final = function(items)
    m.items = items
    return MatchRules.holds(cfg, m, false)
  end,
  wait = wait,
}
local whole_ids = ids(Rated.fill_match(ctx, a, candidates, whole))
return { mismatches, accepted, rejected, first, resumed_ids, fresh_ids, whole_ids }
"#;

const MODES: [&str; 3] = ["ffa", "ctf", "duel"];
const HEROES: [&str; 8] = ["h1", "h2", "h3", "h4", "h5", "h6", "h7", "h8"];
const MAPS: [&str; 5] = ["m1", "m2", "m3", "m4", "m5"];
const PARTY: [Option<&str>; 4] = [None, Some("avg"), Some("min"), Some("max")];
const SETS: [Option<&str>; 3] = [None, Some("intersection"), Some("union")];

/// One player's attributes as `decode_player` gives them, each missing at
/// times.
fn member(rng: &mut StdRng) -> Value {
    let mut out = serde_json::Map::new();
    if rng.random_bool(0.85) {
        out.insert("mode".into(), json!(MODES[rng.random_range(0..3)]));
    }
    if rng.random_bool(0.85) {
        let lvl = f64::from(rng.random_range(0..40u32)) / 2.0;
        out.insert("lvl".into(), json!(lvl));
    }
    if rng.random_bool(0.85) {
        let mut maps: Vec<&str> = MAPS
            .iter()
            .copied()
            .filter(|_| rng.random_bool(0.5))
            .collect();
        maps.sort_unstable();
        out.insert("maps".into(), json!(maps));
    }
    if rng.random_bool(0.85) {
        out.insert("hero".into(), json!(HEROES[rng.random_range(0..8)]));
    }
    Value::Object(out)
}

/// A rule of a kind that names an attribute, in `_config.lua`'s parsed
/// shape, sometimes relaxing or turning optional with the anchor's wait.
fn simple_rule(rng: &mut StdRng, name: String, top: bool) -> Value {
    let mut rule = match rng.random_range(0..8) {
        0 => json!({"kind": "equality", "attr": "mode"}),
        1 => json!({"kind": "all_equal", "attr": "mode"}),
        2 => json!({"kind": "all_different", "attr": "hero"}),
        3 => {
            let op = [">=", "<=", ">", "<", "=", "!="][rng.random_range(0..6)];
            json!({"kind": "compare", "attr": "lvl", "op": op,
                   "value": f64::from(rng.random_range(0..20u32))})
        }
        4 => {
            let op = ["=", "!="][rng.random_range(0..2)];
            json!({"kind": "compare", "attr": "mode", "op": op, "value": MODES[rng.random_range(0..3)]})
        }
        5 | 6 => json!({"kind": "distance", "attr": "lvl",
                        "value": f64::from(rng.random_range(0..12u32)),
                        "from_anchor": rng.random_bool(0.4)}),
        _ => json!({"kind": "intersection", "attr": "maps",
                    "value": rng.random_range(0..4u32)}),
    };
    let numeric = rule["value"].is_number();
    let kind = rule["kind"].as_str().unwrap_or_default().to_owned();
    let map = rule.as_object_mut().expect("an object");
    map.insert("name".into(), json!(name));
    map.insert("top".into(), json!(top));
    map.insert("monotone".into(), json!(true));
    let party = if kind == "intersection" {
        SETS[rng.random_range(0..3)]
    } else {
        PARTY[rng.random_range(0..4)]
    };
    if let Some(party) = party {
        map.insert("party".into(), json!(party));
    }
    if rng.random_bool(0.2) {
        map.insert("optional_ms".into(), json!(rng.random_range(1..30_000u32)));
    }
    if numeric && rng.random_bool(0.3) {
        let v = map["value"].as_f64().unwrap_or(0.0);
        let limit = if kind == "intersection" {
            0.0
        } else {
            v + 10.0
        };
        map.insert(
            "linear".into(),
            json!({"per_sec": f64::from(rng.random_range(1..5u32)) / 2.0, "limit": limit}),
        );
    } else if numeric && rng.random_bool(0.2) {
        map.insert(
            "steps".into(),
            json!([
                [10_000, map["value"].as_f64().unwrap_or(0.0) + 3.0],
                [20_000, 1]
            ]),
        );
    }
    rule
}

/// A random case: 1-4 rules (a compound among them at times, its operands
/// not top-level), an anchor and 30 candidates (a party of 2-3 at
/// times), what the fill does after each accepted candidate, the anchor's
/// wait and the team shape.
fn case(rng: &mut StdRng) -> Value {
    let mut rules: Vec<Value> = (0..rng.random_range(1..=4))
        .map(|i| simple_rule(rng, format!("r{i}"), true))
        .collect();
    if rng.random_bool(0.35) {
        let kind = ["and", "or", "not"][rng.random_range(0..3)];
        let operands = if kind == "not" { 1 } else { 2 };
        let first = rules.len() + 2;
        let of: Vec<usize> = (first..first + operands).collect();
        rules.push(json!({"name": "c", "kind": kind, "of": of, "top": true,
                          "monotone": kind != "not"}));
        for j in 0..operands {
            rules.push(simple_rule(rng, format!("o{j}"), false));
        }
    }
    let tickets: Vec<Value> = (0..31)
        .map(|_| {
            let size = if rng.random_bool(0.75) {
                1
            } else {
                rng.random_range(2..=3)
            };
            Value::Array((0..size).map(|_| member(rng)).collect())
        })
        .collect();
    let ops: Vec<&str> = (0..31)
        .map(|_| match rng.random_range(0..20) {
            0..=14 => "keep",
            15..=18 => "drop",
            _ => "restart",
        })
        .collect();
    let (seats, teams) = [(4, 1), (6, 2), (10, 2), (3, 1)][rng.random_range(0..4)];
    json!({
        "rules": rules,
        "tickets": tickets,
        "ops": ops,
        "wait": rng.random_range(0..40_000u32),
        "seats": seats,
        "teams": teams,
        "head": rng.random_range(0..=30u32),
    })
}

#[test]
fn the_incremental_rule_check_and_resumed_fills_agree_with_the_full_check() {
    let server = RedisServer::start();
    let mut conn = server.connection();
    let script = redis::Script::new(&format!("{}\n{DRIVER}", *shared::scripts::LIBRARY));
    let mut rng = StdRng::seed_from_u64(37);
    let (mut accepted, mut rejected, mut formed) = (0u64, 0u64, 0u64);
    for n in 0..1500 {
        let case = case(&mut rng);
        let reply: (u64, u64, u64, u64, String, String, String) = script
            .key("fitter-test")
            .arg(case.to_string())
            .invoke(&mut conn)
            .expect("driver");
        let (mismatches, acc, rej, first, resumed, fresh, whole) = reply;
        assert_eq!(
            mismatches, 0,
            "case {n}: the fitter and holds disagree first on candidate {first}: {case}"
        );
        assert_eq!(resumed, fresh, "case {n}: resumed vs fresh fill: {case}");
        assert_eq!(fresh, whole, "case {n}: fitter fill vs holds fill: {case}");
        accepted += acc;
        rejected += rej;
        formed += u64::from(fresh != "-");
    }
    // The cases reach both answers and form matches, or they prove little.
    assert!(
        accepted > 5_000 && rejected > 5_000,
        "{accepted} accepted, {rejected} rejected"
    );
    assert!(formed > 100, "{formed} of 1500 cases formed a match");
}
