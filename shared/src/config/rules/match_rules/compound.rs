//! Compound rules: `and`, `or` and `not` over other rules of the world,
//! which must not name each other in a cycle.

use super::*;

impl RuleSection {
    /// A compound rule's kind (the rule at index `i`; `names`: every
    /// rule's name, by index). A cycle is found later (`find_cycle`), once
    /// every rule is read.
    pub(super) fn compound(&self, i: usize, names: &[String]) -> Result<RuleKind, String> {
        let op = one_of(
            "op",
            self.op.as_ref().ok_or("op: required")?,
            &["and", "or", "not"],
        )?;
        let listed = self
            .rules
            .as_ref()
            .ok_or("rules: required")?
            .as_array()
            .ok_or("rules: must be a list of rule names")?;
        let (lo, hi) = if op == "not" {
            (1, 1)
        } else {
            (2, MAX_OPERANDS)
        };
        if !(lo..=hi).contains(&listed.len()) {
            return Err(format!(
                "rules: {op} names {lo} to {hi} rules, got {}",
                listed.len()
            ));
        }
        let mut of: Vec<usize> = Vec::with_capacity(listed.len());
        for v in listed {
            let name = string("rules", v)?;
            let j = names
                .iter()
                .position(|n| n == name)
                .ok_or_else(|| format!("rules: no rule of this world is named {name:?}"))?;
            if j == i {
                return Err("rules: a compound cannot name itself".into());
            }
            if of.contains(&j) {
                return Err(format!("rules: {name:?} is named twice"));
            }
            of.push(j);
        }
        Ok(match op {
            "and" => RuleKind::And(of),
            "or" => RuleKind::Or(of),
            _ => RuleKind::Not(of[0]),
        })
    }
}

/// A cycle among the compounds (`[a, b, ..., a]`), if any.
pub(super) fn find_cycle(rules: &[MatchRule]) -> Option<Vec<usize>> {
    fn visit(rules: &[MatchRule], i: usize, state: &mut [u8], path: &mut Vec<usize>) -> bool {
        match state[i] {
            2 => return false,
            1 => {
                let start = path.iter().position(|&p| p == i).unwrap_or(0);
                path.drain(..start);
                path.push(i);
                return true;
            }
            _ => {}
        }
        state[i] = 1;
        path.push(i);
        for &j in rules[i].kind.operands() {
            if visit(rules, j, state, path) {
                return true;
            }
        }
        path.pop();
        state[i] = 2;
        false
    }
    let mut state = vec![0u8; rules.len()];
    (0..rules.len()).find_map(|i| {
        let mut path = Vec::new();
        visit(rules, i, &mut state, &mut path).then_some(path)
    })
}
