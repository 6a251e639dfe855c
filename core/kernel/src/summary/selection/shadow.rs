//! A record of the stream the summary did not keep, for `adaptive`'s cluster-level decision
//! (docs/ENGINE.md, "Adaptive selection"): the counting DP over **every** arrival since an
//! anchor that restarts each `τ`, in extended-range floats. It holds |Z| numbers and the
//! largest count of complete matches any block reached: how much one window of this stream
//! can hold, which the retained count is judged against. Not saved with the summary (a
//! restored one starts a new record).
use super::super::{Aggregate, SummaryPolicy};
use crate::dfa::Dfa;
use crate::dual::Dual;
use crate::num::Scalar;
use crate::semantics::Ev;
use crate::step::final_sum;
use crate::xf::Xf;

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
        let mut formed = vec![Dual::zero(); dfa.n];
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
    }

    /// `log2` of the most complete matches one block of the stream held, if any.
    pub fn best_log2(&self) -> Option<f64> {
        self.best
    }
}
