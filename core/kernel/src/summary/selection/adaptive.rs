//! `adaptive`: selection that ranks by what an eviction does to the *logarithm* of the
//! retained count (docs/ENGINE.md, "Adaptive selection").
//!
//! `suse` adds realised and expected matches as equals. The quality measure, though, is the
//! retained count at evaluation times on a log scale, and the expected matches are an
//! arithmetic mean over an i.i.d. future the summary cannot keep. Here, with `C` the
//! retained matches:
//! * evicting `x` costs `log(C / (C − pres_x))` plus `log(1 + E_x / C)` for its expected sets,
//! * admitting the candidate gains `log(1 + (pres_c + E_c) / C)`,
//!
//! (all with `C + 1`, so an empty summary ranks like `suse`). Small terms are linear in the
//! values, so light elements rank as in `suse`; an element holding half the matches costs a
//! factor 2, which an expectation must pay in full, and one holding nearly all of them is
//! given up only for more than the whole result.
//!
//! And where the retained matches are *dead* (their first element expired) and far below what
//! one window of the stream held (the [`super::Shadow`] record), the summary is *stale*: the
//! dead cluster gives way to a live one ([`STALE_BITS`]).
use super::super::estimates::Estimates;
use super::super::{Aggregate, Summary, SummaryPolicy};
use super::{prepare, values};
use crate::summary::benefit::MAX_STEPS;
use crate::numbers::dual::Dual;
use crate::automaton::semantics::Ev;
use crate::numbers::num::Scalar;
use crate::automaton::step::final_sum;
use crate::numbers::xf::{Real, Xf};

pub struct Adaptive;

/// Look-ahead: `|S|` elements (as in `suse`) while a window holds at most `FULL_LOOK_AHEAD · |S|`
/// elements, then `|S| · (FULL_LOOK_AHEAD · |S| / (τ · rate))²`: a partial set completes only
/// through later elements the summary also keeps, and it keeps a share `|S| / (τ · rate)` of
/// them (measured against `2 · |S|² / (τ · rate)`: docs/RESULTS.md, "Beyond the paper").
pub const FULL_LOOK_AHEAD: f64 = 2.5;

/// The look-ahead in elements for a summary of `size` over a window of `window` elements.
pub fn horizon(size: f64, window: f64) -> f64 {
    let r = FULL_LOOK_AHEAD * size / window.max(1.0);
    if r >= 1.0 {
        size
    } else {
        (size * r * r).ceil()
    }
}

/// Where a window holds more than this many times `|S|` elements (the summary keeps under a
/// third of it), the look-ahead counts the growth of sets in a loop at [`LOOP_GROWTH`], not at
/// its mean ([`crate::summary::benefit::Coefficients::set_loop_growth`]): the mean is carried by rare
/// futures rich in the loop's letters, and such a summary meets the typical one, keeping a
/// share of it. Where it keeps more, the mean measured better (docs/RESULTS.md, "Beyond the
/// paper").
pub const GEOMETRIC_WINDOW: f64 = 3.25;

/// The exponent of a loop's growth there: sets grow by `2^(LOOP_GROWTH·p)` per step, `p` the
/// loop's letters' probability (the typical count of every element kept: exponent 1).
pub const LOOP_GROWTH: f64 = 0.5;

/// The loop growth for a summary of `size` over a window of `window` elements (`None`: the
/// mean).
pub fn loop_growth(size: f64, window: f64) -> Option<f64> {
    (window > GEOMETRIC_WINDOW * size).then_some(LOOP_GROWTH)
}

/// A summary is stale when its dead matches (first element expired: they can no longer grow)
/// outnumber its live ones by more than `2^STALE_BITS`, and the log2 of its count is below
/// what one window of the stream held ([`super::Shadow`]; capped at the `2^|S|` sets `|S|`
/// elements can form at most) by more than `STALE_BITS` and a share `STALE_SHARE` of it: a
/// window of this stream offers far more than the summary holds, and nothing it holds can
/// grow towards it. (Measured in docs/RESULTS.md, "Beyond the paper".)
pub const STALE_BITS: f64 = 10.0;
pub const STALE_SHARE: f64 = 0.15;

/// Only where a window holds more than this many times `|S|` elements: a summary that keeps
/// half of every window does not freeze on one cluster (and on the stocks, where the window
/// nearly fits, giving way measured worse: docs/RESULTS.md).
pub const STALE_WINDOW: f64 = 2.0;

/// While stale, a dead match weighs this much of a live one in the log ranking: the dead
/// cluster gives way, cheapest first, to the newcomers that build a live one.
pub const DEAD_WEIGHT: f64 = 0.3;

/// If the summary is stale (see [`STALE_BITS`]): its live matches (whose first element is
/// still active) + 1.
fn stale<P: SummaryPolicy>(s: &Summary<P>, c1: Xf, size: f64, window: f64) -> Option<Xf> {
    if window <= STALE_WINDOW * size {
        return None;
    }
    let reachable = s.shadow.best_log2()?.min(size);
    if c1.log2() >= reachable - STALE_BITS.max(STALE_SHARE * reachable) {
        return None;
    }
    let sum = s.cfg.aggregate == Aggregate::Sum;
    // The live matches: the final states of the exact active counters.
    let live: Xf = crate::on_tier!(&s.exact, |p| p.a.iter().zip(&s.dfa.finals).filter(|(_, f)| **f).fold(Xf::ZERO, |acc, (d, _)| {
        let d: Dual<Xf> = d.to_real();
        acc.add(if sum { &d.s } else { &d.c }).unwrap_or(acc)
    }));
    let l1 = live.add(&Xf::ONE).unwrap_or(Xf::ONE);
    (c1.log2() - l1.log2() > STALE_BITS).then_some(l1)
}

impl super::Selector for Adaptive {
    fn choose<P: SummaryPolicy>(&self, s: &mut Summary<P>, ev: &Ev) -> Option<usize> {
        prepare(s);
        crate::with_width!(s.kernel_width(), Z => crate::with_est_taken!(s, est => self.choose_in::<P, _, Z>(s, est, Some(ev), ev.t)))
    }
}

impl Adaptive {
    /// The retained element whose eviction costs the least now (a late element made one too
    /// many).
    pub fn lowest<P: SummaryPolicy>(&self, s: &mut Summary<P>) -> usize {
        prepare(s);
        let t = s.now.unwrap_or(i64::MIN);
        crate::with_width!(s.kernel_width(), Z => crate::with_est_taken!(s, est => self.choose_in::<P, _, Z>(s, est, None, t))).unwrap_or(0)
    }

    /// With a candidate `ev`: the element it should replace, if any. Without: the cheapest
    /// element at time `t`.
    fn choose_in<P: SummaryPolicy, F: Real, const Z: usize>(&self, s: &Summary<P>, est: &mut Estimates<F>, ev: Option<&Ev>, t: i64) -> Option<usize> {
        let size = s.cfg.size.min(MAX_STEPS) as f64;
        let window = (s.cfg.tau as f64) * s.estimator.rate();
        let horizon = horizon(size, window);
        let mut victims = Vec::with_capacity(s.elems.len());
        let (pres, e) = values::<P, F, Z>(s, est, ev, t, horizon, true, 0, |_, pres, e| victims.push((pres.to_xf(), e.map_or(Xf::ZERO, |e| e.to_xf()))));
        let cand_value = e.map_or(pres.to_xf(), |e| pres.to_xf().add(&e.to_xf()).unwrap_or(pres.to_xf()));
        // C + 1: the retained matches (exact), so the log terms are defined on an empty result.
        let pick = |d: &Dual<F>| super::picked(d, s.cfg.aggregate == Aggregate::Sum);
        let g: Vec<Dual<F>> = crate::on_tier!(&s.exact, |p| p.g.iter().map(|d| d.to_real()).collect());
        let c1 = pick(&final_sum(&s.dfa, &g).unwrap_or_default()).to_xf().add(&Xf::ONE).unwrap_or(Xf::ONE);
        if ev.is_some() {
            if let Some(l1) = stale(s, c1, size, window) {
                // Per element, its live matches: final states of its active local rows.
                let z = s.dfa.n;
                let live = (0..s.elems.len()).map(|i| if i < s.active_start { Xf::ZERO } else { pick(&final_sum(&s.dfa, &est.al[i * z..(i + 1) * z]).unwrap_or_default()).to_xf() });
                return decide_stale(c1, l1, cand_value, victims.into_iter().zip(live));
            }
        }
        match ev {
            Some(_) => decide(c1, cand_value, victims.into_iter()),
            None => cheapest(c1, victims.into_iter()).map(|(i, _)| i),
        }
    }
}

/// `x / c1` as `f64` (saturating): a plain division while both fit, their logarithms past that.
fn ratio(x: Xf, c1_f: f64, c1_log: f64) -> f64 {
    let xf = x.to_f64();
    if c1_f.is_finite() && xf.is_finite() {
        xf / c1_f
    } else {
        (x.log2() - c1_log).min(1e4).exp2()
    }
}

/// `ln(1 + r)`; below 1e-12 the series' first term (the same to 12 digits, and cheap: most
/// elements are light).
fn ln_1p(r: f64) -> f64 {
    if r < 1e-12 {
        r
    } else {
        r.ln_1p()
    }
}

/// The victim among `(present, expected)` per element, by the loss in `ln` of the retained
/// count `c1 − 1` (+1): `ln(c1 / (c1 − present)) + ln(1 + expected / c1)`, if the candidate's
/// gain `ln(1 + value / c1)` (value = present + expected) exceeds it.
pub fn decide(c1: Xf, value: Xf, victims: impl Iterator<Item = (Xf, Xf)>) -> Option<usize> {
    let gain = ln_1p(ratio(value, c1.to_f64(), c1.log2()));
    match cheapest(c1, victims) {
        Some((i, b)) if gain > b => Some(i),
        _ => None,
    }
}

/// `ln(base / (base − x))` (capped at everything, `ln base`).
fn loss(x: Xf, base: Xf) -> f64 {
    if x.is_zero() {
        return 0.0;
    }
    let (bf, bl) = (base.to_f64(), base.log2());
    let r = ratio(x, bf, bl);
    let all = bl * std::f64::consts::LN_2;
    if r < 1e-12 { r } else if r < 1.0 { (-(-r).ln_1p()).min(all) } else { all }
}

/// The victim in a stale summary: newcomers and live matches are judged on the log of the
/// live count `l1` (what can still grow), dead matches on the log of the whole `c1`, at
/// [`DEAD_WEIGHT`]. `victims`: `((present, expected), live part of present)` per element.
fn decide_stale(c1: Xf, l1: Xf, value: Xf, victims: impl Iterator<Item = ((Xf, Xf), Xf)>) -> Option<usize> {
    let gain = ln_1p(ratio(value, l1.to_f64(), l1.log2()));
    let mut best: Option<(usize, f64)> = None;
    for (i, ((pres, e), live)) in victims.enumerate() {
        let live = if live > pres { pres } else { live };
        let dead = pres.sub(&live).unwrap_or(Xf::ZERO);
        let cost = DEAD_WEIGHT * loss(dead, c1) + loss(live, l1) + if e.is_zero() { 0.0 } else { ln_1p(ratio(e, l1.to_f64(), l1.log2())) };
        if best.is_none_or(|(_, b)| cost < b) {
            best = Some((i, cost));
        }
    }
    match best {
        Some((i, b)) if gain > b => Some(i),
        _ => None,
    }
}

/// Bounds of the cost `ln(1 / (1 − r)) + ln(1 + re)` (the loss capped at `all`) without a
/// logarithm and, in the common case, without a division: `r ≤ ln(1 / (1 − r))`, which is at
/// most `r + r²` for `r ≤ 1/2` and `r / (1 − r)` above, and `re − re²/2 ≤ ln(1 + re) ≤ re`,
/// widened by a margin far above the rounding of either side.
fn lower_bound(r: f64, re: f64, all: f64) -> f64 {
    let x = r.min(all) + (re - 0.5 * re * re).max(0.0);
    x - 1e-9 * x.abs()
}

fn upper_bound(r: f64, re: f64, all: f64) -> f64 {
    let loss = if r < 1e-12 {
        r
    } else if r <= 0.5 {
        (r + r * r).min(all)
    } else if r < 1.0 {
        (r / (1.0 - r)).min(all)
    } else {
        all
    };
    let x = loss + re;
    x + 1e-9 * x.abs()
}

/// The element whose eviction loses the least of `ln` of the retained count, and that loss.
/// Only elements whose lower bound reaches the least upper bound (most are light, a few hold
/// large shares) have their cost computed: the choice is the same as computing every cost,
/// at a fraction of the `ln_1p` calls.
fn cheapest(c1: Xf, victims: impl Iterator<Item = (Xf, Xf)>) -> Option<(usize, f64)> {
    let (c1_f, c1_log) = (c1.to_f64(), c1.log2());
    // Estimates carry rounding: at most everything (`c1 − 1`) is lost.
    let all = c1_log * std::f64::consts::LN_2;
    let shares: Vec<(f64, f64, Xf, Xf)> = victims.map(|(pres, e)| (ratio(pres, c1_f, c1_log), if e.is_zero() { 0.0 } else { ratio(e, c1_f, c1_log) }, pres, e)).collect();
    let bound = shares.iter().map(|&(r, re, _, _)| upper_bound(r, re, all)).fold(f64::INFINITY, f64::min);
    let mut best: Option<(usize, f64, Xf)> = None;
    for (i, &(r, re, pres, e)) in shares.iter().enumerate() {
        if lower_bound(r, re, all) > best.map_or(bound, |(_, b, _)| b.min(bound)) {
            continue;
        }
        let loss = if r < 1e-12 { r } else if r < 1.0 { (-(-r).ln_1p()).min(all) } else { all };
        let cost = loss + if e.is_zero() { 0.0 } else { ln_1p(re) };
        // Ties (ratios below f64's range past 10^308) go by the plain sum, as in `suse`.
        let sum = || pres.add(&e).unwrap_or(pres);
        if best.is_none_or(|(_, b, bs)| cost < b || (cost == b && sum() < bs)) {
            best = Some((i, cost, sum()));
        }
    }
    best.map(|(i, b, _)| (i, b))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn x(v: f64) -> Xf {
        Xf::from_f64(v)
    }

    /// `suse`'s rule on the same numbers: the lowest `present + expected`, if the candidate
    /// beats it.
    fn linear(value: f64, victims: &[(f64, f64)]) -> Option<usize> {
        let (i, b) = victims.iter().enumerate().map(|(i, (p, e))| (i, p + e)).fold((0, f64::INFINITY), |a, b| if b.1 < a.1 { b } else { a });
        (value > b).then_some(i)
    }

    /// `cheapest` without the lower-bound skip: every element's cost computed.
    fn cheapest_full(c1: Xf, victims: &[(Xf, Xf)]) -> Option<(usize, f64)> {
        let (c1_f, c1_log) = (c1.to_f64(), c1.log2());
        let all = c1_log * std::f64::consts::LN_2;
        let mut best: Option<(usize, f64, Xf)> = None;
        for (i, &(pres, e)) in victims.iter().enumerate() {
            let r = ratio(pres, c1_f, c1_log);
            let loss = if r < 1e-12 { r } else if r < 1.0 { (-(-r).ln_1p()).min(all) } else { all };
            let cost = loss + if e.is_zero() { 0.0 } else { ln_1p(ratio(e, c1_f, c1_log)) };
            let sum = pres.add(&e).unwrap_or(pres);
            if best.is_none_or(|(_, b, bs)| cost < b || (cost == b && sum < bs)) {
                best = Some((i, cost, sum));
            }
        }
        best.map(|(i, b, _)| (i, b))
    }

    proptest! {
        /// The lower-bound skip changes no choice: the same victim and cost as computing every
        /// element's cost, over light, heavy and tied elements and counts past `f64`.
        #[test]
        fn skipping_by_the_bound_changes_nothing(
            c_exp in prop::sample::select(vec![0i64, 3, 20, 60, 1100, 2000]),
            victims in prop::collection::vec((0i64..6, 0u32..4, 0i64..6, 0u32..4), 1..40),
        ) {
            let c1 = Xf::from_parts(1.0, c_exp).add(&Xf::ONE).unwrap();
            // Shares of the count from 2^-40 to 2: light, heavy, past everything (rounding).
            // (Few distinct mantissas, so ties occur.)
            let share = |k: i64, f: u32| if k == 0 { Xf::ZERO } else { Xf::from_parts(0.5 + f as f64 / 4.0, c_exp - 8 * (k - 1) + 1) };
            let v: Vec<(Xf, Xf)> = victims.iter().map(|&(kp, fp, ke, fe)| (share(kp, fp), share(ke, fe))).collect();
            prop_assert_eq!(cheapest(c1, v.iter().copied()), cheapest_full(c1, &v));
        }

        /// Where every value is a small share of the retained matches, `adaptive` decides as
        /// `suse` does (log(1 + x) is linear there), so it differs only where much is at risk.
        #[test]
        fn small_stakes_rank_like_suse(value in 0u32..1000, victims in prop::collection::vec((0u32..1000, 0u32..1000), 1..8)) {
            let v: Vec<(f64, f64)> = victims.iter().map(|&(p, e)| (p as f64, e as f64)).collect();
            let sums: Vec<f64> = v.iter().map(|(p, e)| p + e).collect();
            let mut sorted = sums.clone();
            sorted.sort_by(f64::total_cmp);
            // Integer ties and a candidate equal to the minimum are decided by rounding.
            prop_assume!(sorted.windows(2).all(|w| w[0] != w[1]) && value as f64 != sorted[0]);
            let c1 = x(1e12);
            prop_assert_eq!(decide(c1, x(value as f64), v.iter().map(|&(p, e)| (x(p), x(e)))), linear(value as f64, &v));
        }

        /// Giving up a share `r` of the retained matches needs a candidate worth `r / (1 − r)`
        /// of them: half needs all of them, nine tenths nine times as many.
        #[test]
        fn large_shares_go_only_for_more(c in 1e3f64..1e300, r in 0.0f64..1.0, k in 0.0f64..20.0) {
            let c1 = x(c + 1.0);
            let p = r * c;
            let value = k * c;
            let evicted = decide(c1, x(value), [(x(p), Xf::ZERO)].into_iter()).is_some();
            let needed = p / (1.0 - p / (c + 1.0));
            if value < needed * (1.0 - 1e-9) {
                prop_assert!(!evicted, "gave up {p} of {c} for {value}");
            }
            if value > needed * (1.0 + 1e-9) {
                prop_assert!(evicted, "kept {p} of {c} against {value}");
            }
        }
    }

    /// Stale: a newcomer that doubles the live count evicts a dead element holding half of
    /// everything (dead matches weigh [`DEAD_WEIGHT`]), and the dead element goes before a
    /// live one of the same present matches; nothing goes for a newcomer worth nothing.
    #[test]
    fn a_stale_summary_gives_a_dead_cluster_up_for_a_live_one() {
        let (c1, l1) = (x(1e20 + 1.0), x(101.0));
        let dead = ((x(5e19), Xf::ZERO), Xf::ZERO);
        let live = ((x(50.0), Xf::ZERO), x(50.0));
        assert_eq!(decide_stale(c1, l1, x(101.0), [live, dead].into_iter()), Some(1));
        assert_eq!(decide_stale(c1, l1, Xf::ZERO, [live, dead].into_iter()), None);
        // Half of everything, dead, against a live share of half: the dead one goes.
        let dead_small = ((x(50.0), Xf::ZERO), Xf::ZERO);
        assert_eq!(decide_stale(c1, l1, x(1e3), [live, dead_small].into_iter()), Some(1));
        // Not stale, the same newcomer (worth 10^-18 of the retained count) can only replace
        // the light element: the dead cluster stays (the freeze).
        assert_eq!(decide(c1, x(101.0), [(x(50.0), Xf::ZERO), (x(5e19), Xf::ZERO)].into_iter()), Some(0));
    }

    /// The look-ahead is `|S|` while the window holds at most 2.5 |S| elements, then falls
    /// with the square of the share the summary keeps (a quarter of it at twice that window).
    #[test]
    fn look_ahead_falls_with_the_share_kept() {
        assert_eq!(horizon(100.0, 50.0), 100.0);
        assert_eq!(horizon(100.0, 250.0), 100.0);
        assert_eq!(horizon(100.0, 500.0), 25.0);
        assert_eq!(horizon(100.0, 1e9), 1.0);
        assert_eq!(horizon(100.0, 0.0), 100.0); // no rate yet: as `suse`
        let hs: Vec<f64> = (1..200).map(|w| horizon(100.0, w as f64 * 10.0)).collect();
        assert!(hs.windows(2).all(|p| p[1] <= p[0]));
    }

    /// Loops grow at half their typical rate only where a window holds more than 3¼ |S|
    /// elements; below, the mean.
    #[test]
    fn loops_grow_slower_only_where_the_summary_keeps_a_small_share() {
        assert_eq!(loop_growth(100.0, 250.0), None);
        assert_eq!(loop_growth(100.0, 325.0), None);
        assert_eq!(loop_growth(100.0, 330.0), Some(LOOP_GROWTH));
        assert_eq!(loop_growth(100.0, 500.0), Some(0.5));
        assert_eq!(loop_growth(100.0, 0.0), None); // no rate yet
    }

    /// Counts past `f64` (retained 2^2000) still rank, and an empty result ranks expectations.
    #[test]
    fn ranks_beyond_f64_and_on_an_empty_result() {
        let big = Xf::from_parts(1.0, 2000);
        let c1 = big.add(&Xf::ONE).unwrap();
        let half = Xf::from_parts(1.0, 1999);
        assert_eq!(decide(c1, half, [(half, Xf::ZERO), (Xf::ONE, Xf::ZERO)].into_iter()), Some(1));
        assert_eq!(decide(c1, Xf::from_parts(1.0, 1998), [(half, Xf::ZERO)].into_iter()), None);
        assert_eq!(decide(c1, Xf::from_parts(1.0, 2001), [(half, Xf::ZERO)].into_iter()), Some(0));
        assert_eq!(decide(Xf::ONE, x(3.0), [(Xf::ZERO, x(5.0)), (Xf::ZERO, x(2.0))].into_iter()), Some(1));
        assert_eq!(decide(Xf::ONE, x(1.0), [(Xf::ZERO, x(5.0)), (Xf::ZERO, x(2.0))].into_iter()), None);
    }
}
