//! Resource limits: refuse a configuration before its engines allocate what no machine has.
//!
//! A legal query can compile to thousands of automaton states, and the engines keep
//! |Z|×|Z| matrices (per retained element, while an element is evicted). The estimate is
//! made from the automaton and the configuration alone, before anything is built.
use crate::automaton::dfa::Dfa;
use crate::engine::error::Error;
use crate::automaton::semantics::Policy;
use crate::summary::SummaryPolicy;

/// The largest summary size accepted.
pub const MAX_SIZE: usize = 10_000_000;
/// Default memory budget of one engine: 1 GiB.
pub const DEFAULT_MAX_BYTES: u64 = 1 << 30;
/// Bytes of one counter cell (`Dual<u128>`, and `Dual<Xf>` for estimates).
const CELL: u64 = 32;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    pub max_bytes: u64,
}

impl Default for Limits {
    fn default() -> Self {
        Limits { max_bytes: DEFAULT_MAX_BYTES }
    }
}

fn human(bytes: u64) -> String {
    let units = ["B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"];
    let mut v = bytes as f64;
    let mut u = 0;
    while v >= 1024.0 && u + 1 < units.len() {
        v /= 1024.0;
        u += 1;
    }
    format!("{v:.1} {}", units[u])
}

impl Limits {
    /// The exact engine: the two-stacks products (three |Z|×|Z| matrices); each event in
    /// the window then adds one |Z| row.
    pub fn exact_bytes(dfa: &Dfa) -> u64 {
        let z = dfa.n as u64;
        3u64.saturating_mul(z).saturating_mul(z).saturating_mul(CELL)
    }

    /// A summary: per retained element a |Z| row of exact and of estimated counters and,
    /// under skip-till-any-match, up to two |Z|×|Z| matrices while an element is evicted;
    /// the look-ahead cache holds one |Z| row per step.
    pub fn summary_bytes(dfa: &Dfa, size: usize, policy: Policy) -> u64 {
        let (z, n) = (dfa.n as u64, size as u64);
        let rows = n.saturating_mul(3).saturating_mul(z);
        let matrices = if crate::with_semantics!(policy, P => <P as SummaryPolicy>::EVICTION_MATRICES) {
            n.saturating_add(1).saturating_mul(2).saturating_mul(z).saturating_mul(z)
        } else {
            z.saturating_mul(z)
        };
        rows.saturating_add(matrices).saturating_mul(CELL)
    }

    fn check(&self, what: &str, need: u64, dfa: &Dfa) -> Result<(), Error> {
        if need > self.max_bytes {
            return Err(Error::Limit(format!(
                "{what} would need about {} for an automaton of {} states, above the limit of {}; \
                 simplify the query, use a smaller summary, or raise the limit (memory_limit=)",
                human(need),
                dfa.n,
                human(self.max_bytes)
            )));
        }
        Ok(())
    }

    pub fn check_exact(&self, dfa: &Dfa) -> Result<(), Error> {
        self.check("the exact engine", Self::exact_bytes(dfa), dfa)
    }

    pub fn check_summary(&self, dfa: &Dfa, size: usize, policy: Policy) -> Result<(), Error> {
        self.check(&format!("a summary of size {size}"), Self::summary_bytes(dfa, size, policy), dfa)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::automaton::dfa::{Dfa, DfaSpec};

    fn chain(n: usize) -> Dfa {
        let table = (0..n).map(|q| if q + 1 < n { q as i64 + 1 } else { -1 }).collect();
        let mut finals = vec![false; n];
        finals[n - 1] = true;
        Dfa::new(DfaSpec { n, alphabet: b"a".to_vec(), negated: Vec::new(), start: 0, finals, table }).unwrap()
    }

    #[test]
    fn refuses_huge_automata_with_a_clear_message() {
        let big = chain(10_000);
        let err = Limits::default().check_summary(&big, 500, Policy::Any).unwrap_err();
        assert!(matches!(&err, Error::Limit(m) if m.contains("10000 states") && m.contains("memory_limit")), "{err}");
        assert!(Limits::default().check_exact(&big).is_err());
        assert!(Limits::default().check_summary(&chain(5), 500, Policy::Any).is_ok());
        assert!(Limits { max_bytes: u64::MAX }.check_summary(&big, MAX_SIZE, Policy::Any).is_ok());
    }
}
