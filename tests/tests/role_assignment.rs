//! Property test of the role assignment (`lua/_roles.lua`), run inside a
//! real Redis by EVAL, against an exhaustive search written here. For
//! random quotas (per team or per match, 1 to 3 roles with random bounds),
//! random teams and random tickets (solo or parties of 2, each player
//! offering 1 to 3 roles, some any role):
//!
//! * `Roles.solve_roles` finds roles (and, per team, a split) exactly when
//!   some assignment of one offered role per player and one team per
//!   ticket meets every bound, and what it returns meets them;
//! * `Roles.roles_fit` on every prefix of the tickets says "can still be
//!   completed" exactly when the exhaustive search, given the seats left
//!   to players who may play any role, finds a completion.

use integration_tests::RedisServer;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use serde_json::{json, Value};

const ROLES: [&str; 3] = ["tank", "healer", "damage"];

/// ARGV[1]: a case. Replies { solved (0/1), roles ('' for none; ','
/// joined), team per ticket (',' joined), roles_fit per prefix ('0'/'1'
/// joined) }.
const DRIVER: &str = r#"
local case = cjson.decode(ARGV[1])
local rule = { attr = 'roles', quotas = {}, role_of = {}, teams = case.teams, seats = case.seats }
for j, q in ipairs(case.quotas) do
  rule.quotas[j] = { value = q[1], min = q[2], max = q[3] }
  rule.role_of[q[1]] = j
end
local items = {}
for i, t in ipairs(case.tickets) do
  local players, attrs = {}, {}
  for j, offer in ipairs(t) do
    players[j] = 't' .. i .. 'p' .. j
    attrs[j] = offer == cjson.null and {} or { roles = offer }
  end
  items[i] = { ticket = 't' .. i, size = #t, players = players, attrs = attrs }
end
local fits = {}
for n = 1, #items do
  local prefix = {}
  for i = 1, n do prefix[i] = items[i] end
  fits[n] = Roles.roles_fit(rule, prefix) and '1' or '0'
end
local solved = Roles.solve_roles(rule, items, nil)
if not solved then return { 0, '', '', table.concat(fits) } end
local roles, teams = {}, {}
local at = 0
for _, it in ipairs(items) do
  for _ = 1, #it.players do
    at = at + 1
    roles[at] = solved.roles[at] or ''
  end
end
for i = 1, #items do teams[i] = tostring(solved.assign and solved.assign[i] or 1) end
return { 1, table.concat(roles, ','), table.concat(teams, ','), table.concat(fits) }
"#;

#[derive(Debug, Clone)]
struct Case {
    teams: usize,
    team_size: usize,
    per_team: bool,
    /// (role, min, max)
    quotas: Vec<(&'static str, usize, usize)>,
    /// Per ticket, per player: the roles offered (None: any role).
    tickets: Vec<Vec<Option<Vec<&'static str>>>>,
}

impl Case {
    fn seats(&self) -> usize {
        self.teams * self.team_size
    }

    /// The bounds a group is held to: per team, one team's; per match, the
    /// match's (the rule's `teams` is then 1).
    fn rule_teams(&self) -> usize {
        if self.per_team {
            self.teams
        } else {
            1
        }
    }

    fn json(&self) -> Value {
        json!({
            "teams": self.rule_teams(),
            "seats": self.seats(),
            "quotas": self.quotas.iter().map(|(r, lo, hi)| json!([r, lo, hi])).collect::<Vec<_>>(),
            "tickets": self.tickets,
        })
    }
}

fn random_case(rng: &mut StdRng) -> Case {
    let teams: usize = rng.random_range(1..=2);
    let team_size: usize = rng.random_range(1..=3);
    let per_team = rng.random_bool(0.6);
    let bounded = if per_team {
        team_size
    } else {
        teams * team_size
    };
    let n_roles = rng.random_range(1..=3);
    let mut quotas = Vec::new();
    let mut least = 0;
    for role in ROLES.iter().take(n_roles) {
        let min = rng.random_range(0..=bounded.saturating_sub(least).min(2));
        let max = rng.random_range(min..=bounded);
        least += min;
        quotas.push((*role, min, max));
    }
    let mut tickets = Vec::new();
    let mut players = 0;
    while players < teams * team_size {
        let size = if team_size >= 2 && rng.random_bool(0.25) {
            2
        } else {
            1
        };
        if players + size > teams * team_size {
            break;
        }
        let ticket = (0..size)
            .map(|_| {
                if rng.random_bool(0.1) {
                    None
                } else {
                    let mut offer: Vec<&str> = ROLES
                        .iter()
                        .copied()
                        .filter(|_| rng.random_bool(0.45))
                        .collect();
                    if offer.is_empty() {
                        offer.push(ROLES[rng.random_range(0..3)]);
                    }
                    offer.sort_unstable();
                    Some(offer)
                }
            })
            .collect();
        tickets.push(ticket);
        players += size;
    }
    Case {
        teams,
        team_size,
        per_team,
        quotas,
        tickets,
    }
}

/// The roles a player may take: those offered, by index into the quotas,
/// or `None` for a role no quota lists; a player with no value may take
/// any.
fn choices(case: &Case, offer: &Option<Vec<&str>>) -> Vec<Option<usize>> {
    let all: Vec<Option<usize>> = (0..case.quotas.len())
        .map(Some)
        .chain(std::iter::once(None))
        .collect();
    let Some(offer) = offer else {
        return all;
    };
    let mut out: Vec<Option<usize>> = Vec::new();
    for role in offer {
        match case.quotas.iter().position(|q| q.0 == *role) {
            Some(i) => out.push(Some(i)),
            None if !out.contains(&None) => out.push(None),
            None => {}
        }
    }
    out
}

/// Whether the counts of each group (a team, or the match) meet the
/// bounds; `partial`: a group may still gain `open[g]` players of any
/// role, so only the maximums bind and the minimums must fit in them.
fn groups_meet(case: &Case, counts: &[Vec<usize>], open: &[usize]) -> bool {
    counts.iter().zip(open).all(|(c, &room)| {
        let mut short = 0;
        for (i, (_, lo, hi)) in case.quotas.iter().enumerate() {
            if c[i] > *hi {
                return false;
            }
            short += lo.saturating_sub(c[i]);
        }
        short <= room
    })
}

/// Exhaustively: is there a role per player (one offered) and a team per
/// ticket (with room) meeting the bounds, once the `free` seats left are
/// taken by players who may play any role?
fn exists(case: &Case, tickets: &[Vec<Option<Vec<&str>>>], free: usize) -> bool {
    let groups = case.rule_teams();
    let group_size = case.seats() / groups;
    // Free seats may go to any group with room; with one group they all
    // go there.
    let players: Vec<(usize, Vec<Option<usize>>)> = tickets
        .iter()
        .enumerate()
        .flat_map(|(t, ticket)| ticket.iter().map(move |p| (t, p)))
        .map(|(t, p)| (t, choices(case, p)))
        .collect();
    let mut team_of = vec![usize::MAX; tickets.len()];
    let mut counts = vec![vec![0; case.quotas.len()]; groups];
    let mut sizes = vec![0; groups];
    fn go(
        case: &Case,
        players: &[(usize, Vec<Option<usize>>)],
        k: usize,
        team_of: &mut Vec<usize>,
        counts: &mut Vec<Vec<usize>>,
        sizes: &mut Vec<usize>,
        (group_size, free): (usize, usize),
    ) -> bool {
        if k == players.len() {
            // Free seats: whatever room is left, all groups' open seats
            // hold exactly `free` players (the match's seats are full).
            let open: Vec<usize> = sizes.iter().map(|s| group_size - s).collect();
            return open.iter().sum::<usize>() == free && groups_meet(case, counts, &open);
        }
        let (ticket, options) = &players[k];
        let placed = team_of[*ticket];
        let groups: Vec<usize> = if placed != usize::MAX {
            vec![placed]
        } else {
            (0..sizes.len()).collect()
        };
        for g in groups {
            if sizes[g] == group_size {
                continue;
            }
            let fresh = placed == usize::MAX;
            if fresh {
                team_of[*ticket] = g;
            }
            sizes[g] += 1;
            for role in options {
                if let Some(r) = role {
                    counts[g][*r] += 1;
                }
                if groups_meet(case, counts, &vec![usize::MAX / 4; counts.len()])
                    && go(
                        case,
                        players,
                        k + 1,
                        team_of,
                        counts,
                        sizes,
                        (group_size, free),
                    )
                {
                    return true;
                }
                if let Some(r) = role {
                    counts[g][*r] -= 1;
                }
            }
            sizes[g] -= 1;
            if fresh {
                team_of[*ticket] = usize::MAX;
            }
        }
        false
    }
    go(
        case,
        &players,
        0,
        &mut team_of,
        &mut counts,
        &mut sizes,
        (group_size, free),
    )
}

/// Whether what the scripts returned meets the case: each player's role
/// offered, each ticket whole in one team, the bounds of every group.
fn valid(case: &Case, roles: &str, teams: &str) -> Result<(), String> {
    let roles: Vec<&str> = roles.split(',').collect();
    let teams: Vec<usize> = teams
        .split(',')
        .map(|t| t.parse().map_err(|e| format!("team {t:?}: {e}")))
        .collect::<Result<_, _>>()?;
    let groups = case.rule_teams();
    let mut counts = vec![vec![0; case.quotas.len()]; groups];
    let mut sizes = vec![0; case.teams];
    let mut at = 0;
    for (t, ticket) in case.tickets.iter().enumerate() {
        let team = teams[t] - 1;
        sizes[team] += ticket.len();
        for offer in ticket {
            let role = roles[at];
            at += 1;
            let index = case.quotas.iter().position(|q| q.0 == role);
            let ok = match offer {
                None => role.is_empty() || index.is_some(),
                Some(list) => list.contains(&role) && (index.is_some() || !role.is_empty()),
            };
            if !ok {
                return Err(format!("player {at} plays {role:?}, offering {offer:?}"));
            }
            if let Some(i) = index {
                counts[if groups == 1 { 0 } else { team }][i] += 1;
            }
        }
    }
    // Per match the teams are packed elsewhere (by size and rating).
    if groups > 1 && sizes.iter().any(|&s| s != case.team_size) {
        return Err(format!("team sizes {sizes:?}"));
    }
    if !groups_meet(case, &counts, &vec![0; groups]) {
        return Err(format!("counts {counts:?}"));
    }
    Ok(())
}

#[test]
fn role_assignment_agrees_with_an_exhaustive_search() {
    let server = RedisServer::start();
    let mut conn = server.connection();
    let script = redis::Script::new(&format!("{}\n{DRIVER}", *shared::scripts::LIBRARY));
    let mut rng = StdRng::seed_from_u64(41);
    let (mut solvable, mut unsolvable, mut fitting, mut stuck) = (0, 0, 0, 0);
    for n in 0..2000 {
        let case = random_case(&mut rng);
        let full: usize = case.tickets.iter().map(Vec::len).sum();
        let reply: (u8, String, String, String) = script
            .key("roles-test")
            .arg(case.json().to_string())
            .invoke(&mut conn)
            .expect("driver");
        let (solved, roles, teams, fits) = reply;
        let whole = full == case.seats();
        if whole {
            let expected = exists(&case, &case.tickets, 0);
            assert_eq!(solved == 1, expected, "case {n}: solve_roles: {case:?}");
            if expected {
                solvable += 1;
                valid(&case, &roles, &teams).unwrap_or_else(|e| panic!("case {n}: {e}: {case:?}"));
            } else {
                unsolvable += 1;
            }
        }
        // roles_fit checks the match's bounds (per team: all teams' worth)
        // on the roles alone, as a necessary condition while filling; the
        // exhaustive search here is held to the same: one group.
        let pooled = Case {
            per_team: false,
            quotas: case
                .quotas
                .iter()
                .map(|(r, lo, hi)| (*r, lo * case.rule_teams(), hi * case.rule_teams()))
                .collect(),
            ..case.clone()
        };
        for (k, fit) in fits.chars().enumerate() {
            let prefix = &case.tickets[..=k];
            let placed: usize = prefix.iter().map(Vec::len).sum();
            let solo: Vec<Vec<Option<Vec<&str>>>> = prefix
                .iter()
                .flat_map(|t| t.iter().map(|p| vec![p.clone()]))
                .collect();
            let expected = exists(&pooled, &solo, pooled.seats() - placed);
            assert_eq!(
                fit == '1',
                expected,
                "case {n}: roles_fit after {} tickets: {case:?}",
                k + 1
            );
            if expected {
                fitting += 1;
            } else {
                stuck += 1;
            }
        }
    }
    // The cases reach every answer, or they prove little.
    assert!(
        solvable > 200 && unsolvable > 200,
        "{solvable} solvable, {unsolvable} not"
    );
    assert!(
        fitting > 1000 && stuck > 200,
        "{fitting} fit, {stuck} stuck"
    );
}
