//! Skip-till-next-match inside the summary: recomputed from the retained elements.
//!
//! Removing an element can re-route every later run, so instead of incremental algebra the
//! exact counters (keeping `detected`) and the estimates are rebuilt after each change:
//! O(|S|·|Z|) exact work and O(|S|·|A|) for the estimates. Correct and simple; slower.
use super::counters::{Counters, Retained};
use super::{Summary, SummaryPolicy};
use super::estimates::Estimates;
use crate::numbers::dual::Dual;
use crate::engine::error::Error;
use crate::numbers::num::{Num, R};
use crate::automaton::semantics::{expired, walk_runs, Ev, NextMatch, Semantics};
use crate::exact::window::Window;
use crate::numbers::xf::Real;
use num_bigint::BigUint;

impl SummaryPolicy for NextMatch {
    const ACTIVE_ROWS: bool = false;
    const EVICTION_MATRICES: bool = false;
    /// The runs still active at the clock of the last element, per state.
    fn rebuild_active<N: Num>(c: &mut Counters<N>, r: &Retained<'_>) -> R<()> {
        let from = r.active_start.min(r.elems.len());
        c.a = Window::<N, NextMatch>::run(r.dfa.clone(), r.tau, &r.elems[from..])?.a;
        c.v = Vec::new();
        Ok(())
    }

    fn insert(s: &mut Summary<Self>, ev: Ev) -> Result<(), Error> {
        let ctx = Retained { dfa: &s.dfa, tau: s.cfg.tau, elems: &s.elems, active_start: s.active_start };
        crate::promoting!(&mut s.exact, &ctx, |p| (|| {
            let mut formed = vec![Dual::zero(); ctx.dfa.n];
            NextMatch::formed(ctx.dfa, &p.a, &ev, &mut formed)?;
            let mut found = Dual::zero();
            for (q, f) in formed.iter().enumerate() {
                if ctx.dfa.finals[q] {
                    found.add_assign(f)?;
                }
            }
            p.detected = p.detected.add(&found)?;
            Ok(())
        })())?;
        s.elems.push(ev);
        let z = s.dfa.n;
        crate::on_est!(&mut s.est, e => e.push(Dual::zero(), &vec![Dual::zero(); z]));
        refresh(s)
    }

    fn remove(s: &mut Summary<Self>, p: usize) -> Result<(), Error> {
        s.drop_element(p);
        refresh(s)
    }

    fn expire(s: &mut Summary<Self>, _start: usize, end: usize) -> Result<(), Error> {
        s.active_start = end;
        refresh(s)
    }

    fn refresh_estimates(_s: &mut Summary<Self>) {}

    fn exact_locals(s: &Summary<Self>) -> Result<Vec<Dual<BigUint>>, Error> {
        let mut out = vec![Dual::<BigUint>::zero(); s.elems.len()];
        let mut err = None;
        walk_runs(&s.dfa, s.cfg.tau, &s.elems, |run| match run.locals::<BigUint>(&s.elems) {
            Ok(locals) => {
                for (k, l) in locals.iter().enumerate() {
                    out[run.taken[k]] = out[run.taken[k]].add(l).unwrap_or_default();
                }
            }
            Err(_) => err = Some(Error::internal("big integers overflowed")),
        });
        err.map_or(Ok(out), Err)
    }
}

/// Rebuild the exact counters at the narrowest tier that holds them (keeping `detected`),
/// then the estimates.
fn refresh(s: &mut Summary<NextMatch>) -> Result<(), Error> {
    let detected = s.readout().detected;
    let ctx = Retained { dfa: &s.dfa, tau: s.cfg.tau, elems: &s.elems, active_start: s.active_start };
    s.exact = crate::narrowest!(N => Counters::<N>::rebuild::<NextMatch>(&ctx, &detected));
    recompute_estimates(s);
    Ok(())
}

/// Present benefits and active local counters by simulating every run.
fn recompute_estimates(s: &mut Summary<NextMatch>) {
    let mut est = std::mem::take(&mut s.est);
    crate::on_est!(&mut est, e => simulate_runs(s, e));
    s.est = est;
}

fn simulate_runs<F: Real>(s: &Summary<NextMatch>, est: &mut Estimates<F>) {
    let z = s.dfa.n;
    let n = s.elems.len();
    let now = s.now.unwrap_or(i64::MIN);
    let (elems, tau) = (&s.elems, s.cfg.tau);
    est.pres = vec![Dual::zero(); n];
    est.al = vec![Dual::zero(); n * z];
    est.inactive_min = None;
    walk_runs(&s.dfa, tau, elems, |run| {
        // Estimates never overflow.
        if let Ok(locals) = run.locals::<F>(elems) {
            for (k, l) in locals.iter().enumerate() {
                est.pres[run.taken[k]] = est.pres[run.taken[k]].plus(l);
            }
        }
        if run.end != crate::automaton::dfa::NONE && !expired(elems[run.initiator].t, now, tau) {
            let value = run.value::<F>(elems).unwrap_or_default();
            for &k in run.taken {
                let cell = &mut est.al[k * z + run.end as usize];
                *cell = cell.plus(&Dual { c: F::ONE, s: value });
            }
        }
    });
}
