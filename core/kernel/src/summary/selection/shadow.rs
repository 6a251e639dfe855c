//! A record of the stream the summary did not keep, for `adaptive`'s cluster-level decision
//! (docs/ENGINE.md, "Adaptive selection"): the counting DP over **every** arrival since an
//! anchor that restarts each `τ`, in extended-range floats. It holds |Z| numbers and the
//! largest count of complete matches any block reached: how much one window of this stream
//! can hold, which the retained count is judged against. Not saved with the summary (a
//! restored one starts a new record).
use super::super::{Aggregate, SummaryPolicy};
use crate::automaton::dfa::Dfa;
use crate::numbers::dual::Dual;
use crate::numbers::num::Scalar;
use crate::automaton::semantics::Ev;
use crate::automaton::step::final_sum;
use crate::numbers::xf::Xf;

#[derive(Debug, Clone, Default)]
pub struct Shadow {
    /// Where the current block starts (`None` before the first arrival).
    start: Option<i64>,
    /// Sets per automaton state formed by arrivals since `start` (all within `τ`).
    a: Vec<Dual<Xf>>,
    /// Complete matches formed since `start`.
    total: Xf,
    /// `log2` of the largest `total` seen (`-inf` before the first match).
    best: Option<f64>,
    /// Working space: the sets the arrival forms.
    formed: Vec<Dual<Xf>>,
}

impl Shadow {
    /// Count `ev` (in time order; a late element is left out).
    pub fn observe<P: SummaryPolicy>(&mut self, dfa: &Dfa, tau: i64, agg: Aggregate, ev: &Ev) {
        match self.start {
            Some(s) if ev.t < s => return,
            Some(s) if ev.t.saturating_sub(s) <= tau => {}
            _ => {
                self.start = Some(ev.t);
                self.a = vec![Dual::zero(); dfa.n];
                self.total = Xf::ZERO;
            }
        }
        let mut formed = std::mem::take(&mut self.formed);
        formed.resize(dfa.n, Dual::zero());
        // Extended-range floats never overflow.
        let _ = P::formed(dfa, &self.a, ev, &mut formed);
        let done = final_sum(dfa, &formed).unwrap_or_default();
        let done = if agg == Aggregate::Sum { done.s } else { done.c };
        if !done.is_zero() {
            self.total = self.total.add(&done).unwrap_or(self.total);
            let l = self.total.log2();
            self.best = Some(self.best.map_or(l, |b| b.max(l)));
        }
        let _ = P::advance(dfa, &mut self.a, ev, &formed);
        self.formed = formed;
    }

    /// `log2` of the most complete matches one block of the stream held, if any.
    pub fn best_log2(&self) -> Option<f64> {
        self.best
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::automaton::semantics::AnyMatch;
    use crate::exact::window::{tests::stream, ExactWindow};
    use num_traits::ToPrimitive;
    use proptest::prelude::*;
    use std::sync::Arc;

    fn exact_log2(dfa: &Arc<Dfa>, evs: &[Ev]) -> Option<f64> {
        let mut w = ExactWindow::<AnyMatch>::new(dfa.clone(), i64::MAX / 4);
        for e in evs {
            w.push(*e).unwrap();
        }
        let c = final_sum(dfa, &w.totals_big()).unwrap().c.to_f64().unwrap();
        (c > 0.0).then(|| c.log2())
    }

    proptest! {
        /// Within one block (span ≤ τ) the record is the exact count of the stream's matches.
        #[test]
        fn one_block_counts_every_match(evs in stream()) {
            let dfa = Arc::new(crate::automaton::dfa::tests::paper());
            let mut sh = Shadow::default();
            let span = evs.last().map_or(0, |e| e.t) - evs.first().map_or(0, |e| e.t);
            for e in &evs {
                sh.observe::<AnyMatch>(&dfa, span, Aggregate::Count, e);
            }
            match (sh.best_log2(), exact_log2(&dfa, &evs)) {
                (Some(a), Some(b)) => prop_assert!((a - b).abs() < 1e-9, "{a} vs {b}"),
                (a, b) => prop_assert_eq!(a, b),
            }
        }

        /// Blocks restart after τ: the record is the richest block, never a sum over them.
        #[test]
        fn blocks_restart_after_tau(a in stream(), b in stream()) {
            let dfa = Arc::new(crate::automaton::dfa::tests::paper());
            let tau = 1_000;
            let later: Vec<Ev> = b.iter().map(|e| Ev { t: e.t + 10 * tau, ..*e }).collect();
            let mut sh = Shadow::default();
            for e in a.iter().chain(&later) {
                sh.observe::<AnyMatch>(&dfa, tau, Aggregate::Count, e);
            }
            let want = [exact_log2(&dfa, &a), exact_log2(&dfa, &b)].into_iter().flatten().reduce(f64::max);
            match (sh.best_log2(), want) {
                (Some(x), Some(y)) => prop_assert!((x - y).abs() < 1e-9, "{x} vs {y}"),
                (x, y) => prop_assert_eq!(x, y),
            }
        }
    }
}
