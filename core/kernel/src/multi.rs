//! Several exact queries over one stream in one pass (a query set, issue 12).
//!
//! The batch is validated once and every distinct engine is fed from the same arrays.
//! Queries that would count the same sets share one engine: equal automaton, window and
//! policy (the exact engine counts COUNT and SUM together, so the aggregate does not matter).
//! Each engine runs over the whole batch before the next one starts, so its counters stay in
//! cache; evaluation times are snapshotted per engine at the same event positions as alone.
use crate::batch::{Batch, Raw};
use crate::dfa::{Dfa, GAP_BREAK};
use crate::engine::ExactEngine;
use crate::error::Error;
use crate::limits::Limits;
use crate::semantics::Policy;
use num_bigint::BigUint;
use std::sync::Arc;

/// One distinct engine and what it counts beside its totals.
#[derive(Clone)]
struct Slot {
    engine: ExactEngine,
    skipped: u64,
}

/// `(count, sum, partial count)` of one query.
pub type Totals = (BigUint, BigUint, BigUint);

#[derive(Clone)]
pub struct MultiExact {
    slots: Vec<Slot>,
    /// Query index → slot index.
    route: Vec<usize>,
    events: u64,
    last_t: Option<i64>,
}

impl MultiExact {
    /// One engine per distinct `(automaton, window, policy)`; the memory limit applies to the
    /// engines together.
    pub fn new(queries: &[(Arc<Dfa>, i64, Policy)], limits: &Limits) -> Result<Self, Error> {
        if queries.is_empty() {
            return Err(Error::input("a query set needs at least one query"));
        }
        let mut keys: Vec<(&Arc<Dfa>, i64, Policy)> = Vec::new();
        let mut slots = Vec::new();
        let mut route = Vec::with_capacity(queries.len());
        let mut bytes: u64 = 0;
        for (dfa, tau, policy) in queries {
            let same = |k: &(&Arc<Dfa>, i64, Policy)| k.1 == *tau && k.2 == *policy && (Arc::ptr_eq(k.0, dfa) || k.0.spec() == dfa.spec());
            if let Some(i) = keys.iter().position(same) {
                route.push(i);
                continue;
            }
            let engine = ExactEngine::new(dfa.clone(), *tau, *policy, limits)?;
            bytes = bytes.saturating_add(Limits::exact_bytes(dfa));
            if bytes > limits.max_bytes {
                return Err(Error::Limit(format!(
                    "the exact engines of this query set would need about {bytes} bytes together, above the limit of {} bytes; \
                     split the set or raise the limit (memory_limit=)",
                    limits.max_bytes
                )));
            }
            route.push(slots.len());
            keys.push((dfa, *tau, *policy));
            slots.push(Slot { engine, skipped: 0 });
        }
        Ok(MultiExact { slots, route, events: 0, last_t: None })
    }

    pub fn queries(&self) -> usize {
        self.route.len()
    }

    /// Distinct engines (queries that count the same sets share one).
    pub fn engines(&self) -> usize {
        self.slots.len()
    }

    pub fn events(&self) -> u64 {
        self.events
    }

    pub fn last_timestamp(&self) -> Option<i64> {
        self.last_t
    }

    /// Events of no letter of query `q` so far.
    pub fn skipped(&self, q: usize) -> u64 {
        self.slots[self.route[q]].skipped
    }

    pub fn totals(&self, q: usize) -> Totals {
        self.slots[self.route[q]].engine.totals()
    }

    pub fn tier(&self, q: usize) -> &'static str {
        self.slots[self.route[q]].engine.tier()
    }

    /// Process a batch (validated once, before anything changes). Returns, per query, its
    /// totals at each evaluation time (`evals`, increasing).
    pub fn extend(&mut self, chars: &[u8], ts: &[i64], vals: Option<&[i64]>, evals: &[i64]) -> Result<Vec<Vec<(i64, Totals)>>, Error> {
        let batch = Batch::new(chars, ts, vals, evals, self.last_t)?;
        let mut per_slot = Vec::with_capacity(self.slots.len());
        for slot in &mut self.slots {
            let dfa: Arc<Dfa> = slot.engine.dfa().clone();
            let rows = batch.run(
                slot,
                &dfa,
                |s, raw| {
                    if raw == Raw::Gap(GAP_BREAK) {
                        s.skipped += 1;
                    }
                    s.engine.feed(raw)
                },
                |s, t| (t, s.engine.totals()),
            )?;
            per_slot.push(rows);
        }
        self.events += chars.len() as u64;
        if let Some(t) = batch.last_timestamp() {
            self.last_t = Some(t);
        }
        Ok(self.route.iter().map(|&i| per_slot[i].clone()).collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dfa::DfaSpec;
    use proptest::prelude::*;

    /// `a b* c` over letters abc, and `a c` over letters ac.
    fn abc() -> Arc<Dfa> {
        let spec = DfaSpec { n: 3, alphabet: b"abc".to_vec(), negated: vec![], start: 0, finals: vec![false, false, true], table: vec![1, -1, -1, -1, 1, 2, -1, -1, -1] };
        Arc::new(Dfa::new(spec).unwrap())
    }

    fn ac() -> Arc<Dfa> {
        let spec = DfaSpec { n: 3, alphabet: b"ac".to_vec(), negated: vec![], start: 0, finals: vec![false, false, true], table: vec![1, -1, -1, 2, -1, -1] };
        Arc::new(Dfa::new(spec).unwrap())
    }

    fn alone(dfa: &Arc<Dfa>, tau: i64, policy: Policy, chars: &[u8], ts: &[i64], evals: &[i64]) -> (Vec<(i64, Totals)>, u64, Totals) {
        let mut e = ExactEngine::new(dfa.clone(), tau, policy, &Limits::default()).unwrap();
        let mut skipped = 0;
        let rows = Batch::new(chars, ts, None, evals, None)
            .unwrap()
            .run(
                &mut e,
                dfa,
                |e, raw| {
                    skipped += (raw == Raw::Gap(GAP_BREAK)) as u64;
                    e.feed(raw)
                },
                |e, t| (t, e.totals()),
            )
            .unwrap();
        (rows, skipped, e.totals())
    }

    #[test]
    fn identical_queries_share_an_engine() {
        let q = [(abc(), 5, Policy::Any), (abc(), 5, Policy::Any), (abc(), 6, Policy::Any), (ac(), 5, Policy::Any), (abc(), 5, Policy::Next)];
        let m = MultiExact::new(&q, &Limits::default()).unwrap();
        assert_eq!((m.queries(), m.engines()), (5, 4));
        assert!(MultiExact::new(&[], &Limits::default()).is_err());
    }

    #[test]
    fn a_bad_batch_changes_nothing() {
        let mut m = MultiExact::new(&[(abc(), 5, Policy::Any), (ac(), 3, Policy::Any)], &Limits::default()).unwrap();
        assert!(m.extend(b"abc", &[1, 3, 2], None, &[]).is_err());
        assert_eq!((m.events(), m.last_timestamp()), (0, None));
        assert_eq!(m.totals(0).0, BigUint::default());
    }

    proptest! {
        #[test]
        fn a_query_set_equals_each_query_alone(
            chars in proptest::collection::vec(prop_oneof![Just(b'a'), Just(b'b'), Just(b'c'), Just(b'x')], 0..40),
            gaps in proptest::collection::vec(0i64..3, 40),
            taus in proptest::collection::vec(0i64..8, 4),
            split in 0usize..40,
            evals in proptest::collection::vec(0i64..80, 0..4),
        ) {
            let ts: Vec<i64> = gaps.iter().take(chars.len()).scan(0, |t, g| { *t += g; Some(*t) }).collect();
            let mut evals = evals;
            evals.sort();
            let policies = [Policy::Any, Policy::Next, Policy::Contiguous, Policy::Any];
            let dfas = [abc(), ac(), abc(), abc()];
            let q: Vec<_> = (0..4).map(|i| (dfas[i].clone(), taus[i], policies[i])).collect();
            let mut m = MultiExact::new(&q, &Limits::default()).unwrap();
            // Two batches: the evaluations all go with the second one.
            let k = split.min(chars.len());
            let first_end = ts.get(k.wrapping_sub(1)).copied().filter(|_| k > 0);
            let evals: Vec<i64> = evals.into_iter().filter(|&e| first_end.is_none_or(|t| e >= t)).collect();
            m.extend(&chars[..k], &ts[..k], None, &[]).unwrap();
            let rows = m.extend(&chars[k..], &ts[k..], None, &evals).unwrap();
            for (i, (dfa, tau, policy)) in q.iter().enumerate() {
                let (want_rows, skipped, totals) = alone(dfa, *tau, *policy, &chars, &ts, &evals);
                prop_assert_eq!(&rows[i], &want_rows);
                prop_assert_eq!(m.totals(i), totals);
                prop_assert_eq!(m.skipped(i), skipped);
            }
            prop_assert_eq!(m.events(), chars.len() as u64);
        }
    }
}
