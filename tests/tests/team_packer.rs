//! Property test of the team packer (`lua/_teams.lua`), run inside a real
//! Redis by EVAL: for random parties and ratings, the packing is valid
//! (every ticket whole in one team, every team exactly full), it exists
//! whenever any packing does, and its team-sum spread is never worse than a
//! simple greedy baseline (arrival order, each ticket into the team with
//! the lowest sum that has room), computed here independently.

use integration_tests::RedisServer;
use rand::{Rng, SeedableRng};

/// Packs ARGV = teams, cap, then (size, rating sum) per ticket; replies
/// { spread, team of each ticket... } or {} when nothing packs.
const DRIVER: &str = r#"
local teams, cap = tonumber(ARGV[1]), tonumber(ARGV[2])
local items = {}
for i = 3, #ARGV, 2 do
  items[#items + 1] = { size = tonumber(ARGV[i]), sum = tonumber(ARGV[i + 1]) }
end
local assign, sums = Teams.pack_teams(items, teams, cap)
if not assign then return {} end
local reply = { num(Teams.sums_spread(sums)) }
for i = 1, #items do reply[#reply + 1] = assign[i] end
return reply
"#;

#[derive(Debug, Clone, Copy)]
struct Ticket {
    size: u32,
    sum: f64,
}

fn spread(sums: &[f64]) -> f64 {
    let hi = sums.iter().cloned().fold(f64::MIN, f64::max);
    let lo = sums.iter().cloned().fold(f64::MAX, f64::min);
    hi - lo
}

/// The baseline: arrival order, lowest sum with room (ties: first team).
fn greedy_baseline(tickets: &[Ticket], teams: usize, cap: u32) -> Option<f64> {
    let mut sums = vec![0.0; teams];
    let mut room = vec![cap; teams];
    for t in tickets {
        let best = (0..teams)
            .filter(|&i| room[i] >= t.size)
            .min_by(|&a, &b| sums[a].partial_cmp(&sums[b]).unwrap().then(a.cmp(&b)))?;
        sums[best] += t.sum;
        room[best] -= t.size;
    }
    Some(spread(&sums))
}

/// Whether any packing exists (exhaustive; the cases are small).
fn packable(tickets: &[Ticket], room: &mut Vec<u32>, i: usize) -> bool {
    if i == tickets.len() {
        return true;
    }
    for t in 0..room.len() {
        if room[t] >= tickets[i].size {
            room[t] -= tickets[i].size;
            let ok = packable(tickets, room, i + 1);
            room[t] += tickets[i].size;
            if ok {
                return true;
            }
        }
    }
    false
}

#[test]
fn team_packing_is_valid_and_never_worse_than_the_greedy_baseline() {
    let server = RedisServer::start();
    let mut conn = server.connection();
    let script = redis::Script::new(&format!("{}\n{DRIVER}", *shared::scripts::LIBRARY));
    let mut rng = rand::rngs::StdRng::seed_from_u64(12);
    let (mut better, mut cases, mut unpackable) = (0, 0, 0);
    for _ in 0..600 {
        let teams = rng.random_range(2..=3usize);
        let cap = rng.random_range(1..=5u32);
        let mut left = teams as u32 * cap;
        let mut tickets = Vec::new();
        while left > 0 {
            let size = rng.random_range(1..=cap.min(left));
            // Ratings 0..3000, some with fractions; a party's sum is its
            // members' ratings.
            let sum: f64 = (0..size)
                .map(|_| f64::from(rng.random_range(0..30_000u32)) / 10.0)
                .sum();
            tickets.push(Ticket { size, sum });
            left -= size;
        }
        let mut inv = script.prepare_invoke();
        inv.key("packer-test").arg(teams).arg(cap);
        for t in &tickets {
            inv.arg(t.size).arg(t.sum);
        }
        let reply: Vec<String> = inv.invoke(&mut conn).expect("driver");
        cases += 1;
        let baseline = greedy_baseline(&tickets, teams, cap);
        if reply.is_empty() {
            assert!(
                baseline.is_none(),
                "{tickets:?}: the baseline packs but the packer did not"
            );
            assert!(
                !packable(&tickets, &mut vec![cap; teams], 0),
                "{tickets:?} into {teams} x {cap}: a packing exists but none was found"
            );
            unpackable += 1;
            continue;
        }
        let reported: f64 = reply[0].parse().expect("spread");
        let assign: Vec<usize> = reply[1..]
            .iter()
            .map(|t| t.parse().expect("team"))
            .collect();
        assert_eq!(assign.len(), tickets.len());
        let mut seats = vec![0; teams];
        let mut sums = vec![0.0; teams];
        for (t, &team) in tickets.iter().zip(&assign) {
            assert!((1..=teams).contains(&team), "team {team}");
            seats[team - 1] += t.size;
            sums[team - 1] += t.sum;
        }
        assert!(
            seats.iter().all(|&s| s == cap),
            "{tickets:?} -> {assign:?}: seats {seats:?}"
        );
        let actual = spread(&sums);
        assert!(
            (actual - reported).abs() < 1e-6,
            "{actual} vs reported {reported}"
        );
        if let Some(base) = baseline {
            assert!(
                actual <= base + 1e-6,
                "{tickets:?}: packer {actual} worse than the greedy baseline {base}"
            );
            if actual < base - 1e-6 {
                better += 1;
            }
        }
    }
    // The cases exercise what they should: clear improvements, and sets
    // that cannot be packed at all.
    assert!(
        better > cases / 10,
        "only {better} of {cases} improved on the baseline"
    );
    assert!(unpackable > 0, "no unpackable case was generated");
    eprintln!("{cases} cases: {better} better than the baseline, {unpackable} unpackable");
}
