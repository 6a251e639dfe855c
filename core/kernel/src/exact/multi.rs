//! Several exact queries over one stream in one pass (a query set).
//!
//! The batch is validated once and every distinct engine is fed from the same arrays.
//! Queries that would count the same sets share one engine: equal automaton, window and
//! policy (the exact engine counts COUNT and SUM together, so the aggregate does not matter).
//! Each engine runs over the whole batch before the next one starts, so its counters stay in
//! cache; evaluation times are snapshotted per engine at the same event positions as alone.
use crate::engine::batch::{Batch, Raw};
use crate::automaton::dfa::{Dfa, UNKNOWN};
use crate::engine::ExactEngine;
use crate::engine::error::Error;
use crate::engine::limits::Limits;
use crate::exact::merged::{self, MergedExact, Product};
use crate::automaton::semantics::Policy;
use num_bigint::BigUint;
use std::sync::Arc;

/// When queries run over a merged (product) automaton.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Merge {
    Never,
    /// When the product has fewer structurally non-zero cells than the queries together.
    Auto,
    /// Whenever the queries qualify (tests and measurements).
    Always,
}

impl Merge {
    pub const NAMES: [&'static str; 3] = ["never", "auto", "always"];
    pub fn parse(s: &str) -> Option<Merge> {
        Self::NAMES.iter().position(|n| *n == s).map(|i| [Merge::Never, Merge::Auto, Merge::Always][i])
    }
}

/// `(count, sum, partial count)` of one query.
pub type Totals = (BigUint, BigUint, BigUint);

/// One engine: a query's own (shared by identical queries), or a merged automaton.
#[derive(Clone)]
enum Slot {
    Plain(ExactEngine),
    Merged(MergedExact, Arc<Product>),
}

/// What a slot reports at an evaluation time, before it is split per query.
#[derive(Clone)]
enum Snap {
    Plain(Totals),
    Merged(Vec<crate::numbers::dual::Dual<BigUint>>),
}

#[derive(Clone)]
pub struct MultiExact {
    slots: Vec<Slot>,
    /// Query index → slot index and, in a merged slot, the query's place in the product.
    route: Vec<(usize, usize)>,
    dfas: Vec<Arc<Dfa>>,
    skipped: Vec<u64>,
    events: u64,
    last_t: Option<i64>,
}

impl MultiExact {
    /// One engine per distinct `(automaton, window, policy)`; with `merge`, distinct
    /// skip-till-any-match queries without negation that share a window run over one product
    /// automaton when its structurally non-zero cells are fewer than theirs together. The
    /// memory limit applies to the engines together.
    pub fn new(queries: &[(Arc<Dfa>, i64, Policy)], limits: &Limits, merge: Merge) -> Result<Self, Error> {
        if queries.is_empty() {
            return Err(Error::input("a query set needs at least one query"));
        }
        // Distinct queries first: identical ones share whatever their first copy runs on.
        let mut distinct: Vec<usize> = Vec::new();
        let mut first_of = Vec::with_capacity(queries.len());
        for (i, (dfa, tau, policy)) in queries.iter().enumerate() {
            let same = |&j: &usize| {
                let (d, t, p) = &queries[j];
                t == tau && p == policy && (Arc::ptr_eq(d, dfa) || d.spec() == dfa.spec())
            };
            match distinct.iter().position(same) {
                Some(k) => first_of.push(distinct[k]),
                None => {
                    distinct.push(i);
                    first_of.push(i);
                }
            }
        }
        let mut slots = Vec::new();
        let mut place = vec![(usize::MAX, 0); queries.len()];
        let mut bytes: u64 = 0;
        let mut add_bytes = |dfa: &Dfa| -> Result<(), Error> {
            bytes = bytes.saturating_add(Limits::exact_bytes(dfa));
            if bytes > limits.max_bytes {
                return Err(Error::Limit(format!(
                    "the exact engines of this query set would need about {bytes} bytes together, above the limit of {} bytes; \
                     split the set or raise the limit (memory_limit=)",
                    limits.max_bytes
                )));
            }
            Ok(())
        };
        let mut done = vec![false; queries.len()];
        for &i in &distinct {
            if done[i] {
                continue;
            }
            let (dfa, tau, policy) = &queries[i];
            let mergeable = |j: usize| {
                let (d, t, p) = &queries[j];
                p.plain() && t == tau && d.negated.is_empty()
            };
            let group: Vec<usize> = if merge != Merge::Never && mergeable(i) { distinct.iter().copied().filter(|&j| !done[j] && mergeable(j)).collect() } else { vec![i] };
            if group.len() > 1 {
                let dfas: Vec<&Dfa> = group.iter().map(|&j| &*queries[j].0).collect();
                let alone: usize = dfas.iter().map(|d| merged::cells(d)).sum();
                let max_states = dfas.iter().map(|d| d.n).sum::<usize>().saturating_mul(2).min(crate::automaton::dfa::MAX_STATES);
                // A product over the memory limit falls back to one engine per query.
                let fits = |p: &Product| limits.check_exact(&p.dfa).is_ok() && (merge == Merge::Always || p.cells() < alone);
                if let Some(prod) = Product::new(&dfas, max_states).filter(fits) {
                    add_bytes(&prod.dfa)?;
                    let prod = Arc::new(prod);
                    for (k, &j) in group.iter().enumerate() {
                        place[j] = (slots.len(), k);
                        done[j] = true;
                    }
                    slots.push(Slot::Merged(MergedExact::new(prod.clone(), *tau), prod));
                    continue;
                }
            }
            let engine = ExactEngine::new(dfa.clone(), *tau, *policy, limits)?;
            add_bytes(dfa)?;
            place[i] = (slots.len(), 0);
            done[i] = true;
            slots.push(Slot::Plain(engine));
        }
        let route = first_of.iter().map(|&f| place[f]).collect();
        let dfas = queries.iter().map(|q| q.0.clone()).collect();
        Ok(MultiExact { slots, route, dfas, skipped: vec![0; queries.len()], events: 0, last_t: None })
    }

    pub fn queries(&self) -> usize {
        self.route.len()
    }

    /// Distinct engines (identical queries share one; merged queries share a product).
    pub fn engines(&self) -> usize {
        self.slots.len()
    }

    /// Engines that run a merged automaton.
    pub fn merged(&self) -> usize {
        self.slots.iter().filter(|s| matches!(s, Slot::Merged(..))).count()
    }

    pub fn events(&self) -> u64 {
        self.events
    }

    pub fn last_timestamp(&self) -> Option<i64> {
        self.last_t
    }

    /// Events of no letter (and no negated character) of query `q` so far.
    pub fn skipped(&self, q: usize) -> u64 {
        self.skipped[q]
    }

    fn snap(slot: &Slot) -> Snap {
        match slot {
            Slot::Plain(e) => Snap::Plain(e.totals()),
            Slot::Merged(m, _) => Snap::Merged(m.totals_big()),
        }
    }

    fn split(&self, q: usize, snap: &Snap) -> Totals {
        match (snap, &self.slots[self.route[q].0]) {
            (Snap::Plain(t), _) => t.clone(),
            (Snap::Merged(totals), Slot::Merged(_, prod)) => prod.split(self.route[q].1, totals, &self.dfas[q].finals),
            (Snap::Merged(_), Slot::Plain(_)) => unreachable!("a merged snapshot comes from a merged slot"),
        }
    }

    pub fn totals(&self, q: usize) -> Totals {
        self.split(q, &Self::snap(&self.slots[self.route[q].0]))
    }

    pub fn tier(&self, q: usize) -> &'static str {
        match &self.slots[self.route[q].0] {
            Slot::Plain(e) => e.tier(),
            Slot::Merged(m, _) => m.tier(),
        }
    }

    /// Process a batch (validated once, before anything changes). Returns, per query, its
    /// totals at each evaluation time (`evals`, increasing).
    pub fn extend(&mut self, chars: &[u8], ts: &[i64], vals: Option<&[i64]>, evals: &[i64]) -> Result<Vec<Vec<(i64, Totals)>>, Error> {
        let batch = Batch::new(chars, ts, vals, evals, self.last_t)?;
        let mut per_slot = Vec::with_capacity(self.slots.len());
        for slot in &mut self.slots {
            let rows = match slot {
                Slot::Plain(engine) => {
                    let dfa = engine.dfa().clone();
                    batch.run(engine, &dfa, |e, raw| e.feed(raw), |e, t| (t, Snap::Plain(e.totals())))?
                }
                Slot::Merged(engine, prod) => {
                    // No negation in a product and skip-till-any-match: other events change nothing.
                    let dfa = prod.dfa.clone();
                    batch.run(
                        engine,
                        &dfa,
                        |e, raw| match raw {
                            Raw::Element(ev) => e.push(ev),
                            Raw::Gap(_) => Ok(()),
                        },
                        |e, t| (t, Snap::Merged(e.totals_big())),
                    )?
                }
            };
            per_slot.push(rows);
        }
        let mut histogram = [0u64; 256];
        for &b in chars {
            histogram[b as usize] += 1;
        }
        for (q, dfa) in self.dfas.iter().enumerate() {
            self.skipped[q] += (0..256).filter(|&b| dfa.lookup[b] == UNKNOWN && dfa.neg_lookup[b] == UNKNOWN).map(|b| histogram[b]).sum::<u64>();
        }
        self.events += chars.len() as u64;
        if let Some(t) = batch.last_timestamp() {
            self.last_t = Some(t);
        }
        Ok((0..self.queries()).map(|q| per_slot[self.route[q].0].iter().map(|(t, snap)| (*t, self.split(q, snap))).collect()).collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::automaton::dfa::{DfaSpec, GAP_BREAK};
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
        let m = MultiExact::new(&q, &Limits::default(), Merge::Never).unwrap();
        assert_eq!((m.queries(), m.engines()), (5, 4));
        assert!(MultiExact::new(&[], &Limits::default(), Merge::Always).is_err());
    }

    #[test]
    fn queries_with_a_window_in_common_can_share_a_product() {
        let q = [(abc(), 5, Policy::Any), (ac(), 5, Policy::Any), (ac(), 4, Policy::Any), (abc(), 5, Policy::Next)];
        let m = MultiExact::new(&q, &Limits::default(), Merge::Always).unwrap();
        assert_eq!((m.engines(), m.merged()), (3, 1));
        // Here the product (13 cells) is no smaller than the two alone (6 + 6).
        assert_eq!(MultiExact::new(&q, &Limits::default(), Merge::Auto).unwrap().merged(), 0);
        // A product over the memory limit (5 states: 2,400 bytes) is not built; the queries
        // alone (3 states each: 864 bytes) still fit.
        let tight = Limits { max_bytes: 2_000 };
        assert_eq!(MultiExact::new(&q[..2], &tight, Merge::Always).unwrap().merged(), 0);
    }

    #[test]
    fn a_bad_batch_changes_nothing() {
        let mut m = MultiExact::new(&[(abc(), 5, Policy::Any), (ac(), 5, Policy::Any)], &Limits::default(), Merge::Always).unwrap();
        assert!(m.extend(b"abc", &[1, 3, 2], None, &[]).is_err());
        assert_eq!((m.events(), m.last_timestamp()), (0, None));
        assert_eq!(m.totals(0).0, BigUint::default());
    }

    proptest! {
        #[test]
        fn a_query_set_equals_each_query_alone(
            chars in proptest::collection::vec(prop_oneof![Just(b'a'), Just(b'b'), Just(b'c'), Just(b'x')], 0..40),
            gaps in proptest::collection::vec(0i64..3, 40),
            taus in proptest::collection::vec(0i64..4, 4),
            merge in prop_oneof![Just(Merge::Never), Just(Merge::Auto), Just(Merge::Always)],
            split in 0usize..40,
            evals in proptest::collection::vec(0i64..80, 0..4),
        ) {
            let ts: Vec<i64> = gaps.iter().take(chars.len()).scan(0, |t, g| { *t += g; Some(*t) }).collect();
            let mut evals = evals;
            evals.sort();
            let policies = [Policy::Any, Policy::Any, Policy::Next, Policy::Any];
            let dfas = [abc(), ac(), abc(), ac()];
            let q: Vec<_> = (0..4).map(|i| (dfas[i].clone(), taus[i], policies[i])).collect();
            let mut m = MultiExact::new(&q, &Limits::default(), merge).unwrap();
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
