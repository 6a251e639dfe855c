//! The summary's exact counters, generic over the exact number types.
//!
//! `g`: every windowed set over the retained elements, per automaton state (the reported
//! result); `a`: the active sets, whose first element a new element can still extend; `v`:
//! per retained element its part of `a` (non-zero only for active initiators, skip-till-any-
//! match only); `detected`: matches ever formed while processing. Everything but `detected`
//! can be rebuilt from the retained elements, which is how a [`Ladder`] widens them.
use super::neighbourhood::LocalWork;
use super::SummaryPolicy;
use crate::automaton::dfa::Dfa;
use crate::numbers::dual::Dual;
use crate::numbers::num::{Num, R};
use crate::automaton::semantics::Ev;
use crate::numbers::tier::Family;
use crate::exact::window::Window;
use num_bigint::BigUint;
use serde::{Deserialize, Serialize};
use std::marker::PhantomData;
use std::sync::Arc;

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Counters<N> {
    pub g: Vec<Dual<N>>,
    pub a: Vec<Dual<N>>,
    pub v: Vec<Dual<N>>,
    pub detected: Dual<N>,
    /// Working space of removing an element (not state).
    #[serde(skip)]
    pub(crate) work: LocalWork<N>,
    /// Working space of inserting one: the sets it forms (not state).
    #[serde(skip)]
    pub(crate) formed: Vec<Dual<N>>,
}

/// What rebuilding the counters reads: the retained elements as they were committed.
pub struct Retained<'a> {
    pub dfa: &'a Arc<Dfa>,
    pub tau: i64,
    pub elems: &'a [Ev],
    pub active_start: usize,
}

impl<N: Num> Counters<N> {
    pub fn empty(z: usize) -> Self {
        Counters { g: vec![Dual::zero(); z], a: vec![Dual::zero(); z], v: Vec::new(), detected: Dual::zero(), work: LocalWork::default(), formed: Vec::new() }
    }

    /// Recompute everything from the retained elements, with `detected` carried over.
    pub fn rebuild<P: SummaryPolicy>(r: &Retained<'_>, detected: &Dual<BigUint>) -> R<Self> {
        let g = Window::<N, P>::run(r.dfa.clone(), r.tau, r.elems)?.totals;
        let mut c = Counters { g, a: vec![Dual::zero(); r.dfa.n], v: Vec::new(), detected: Dual::from_big(detected)?, work: LocalWork::default(), formed: Vec::new() };
        P::rebuild_active(&mut c, r)?;
        Ok(c)
    }

    /// The same counters in exact type `M`, or [`crate::numbers::num::Overflow`] if a value
    /// does not fit it.
    pub fn convert<M: Num>(&self) -> R<Counters<M>> {
        let all = |xs: &[Dual<N>]| xs.iter().map(|d| Dual::from_big(&d.to_big())).collect::<R<Vec<_>>>();
        Ok(Counters { g: all(&self.g)?, a: all(&self.a)?, v: all(&self.v)?, detected: Dual::from_big(&self.detected.to_big())?, work: LocalWork::default(), formed: Vec::new() })
    }

    /// `(Σ_final g, Σ_final-sum g, Σ_other g)` and `detected`, as big integers.
    pub fn readout(&self) -> (Vec<Dual<BigUint>>, Dual<BigUint>) {
        (self.g.iter().map(|d| d.to_big()).collect(), self.detected.to_big())
    }
}

/// [`Counters`] as a family over the exact number types, for the promotion ladder.
pub struct CountersFamily<P>(PhantomData<P>);

impl<P: SummaryPolicy> Family for CountersFamily<P> {
    type At<N: Num> = Counters<N>;
    type Ctx<'a> = Retained<'a>;
    fn widen<N: Num, M: Num>(r: &Retained<'_>, part: &Counters<N>) -> R<Counters<M>> {
        Counters::rebuild::<P>(r, &part.detected.to_big())
    }
}
