//! Approximate matching (ACEP): counts by the number of missing pattern letters.
//!
//! The query compiler builds an automaton whose final states carry a *cost label*: the least
//! number of pattern letters the words ending there miss. Every engine already keeps its
//! totals per automaton state (the exact window's totals, a summary's `g`), so the count by
//! missing letters is a per-label sum of those totals: no engine changes, and all of them
//! (both policies, contiguity, summaries) get it from the same readout. The labels stay
//! outside [`Dfa`] and the saved state: they are a function of the query, which the saved
//! state states and the caller recompiles and checks.
use crate::automaton::dfa::Dfa;
use crate::numbers::dual::Dual;
use num_bigint::BigUint;

/// The largest label (most missing letters) accepted.
pub const MAX_COST: u8 = 64;

/// Per state its cost label (0 for non-final states), and the largest label allowed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CostLabels {
    cost: Vec<u8>,
    max: u8,
}

impl CostLabels {
    /// Check `cost` against `dfa`: one label per state, at most `max` (≤ [`MAX_COST`]), and 0
    /// on every non-final state (a non-final state ends no match, so a label there is a bug).
    pub fn new(dfa: &Dfa, cost: Vec<u8>, max: u8) -> Result<CostLabels, String> {
        if max > MAX_COST {
            return Err(format!("at most {MAX_COST} missing letters are supported, got {max}"));
        }
        if cost.len() != dfa.n {
            return Err(format!("{} cost labels for an automaton of {} states", cost.len(), dfa.n));
        }
        for (q, &c) in cost.iter().enumerate() {
            if c > max {
                return Err(format!("state {q} has cost label {c}, above the maximum {max}"));
            }
            if c != 0 && !dfa.finals[q] {
                return Err(format!("state {q} is not final but has cost label {c}"));
            }
        }
        Ok(CostLabels { cost, max })
    }

    pub fn max(&self) -> u8 {
        self.max
    }

    /// The label of state `q`: the missing letters of the matches that end there.
    pub fn label(&self, q: usize) -> u8 {
        self.cost[q]
    }

    /// The count of matches by label: `max + 1` entries whose sum is the total count.
    pub fn split(&self, dfa: &Dfa, totals: &[Dual<BigUint>]) -> Vec<BigUint> {
        let mut out = vec![BigUint::default(); self.max as usize + 1];
        for (q, d) in totals.iter().enumerate() {
            if dfa.finals[q] {
                out[self.cost[q] as usize] += &d.c;
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::automaton::dfa::DfaSpec;
    use crate::automaton::semantics::{AnyMatch, Ev};
    use crate::exact::window::{split_totals, Window};
    use std::sync::Arc;

    /// `AB` with one missing letter: states 0 start, 1 after A (final, cost 1), 2 after B
    /// alone (final, cost 1), 3 after AB (final, cost 0).
    fn ab1() -> (Dfa, Vec<u8>) {
        let spec = DfaSpec { n: 4, alphabet: b"AB".to_vec(), negated: Vec::new(), start: 0, finals: vec![false, true, true, true], table: vec![1, 2, -1, 3, -1, -1, -1, -1] };
        (Dfa::new(spec).unwrap(), vec![0, 1, 1, 0])
    }

    #[test]
    fn labels_are_checked() {
        let (dfa, cost) = ab1();
        assert!(CostLabels::new(&dfa, cost.clone(), 1).is_ok());
        assert!(CostLabels::new(&dfa, vec![0, 1, 1], 1).unwrap_err().contains("3 cost labels"));
        assert!(CostLabels::new(&dfa, vec![1, 1, 1, 0], 1).unwrap_err().contains("not final"));
        assert!(CostLabels::new(&dfa, vec![0, 2, 1, 0], 1).unwrap_err().contains("above the maximum"));
        assert!(CostLabels::new(&dfa, cost, MAX_COST + 1).is_err());
    }

    #[test]
    fn split_sums_to_the_count() {
        // A0 B1 A2 B3, window 10: singletons {A}x2, {B}x2 (cost 1), pairs AB: (0,1),(0,3),(2,3) (cost 0).
        let (dfa, cost) = ab1();
        let dfa = Arc::new(dfa);
        let evs: Vec<Ev> = [0u8, 1, 0, 1].iter().enumerate().map(|(i, &sym)| Ev { sym, t: i as i64, v: 1, gap: 0 }).collect();
        let w = Window::<BigUint, AnyMatch>::run(dfa.clone(), 10, &evs).unwrap();
        let labels = CostLabels::new(&dfa, cost, 1).unwrap();
        let by = labels.split(&dfa, &w.totals);
        assert_eq!(by, vec![BigUint::from(3u32), BigUint::from(4u32)]);
        assert_eq!(by.iter().sum::<BigUint>(), split_totals(&dfa, &w.totals).0);
    }
}
