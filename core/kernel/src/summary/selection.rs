//! Summary selection (§6.2): which retained element, if any, makes room for a new one.
//!
//! To add a strategy, implement [`Selector`] and give it a [`StrategyKind`] variant and name.
use super::{Aggregate, Summary, SummaryPolicy};
use crate::summary::benefit::MAX_STEPS;
use super::estimates::Estimates;
use crate::numbers::dual::Dual;
use crate::automaton::semantics::Ev;
use crate::automaton::step::final_sum;
use crate::numbers::num::Scalar;
use crate::numbers::xf::Real;
use rand::Rng;
use serde::{Deserialize, Serialize};

mod adaptive;
mod shadow;
pub use adaptive::{decide, horizon, loop_growth, Adaptive};
pub use shadow::Shadow;

/// Every arrival, in time order, before any decision on it: `adaptive` keeps its record of
/// the stream ([`Shadow`]); the other strategies keep nothing.
pub(crate) fn on_arrival<P: SummaryPolicy>(s: &mut Summary<P>, ev: &Ev) {
    if s.cfg.strategy == StrategyKind::Adaptive {
        s.shadow.observe::<P>(&s.dfa, s.cfg.tau, s.cfg.aggregate, ev);
    }
}

pub trait Selector {
    /// The element to evict for `ev`, or `None` to drop `ev` instead.
    fn choose<P: SummaryPolicy>(&self, s: &mut Summary<P>, ev: &Ev) -> Option<usize>;
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum StrategyKind {
    /// The paper's benefit: present matches plus the expected matches of partial sets.
    Suse,
    /// Present matches only.
    Present,
    /// Evict the oldest element.
    Fifo,
    /// Evict a uniformly random element (seeded).
    Random,
    /// Beyond the paper: expected matches over the elements the summary actually keeps, and
    /// realised matches traded for expected ones only in small amounts (docs/ENGINE.md).
    Adaptive,
}

impl StrategyKind {
    pub const NAMES: [&'static str; 5] = ["suse", "present", "fifo", "random", "adaptive"];

    pub fn parse(s: &str) -> Option<StrategyKind> {
        match s {
            "suse" => Some(StrategyKind::Suse),
            "present" => Some(StrategyKind::Present),
            "fifo" => Some(StrategyKind::Fifo),
            "random" => Some(StrategyKind::Random),
            "adaptive" => Some(StrategyKind::Adaptive),
            _ => None,
        }
    }

    pub fn name(self) -> &'static str {
        Self::NAMES[self as usize]
    }

    pub fn choose<P: SummaryPolicy>(self, s: &mut Summary<P>, ev: &Ev) -> Option<usize> {
        match self {
            StrategyKind::Suse => Benefit { expected: true }.choose(s, ev),
            StrategyKind::Present => Benefit { expected: false }.choose(s, ev),
            StrategyKind::Fifo => Fifo.choose(s, ev),
            StrategyKind::Random => Random.choose(s, ev),
            StrategyKind::Adaptive => Adaptive.choose(s, ev),
        }
    }

    /// The element to evict from a summary one over its size (after a late element went in
    /// at its place): the lowest benefit now, the oldest, or a random one.
    pub fn victim<P: SummaryPolicy>(self, s: &mut Summary<P>) -> usize {
        match self {
            StrategyKind::Fifo => 0,
            StrategyKind::Random => s.rng.gen_range(0..s.elems.len()),
            StrategyKind::Adaptive => Adaptive.lowest(s),
            _ => Benefit { expected: self == StrategyKind::Suse }.lowest(s),
        }
    }
}

pub struct Fifo;

impl Selector for Fifo {
    fn choose<P: SummaryPolicy>(&self, _s: &mut Summary<P>, _ev: &Ev) -> Option<usize> {
        Some(0)
    }
}

pub struct Random;

impl Selector for Random {
    fn choose<P: SummaryPolicy>(&self, s: &mut Summary<P>, _ev: &Ev) -> Option<usize> {
        Some(s.rng.gen_range(0..s.elems.len()))
    }
}

/// The element with the lowest benefit, if the new one beats it (Eq. 5): its present matches
/// plus, with `expected`, the mean of the expected matches its active sets form over the
/// remaining lifetimes of the oldest and newest active initiators.
pub struct Benefit {
    pub expected: bool,
}

impl Selector for Benefit {
    fn choose<P: SummaryPolicy>(&self, s: &mut Summary<P>, ev: &Ev) -> Option<usize> {
        prepare(s);
        crate::with_width!(s.kernel_width(), Z => crate::with_est_taken!(s, est => self.choose_in::<P, _, Z>(s, est, Some(ev), ev.t)))
    }
}

impl Benefit {
    /// The retained element with the lowest benefit at the latest time seen.
    fn lowest<P: SummaryPolicy>(&self, s: &mut Summary<P>) -> usize {
        prepare(s);
        let t = s.now.unwrap_or(i64::MIN);
        crate::with_width!(s.kernel_width(), Z => crate::with_est_taken!(s, est => self.choose_in::<P, _, Z>(s, est, None, t))).unwrap_or(0)
    }

    /// With a candidate `ev`: the element it should replace, if any. Without: the element
    /// with the lowest benefit at time `t`.
    fn choose_in<P: SummaryPolicy, F: Real, const Z: usize>(&self, s: &Summary<P>, est: &mut Estimates<F>, ev: Option<&Ev>, t: i64) -> Option<usize> {
        // Look ahead at most |S| elements: a set can only grow by elements the summary also
        // keeps, and beyond that the expectation (which ignores the capacity) overrates
        // partial matches against realised ones (see docs/ENGINE.md).
        let horizon = s.cfg.size.min(MAX_STEPS) as f64;
        let with = |pres: F, e: Option<F>| e.map_or(pres, |e| pres.add(&e).unwrap_or(pres));
        let sum = s.cfg.aggregate == Aggregate::Sum;
        // The elements before the active window have no expected part: their lowest is kept.
        let inactive = s.active_start;
        let mut best: Option<(usize, F)> = None;
        if inactive > 0 {
            let lowest = *est.inactive_min.get_or_insert_with(|| lowest_of(&est.pres[..inactive], sum));
            debug_assert_eq!(lowest, lowest_of(&est.pres[..inactive], sum), "the kept lowest before the active window");
            best = Some(lowest);
        }
        let (cand_pres, cand_e) = values::<P, F, Z>(s, est, ev, t, horizon, self.expected, inactive, |i, pres, e| {
            let b = with(pres, e);
            if best.is_none_or(|(_, bb)| b < bb) {
                best = Some((i, b));
            }
        });
        let cand_benefit = with(cand_pres, cand_e);
        match best {
            Some((i, _)) if ev.is_none() => Some(i),
            Some((i, b)) if cand_benefit > b => Some(i),
            _ => None,
        }
    }
}

/// The part of `d` selection ranks by: the sum with `sum` (SUM), else the count.
#[inline(always)]
pub(crate) fn picked<F: Real>(d: &Dual<F>, sum: bool) -> F {
    if sum { d.s } else { d.c }
}

/// The lowest `picked` value of `pres` (not empty) and its position, the first of equal ones.
fn lowest_of<F: Real>(pres: &[Dual<F>], sum: bool) -> (usize, F) {
    let mut best = (0, F::zero());
    for (i, d) in pres.iter().enumerate() {
        let v = picked(d, sum);
        if i == 0 || v < best.1 {
            best = (i, v);
        }
    }
    best
}

/// The count (or with `sum`, the sum) part of `Σ al[q]·h[q]`, for two coefficient vectors at
/// once (one pass over the row): per vector the same operations, in the same order, as that
/// part of the dual products' sum over the non-zero `al[q]`, without the other part (in `F`'s
/// plain float, the coefficients' type). Zero cells are not skipped: the coefficients are
/// finite, so their terms are exactly zero and change no bit, and the loop needs no branch.
#[inline(always)]
fn dots<F: Real>(al: &[Dual<F>], h1: &[Dual<F::Plain>], h2: &[Dual<F::Plain>], sum: bool) -> (F, F) {
    let term = |x: &Dual<F>, h: &Dual<F::Plain>| {
        let (c, s) = (x.c.plain(), x.s.plain());
        if sum { c.mul(&h.s).unwrap_or_default().add(&s.mul(&h.c).unwrap_or_default()) } else { c.mul(&h.c) }
    };
    let (mut acc1, mut acc2) = (F::Plain::zero(), F::Plain::zero());
    for ((x, h1), h2) in al.iter().zip(h1).zip(h2) {
        acc1 = acc1.add(&term(x, h1).unwrap_or_default()).unwrap_or_default();
        acc2 = acc2.add(&term(x, h2).unwrap_or_default()).unwrap_or_default();
    }
    (F::from_plain(acc1), F::from_plain(acc2))
}

/// `x.round().min(cap) as usize` for `x ≥ 0` (or NaN) and an integral `cap` below 2^52, without
/// the library call `round` is where the target has no rounding instruction (once per active
/// initiator and decision).
#[inline(always)]
pub(crate) fn rounded_steps(x: f64, cap: f64) -> usize {
    if !(x < cap) {
        return cap as usize; // NaN too: `min` takes the number
    }
    let whole = x as u64; // truncates; `x - whole` is exact below 2^52
    (whole + u64::from(x - whole as f64 >= 0.5)) as usize
}

/// Bring what [`values`] reads up to date: the active local rows, the expected-future
/// coefficients for the look-ahead, and the float width they need.
pub(crate) fn prepare<P: SummaryPolicy>(s: &mut Summary<P>) {
    P::refresh_estimates(s);
    if s.cfg.strategy == StrategyKind::Adaptive && s.coeffs.is_fresh() {
        // Decided once per set of coefficients (each estimator refresh, and after a restore).
        let window = (s.cfg.tau as f64) * s.estimator.rate();
        s.coeffs.set_loop_growth(adaptive::loop_growth(s.cfg.size as f64, window).filter(|_| P::PLAIN));
    }
    // Grow the cache only as far as a look-ahead can reach: `values` looks at most |S| steps
    // ahead, and a set's remaining lifetime is at most τ, so at most round(τ·rate) steps (the
    // same expression it rounds, monotone in the lifetime). Sparse streams need few steps.
    let reach = ((s.cfg.tau as f64).max(0.0) * s.estimator.rate()).round();
    let steps = if s.now.is_some() { (s.cfg.size.min(MAX_STEPS) as f64).min(reach) as usize } else { s.cfg.size.min(MAX_STEPS) };
    s.coeffs.h::<P>(&s.dfa, steps);
    s.fit_estimates(); // large coefficients need the wide floats
}

/// What selection reads, in the aggregate's unit, with expected sets looked ahead at most
/// `horizon` elements from time `t` (and only if `expected`): `visit(i, present, expected)`
/// for every retained element from position `from` (expected only for active ones after an
/// initiator; `from` is at most `s.active_start`), and the
/// candidate's `(present, expected)` returned (zero without a candidate): Eq. 5's terms.
pub(crate) fn values<P: SummaryPolicy, F: Real, const Z: usize>(
    s: &Summary<P>,
    est: &mut Estimates<F>,
    ev: Option<&Ev>,
    t: i64,
    horizon: f64,
    expected: bool,
    from: usize,
    mut visit: impl FnMut(usize, F, Option<F>),
) -> (F, Option<F>) {
    let dfa = &s.dfa;
    let tau = s.cfg.tau;
    let agg = s.cfg.aggregate;
    let sum = agg == Aggregate::Sum;
    let pick = |d: &Dual<F>| picked(d, sum);
    let rate = s.estimator.rate();
    let steps = |t_init: i64| -> usize {
        let remaining = (tau as f64) - (t.saturating_sub(t_init) as f64); // never wraps near ±2^63
        rounded_steps(remaining.max(0.0) * rate, horizon)
    };
    let is_init = |e: &Ev| dfa.starts(e.sym);
    let z = crate::automaton::step::width::<Z>(dfa);
    let active = &s.elems[s.active_start..];
    let oldest_init = active.iter().find(|e| is_init(e)).map(|e| e.t);
    let mut cand = std::mem::take(&mut est.formed);
    match ev {
        Some(ev) => s.formed_estimate(ev, &mut cand),
        None => {
            cand.clear();
            cand.resize(z, Dual::zero());
        }
    }
    let coeffs = &s.coeffs;
    let expect = |al: &[Dual<F>], h_old: &[Dual<F::Plain>], h_new: &[Dual<F::Plain>]| -> F {
        let (old, new) = dots(al, h_old, h_new, sum);
        old.add(&new).unwrap_or_default().half()
    };
    let cand_new = if ev.is_some_and(is_init) { Some(t) } else { active.iter().rev().find(|e| is_init(e)).map(|e| e.t) };
    let cand_pres = pick(&final_sum(dfa, &cand).unwrap_or_default());
    let cand_e = cand_new.filter(|_| expected).map(|t_new| expect(&cand, coeffs.cached::<F>(steps(oldest_init.unwrap_or(t_new))), coeffs.cached::<F>(steps(t_new))));
    // The look-ahead from the oldest active initiator is the same for every element, the one
    // from the latest changes only at an initiator.
    let h_old = oldest_init.map(|t_old| coeffs.cached::<F>(steps(t_old)));
    let mut h_new: Option<&[Dual<F::Plain>]> = None;
    for i in from..s.elems.len() {
        let mut e = None;
        if i >= s.active_start && expected {
            if is_init(&s.elems[i]) {
                h_new = Some(coeffs.cached::<F>(steps(s.elems[i].t)));
            }
            if let (Some(h_old), Some(h_new)) = (h_old, h_new) {
                e = Some(expect(&est.al[i * z..(i + 1) * z], h_old, h_new));
            }
        }
        visit(i, pick(&est.pres[i]), e);
    }
    est.formed = cand;
    (cand_pres, cand_e)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::numbers::xf::Xf;
    use proptest::prelude::*;

    /// What `dots` replaced: the dual products summed whole, then one part picked.
    fn dual_dot<F: Real>(al: &[Dual<F>], h: &[Dual<F>], sum: bool) -> F {
        let acc = al.iter().zip(h).filter(|(x, _)| !x.is_zero()).fold(Dual::zero(), |acc: Dual<F>, (x, h)| acc.plus(&x.times(h)));
        if sum { acc.s } else { acc.c }
    }

    fn duals<F: Real>(raw: &[(f64, f64)]) -> Vec<Dual<F>> {
        raw.iter().map(|&(c, s)| Dual { c: F::from_f64(c), s: F::from_f64(s) }).collect()
    }

    proptest! {
        #[test]
        fn rounded_steps_is_round_then_min(x in prop_oneof![0.0f64..70_000.0, (0u32..140_000).prop_map(|n| f64::from(n) / 2.0), Just(f64::NAN), Just(f64::INFINITY), Just(0.49999999999999994)], cap in 0u32..=65_536) {
            let cap = f64::from(cap);
            prop_assert_eq!(rounded_steps(x, cap), x.round().min(cap) as usize);
        }

        /// Bit for bit the same part, in `f64` and in `Xf`, sparse rows and huge values included.
        #[test]
        fn dots_are_the_picked_parts_of_the_dual_sums(
            pairs in proptest::collection::vec(((0u8..3, 0.0f64..1e6, 0.0f64..1e6), (0.0f64..1e300, 0.0f64..1e300)), 0..12),
            sum in any::<bool>(),
        ) {
            // A third of the row entries are zero (skipped), the rest any non-negative value.
            let al: Vec<(f64, f64)> = pairs.iter().map(|&((z, c, s), _)| if z == 0 { (0.0, 0.0) } else { (c, s) }).collect();
            let h: Vec<(f64, f64)> = pairs.iter().map(|&(_, h)| h).collect();
            let h2: Vec<(f64, f64)> = h.iter().rev().map(|&(c, s)| (s, c)).collect();
            let (al64, h64, h64b) = (duals::<f64>(&al), duals::<f64>(&h), duals::<f64>(&h2));
            let (one, two) = dots(&al64, &h64, &h64b, sum);
            prop_assert_eq!(one.to_bits(), dual_dot(&al64, &h64, sum).to_bits());
            prop_assert_eq!(two.to_bits(), dual_dot(&al64, &h64b, sum).to_bits());
            let (alx, hx, hxb) = (duals::<Xf>(&al), duals::<Xf>(&h), duals::<Xf>(&h2));
            prop_assert_eq!(dots(&alx, &hx, &hxb, sum), (dual_dot(&alx, &hx, sum), dual_dot(&alx, &hxb, sum)));
        }
    }
}
