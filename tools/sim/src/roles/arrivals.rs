//! The role-queue study's arrivals: a Poisson trace in which every arrival
//! is a new player offering one role, or two. Its primary role is drawn by
//! the mix's shares (the issue's 15 % tanks, 20 % healers, 65 % damage); a
//! share of the players (20 %) also offer a second role, uniformly one of
//! the other two. Everything is seeded: the same seed, the same trace.

use std::collections::HashMap;

use rand::Rng;
use rand_distr::{Distribution, Exp};
use shared::PlayerId;

use crate::play::stream;

/// Random streams of the study (distinct from every other scenario's).
const ARRIVALS: u64 = 0x201E_0001;
const ROLES: u64 = 0x201E_0002;

/// The roles the study's players offer, in the order they are reported.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Role {
    Tank,
    Healer,
    Damage,
}

impl Role {
    pub const ALL: [Role; 3] = [Role::Tank, Role::Healer, Role::Damage];

    /// The attribute value a player sends.
    pub fn name(self) -> &'static str {
        match self {
            Role::Tank => "tank",
            Role::Healer => "healer",
            Role::Damage => "damage",
        }
    }

    pub fn parse(s: &str) -> Option<Role> {
        Role::ALL.into_iter().find(|r| r.name() == s)
    }

    pub fn index(self) -> usize {
        self as usize
    }
}

/// The roles one arrival offers: its primary role, and perhaps a second.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Offer {
    pub primary: Role,
    pub second: Option<Role>,
}

impl Offer {
    pub fn single(role: Role) -> Self {
        Self {
            primary: role,
            second: None,
        }
    }

    pub fn two(primary: Role, second: Role) -> Self {
        Self {
            primary,
            second: Some(second),
        }
    }

    /// The roles offered, primary first.
    pub fn roles(&self) -> Vec<Role> {
        std::iter::once(self.primary).chain(self.second).collect()
    }

    /// How many roles are offered (1 or 2).
    pub fn count(&self) -> usize {
        1 + usize::from(self.second.is_some())
    }

    pub fn offers(&self, role: Role) -> bool {
        self.primary == role || self.second == Some(role)
    }

    /// The attribute value sent: the roles' names as a JSON list.
    pub fn json(&self) -> serde_json::Value {
        serde_json::Value::Array(
            self.roles()
                .into_iter()
                .map(|r| serde_json::Value::String(r.name().into()))
                .collect(),
        )
    }

    /// The report's group of this offer.
    pub fn group(&self) -> Group {
        match self.second {
            None => Group::Only(self.primary),
            Some(_) => Group::Two,
        }
    }

    /// The two roles in report order (`None` for a single role).
    pub fn pair(&self) -> Option<(Role, Role)> {
        self.second
            .map(|s| (self.primary.min(s), self.primary.max(s)))
    }
}

/// The report's groups of players: by the role offered when it is one,
/// and everyone offering two together.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Group {
    Only(Role),
    Two,
}

impl Group {
    pub const ALL: [Group; 4] = [
        Group::Only(Role::Tank),
        Group::Only(Role::Healer),
        Group::Only(Role::Damage),
        Group::Two,
    ];

    pub fn label(self) -> String {
        match self {
            Group::Only(r) => format!("{} only", r.name()),
            Group::Two => "two roles".into(),
        }
    }

    pub fn index(self) -> usize {
        match self {
            Group::Only(r) => r.index(),
            Group::Two => 3,
        }
    }
}

/// Who arrives offering what.
#[derive(Debug, Clone, PartialEq)]
pub struct Mix {
    /// Each role's share of primary roles (tank, healer, damage); they sum
    /// to 1.
    pub shares: [f64; 3],
    /// The share of players who offer a second role.
    pub two_roles: f64,
}

impl Mix {
    /// The issue's: 15 % tanks, 20 % healers, 65 % damage; 20 % of the
    /// players offer two roles.
    pub fn issue() -> Self {
        Self {
            shares: [0.15, 0.20, 0.65],
            two_roles: 0.20,
        }
    }

    pub fn validate(&self) -> Result<(), String> {
        let sum: f64 = self.shares.iter().sum();
        if self.shares.iter().any(|s| !(s.is_finite() && *s >= 0.0)) || (sum - 1.0).abs() > 1e-9 {
            return Err(format!(
                "role shares must be >= 0 and sum to 1, got {:?}",
                self.shares
            ));
        }
        if !(0.0..=1.0).contains(&self.two_roles) {
            return Err(format!(
                "the share of players offering two roles is 0..=1, got {}",
                self.two_roles
            ));
        }
        Ok(())
    }

    /// The expected share of arrivals offering `role` and nothing else.
    pub fn only(&self, role: Role) -> f64 {
        (1.0 - self.two_roles) * self.shares[role.index()]
    }

    /// The expected share of arrivals who may play `role` (as their only,
    /// primary or second role).
    pub fn capable(&self, role: Role) -> f64 {
        let others: f64 = Role::ALL
            .into_iter()
            .filter(|r| *r != role)
            .map(|r| self.shares[r.index()])
            .sum();
        self.shares[role.index()] + self.two_roles * others / 2.0
    }

    /// Draws one offer.
    pub fn draw(&self, rng: &mut impl Rng) -> Offer {
        let u: f64 = rng.random();
        let mut acc = 0.0;
        let mut primary = Role::Damage;
        for r in Role::ALL {
            acc += self.shares[r.index()];
            if u < acc {
                primary = r;
                break;
            }
        }
        if rng.random::<f64>() < self.two_roles {
            let others: Vec<Role> = Role::ALL.into_iter().filter(|r| *r != primary).collect();
            Offer::two(primary, others[rng.random_range(0..others.len())])
        } else {
            Offer::single(primary)
        }
    }
}

/// One arrival: when, and what it offers. Arrival `i` is player `ids[i]`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Arrival {
    pub time: f64,
    pub offer: Offer,
}

/// Who arrives when: the same for every lane.
#[derive(Debug, Clone)]
pub struct Trace {
    /// In time order.
    pub arrivals: Vec<Arrival>,
    /// Arrival `i`'s player: `r000001`, `r000002`, … (every arrival is a
    /// new player).
    pub ids: Vec<PlayerId>,
    /// Player id → arrival.
    pub index: HashMap<String, usize>,
    pub rate: f64,
    pub seconds: f64,
    pub mix: Mix,
}

impl Trace {
    /// Poisson arrivals at `rate` per second for `seconds`, each a new
    /// player whose offer `mix` draws. Arrival times and offers come from
    /// separate streams of `seed`, so another mix keeps the times.
    pub fn generate(rate: f64, seconds: f64, mix: &Mix, seed: u64) -> Result<Self, String> {
        mix.validate()?;
        if !(rate.is_finite() && rate > 0.0 && seconds.is_finite() && seconds > 0.0) {
            return Err(format!(
                "arrivals at {rate}/s for {seconds} s: both must be > 0"
            ));
        }
        let gaps = Exp::new(rate).map_err(|e| format!("rate {rate}: {e}"))?;
        let mut times_rng = stream(seed, ARRIVALS, 0);
        let mut roles_rng = stream(seed, ROLES, 0);
        let mut arrivals = Vec::new();
        let mut t = 0.0;
        loop {
            t += gaps.sample(&mut times_rng);
            if t >= seconds {
                break;
            }
            arrivals.push(Arrival {
                time: t,
                offer: mix.draw(&mut roles_rng),
            });
        }
        Self::of(arrivals, rate, seconds, mix.clone())
    }

    /// A trace of these arrivals (in time order), their players numbered.
    pub fn of(arrivals: Vec<Arrival>, rate: f64, seconds: f64, mix: Mix) -> Result<Self, String> {
        let width = arrivals.len().to_string().len().max(6);
        let ids = (0..arrivals.len())
            .map(|i| PlayerId::parse(&format!("r{:0width$}", i + 1)).map_err(|e| e.to_string()))
            .collect::<Result<Vec<_>, String>>()?;
        let index = ids
            .iter()
            .enumerate()
            .map(|(i, p)| (p.as_str().to_owned(), i))
            .collect();
        Ok(Self {
            arrivals,
            ids,
            index,
            rate,
            seconds,
            mix,
        })
    }

    /// The time of the last arrival (0 without any).
    pub fn last(&self) -> f64 {
        self.arrivals.last().map_or(0.0, |a| a.time)
    }

    /// How many arrivals fall in each group.
    pub fn group_counts(&self) -> [usize; 4] {
        let mut n = [0; 4];
        for a in &self.arrivals {
            n[a.offer.group().index()] += 1;
        }
        n
    }

    /// How many arrivals may play each role.
    pub fn capable_counts(&self) -> [usize; 3] {
        let mut n = [0; 3];
        for a in &self.arrivals {
            for r in a.offer.roles() {
                n[r.index()] += 1;
            }
        }
        n
    }

    /// How many arrivals have each primary role.
    pub fn primary_counts(&self) -> [usize; 3] {
        let mut n = [0; 3];
        for a in &self.arrivals {
            n[a.offer.primary.index()] += 1;
        }
        n
    }
}
