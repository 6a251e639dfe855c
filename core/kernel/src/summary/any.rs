//! Skip-till-any-match and contiguity inside the summary: everything is maintained
//! incrementally. Both are "set" semantics (every subset that spells a word counts, under
//! [`Skip::Keep`](crate::automaton::dfa::Skip) or [`Skip::Kill`](crate::automaton::dfa::Skip)), so one implementation serves both.
//!
//! Inserting extends every active set (exact `a`, `v` and `g`; the estimates' active rows and
//! present benefits). Evicting `x` subtracts `L_x` from the exact counters and, from every
//! neighbour's present benefit, the matches it shares with `x` ([`neighbourhood`]); the
//! active local rows are recomputed lazily (one forward/backward sweep over the active
//! window, O(|A|·|Z|²)) only if an active set contained `x`.
use super::counters::{Counters, Retained};
use super::neighbourhood::{joint_matches_in, local_sets, local_sets_and_tail_in};
use super::{Summary, SummaryPolicy};
use crate::automaton::dfa::{Skip, NONE};
use super::estimates::Estimates;
use crate::numbers::dual::Dual;
use crate::engine::error::Error;
use crate::numbers::num::{Num, Scalar, R};
use crate::automaton::semantics::{expired, AnyMatch, Contiguous, Ev, Semantics};
use crate::automaton::step::{final_sum, gain_into_finals, identity, step_sized, takes, width, Dir, Layout};
use crate::numbers::xf::Real;
use num_bigint::BigUint;

/// Borrow the retained elements beside a mutable borrow of the exact counters.
macro_rules! retained {
    ($s:expr) => {
        Retained { dfa: &$s.dfa, tau: $s.cfg.tau, elems: &$s.elems, active_start: $s.active_start }
    };
}

/// The summary hooks of a set semantics (`$p`: [`AnyMatch`] or [`Contiguous`]).
macro_rules! set_policy {
    ($p:ty) => {
        impl SummaryPolicy for $p {
            const ACTIVE_ROWS: bool = true;
            const EVICTION_MATRICES: bool = true;
            fn rebuild_active<N: Num>(c: &mut Counters<N>, r: &Retained<'_>) -> R<()> {
                crate::with_width!(r.dfa.n, Z => rebuild_active::<$p, N, Z>(c, r))
            }
            fn insert(s: &mut Summary<Self>, ev: Ev) -> Result<(), Error> {
                crate::with_width!(s.kernel_width(), Z => insert::<Self, Z>(s, ev))
            }
            fn remove(s: &mut Summary<Self>, p: usize) -> Result<(), Error> {
                crate::with_width!(s.kernel_width(), Z => remove::<Self, Z>(s, p))
            }
            fn insert_at(s: &mut Summary<Self>, p: usize, ev: Ev) -> Result<(), Error> {
                insert_at(s, p, ev)
            }
            fn expire(s: &mut Summary<Self>, start: usize, end: usize) -> Result<(), Error> {
                expire(s, start, end)
            }
            fn refresh_estimates(s: &mut Summary<Self>) {
                crate::with_width!(s.kernel_width(), Z => refresh_estimates::<Self, Z>(s))
            }
            fn exact_locals(s: &Summary<Self>) -> Result<Vec<Dual<BigUint>>, Error> {
                exact_locals(s)
            }
        }
    };
}

set_policy!(AnyMatch);
set_policy!(Contiguous);

/// `v_i = (1+v_iε)·e_{δ(q0,c_i)} · P(i+1..n-1)` for active initiators, `a = Σ v_i`.
fn rebuild_active<P: Semantics, N: Num, const Z: usize>(c: &mut Counters<N>, r: &Retained<'_>) -> R<()> {
    let z = width::<Z>(r.dfa);
    let mut after = identity::<N>(z);
    c.a = vec![Dual::zero(); z];
    // Rows before the active window are zero already (only active initiators have one);
    // the buffer is kept so that inserting does not reallocate and copy all of it.
    c.v.resize(r.elems.len() * z, Dual::zero());
    debug_assert!(c.v[..r.active_start * z].iter().all(|d| d.is_zero()));
    let mut first = r.active_start;
    if P::SKIP == Skip::Kill && !r.elems.is_empty() {
        first = first.max(super::segment_start(r.elems, r.elems.len() - 1)); // earlier sets died at a break
    }
    // Only initiators have a row, and the sweep below rewrites each of theirs whole: the rest
    // are zero already, except rows before `first` (sets that died at a break).
    c.v[r.active_start * z..first * z].iter_mut().for_each(|d| *d = Dual::zero());
    sweep_active_rows::<P, N, Z>(c, r, first..r.elems.len(), &mut after, false)
}

/// The rows of the initiators in `range`, swept backward from `after` (the product over the
/// elements after the range; left as the product from the range's second element, as no
/// caller reads further): each initiator's row is `(1+v_iε)·e_{δ(q0,c_i)} · after` and `a`
/// gains it (and, with `replacing`, loses the row it replaces).
fn sweep_active_rows<P: Semantics, N: Num, const Z: usize>(c: &mut Counters<N>, r: &Retained<'_>, range: std::ops::Range<usize>, after: &mut [Dual<N>], replacing: bool) -> R<()> {
    let dfa = r.dfa;
    let z = width::<Z>(dfa);
    let mut scratch = Vec::new();
    let first = range.start;
    // Rows and elements walked together, backward (no index to check per cell).
    let rows = c.v[first * z..range.end * z].chunks_exact_mut(z);
    for ((i, ev), row) in range.zip(&r.elems[first..]).zip(rows).rev() {
        let q = dfa.init[ev.sym as usize];
        if q != NONE {
            for ((v, a), m) in row.iter_mut().zip(c.a.iter_mut()).zip(&after[q as usize * z..(q as usize + 1) * z]) {
                let d = m.take(ev.v)?;
                if replacing {
                    a.sub_assign(v)?;
                }
                a.add_assign(&d)?;
                *v = d;
            }
        }
        if i > first {
            step_sized::<_, Z>(dfa, ev, P::SKIP, after, Dir::Backward, Layout::Rows, &mut scratch)?;
        }
    }
    Ok(())
}

/// Recompute the active local rows if an eviction left them stale.
fn refresh_estimates<P: SummaryPolicy, const Z: usize>(s: &mut Summary<P>) {
    if s.est.al_dirty() {
        crate::with_est_taken!(s, e => recompute_active_locals::<P, _, Z>(s, e, None));
    }
}

fn insert<P: SummaryPolicy, const Z: usize>(s: &mut Summary<P>, ev: Ev) -> Result<(), Error> {
    // Before the exact counters move on: the estimates' new row reads them.
    if s.est.al_dirty() && extends_in_recomputation(s, &ev) {
        crate::with_est_taken!(s, e => {
            recompute_active_locals::<P, _, Z>(s, e, Some(&ev));
            push_formed(s, e, &ev);
        });
    } else {
        refresh_estimates::<P, Z>(s);
        crate::with_est_taken!(s, e => extend_estimates::<P, _, Z>(s, e, &ev));
    }
    let ctx = retained!(s);
    crate::promoting!(&mut s.exact, &ctx, |p| insert_exact::<P, _, Z>(p, &ctx, &ev))?;
    s.elems.push(ev);
    Ok(())
}

/// Every active set grows by `ev` (present benefits gain what it completes), and `ev` gets
/// its row: the sets it forms.
fn extend_estimates<P: SummaryPolicy, F: Real, const Z: usize>(s: &Summary<P>, est: &mut Estimates<F>, ev: &Ev) {
    let z = width::<Z>(&s.dfa);
    let mut scratch = Vec::new();
    let (start, n) = (s.active_start, s.elems.len());
    for (row, pres) in est.al[start * z..n * z].chunks_exact_mut(z).zip(&mut est.pres[start..n]) {
        if row.iter().all(|d| d.is_zero()) {
            continue; // no active set contains this element (many under contiguity)
        }
        let gained = gain_into_finals(&s.dfa, ev, P::SKIP, row).unwrap_or_default();
        let _ = step_sized::<_, Z>(&s.dfa, ev, P::SKIP, row, Dir::Forward, Layout::Vector, &mut scratch);
        pres.plus_assign(&gained);
    }
    push_formed(s, est, ev);
}

/// `ev` gets its row (the sets it forms) and its present benefit (the matches among them).
fn push_formed<P: SummaryPolicy, F: Real>(s: &Summary<P>, est: &mut Estimates<F>, ev: &Ev) {
    let mut formed = std::mem::take(&mut est.formed);
    s.formed_estimate(ev, &mut formed);
    est.push(final_sum(&s.dfa, &formed).unwrap_or_default(), &formed);
    est.formed = formed;
}

/// Whether the recomputation of the active local rows may take the new element `ev` on its
/// way ([`recompute_active_locals`] with `ahead`), instead of recomputing the rows and then
/// stepping each one by `ev`. The two associate the same sums differently, so they agree bit
/// for bit only where no value rounds: every value either way is a count (or a sum of
/// values) of active sets, so below the exact active counters' total after `ev` (each set
/// skips or takes it, and `ev` may start one). Under 2^52 every such integer, and every
/// partial sum of non-negative terms below it, is exact in `f64` and [`crate::numbers::xf::Xf`].
/// Only skip-till-any-match without negation: kills make the sweep's terms no longer parts
/// of the rows.
fn extends_in_recomputation<P: SummaryPolicy>(s: &Summary<P>, ev: &Ev) -> bool {
    const EXACT: f64 = (1u64 << 52) as f64;
    // (Counters past `u128` are past 2^52 too: no need to convert them to know.)
    if s.forced.unfused || P::SKIP != Skip::Keep || !s.dfa.negated.is_empty() || s.exact.bits().is_none_or(|b| b > 128) {
        return false;
    }
    let (sets, sums) = crate::on_tier!(&s.exact, |p| p.a.iter().fold((0.0, 0.0), |(c, v), d| {
        let x = d.to_real::<f64>();
        (c + x.c, v + x.s)
    }));
    // A float sum of |Z| terms is within a few ulps: the margin to 2^53 covers it.
    let after = (2.0 * sets + 1.0, 2.0 * sums + (sets + 1.0) * ev.v as f64);
    after.0 < EXACT && (!s.est.has_sums() || after.1 < EXACT)
}

fn remove<P: SummaryPolicy, const Z: usize>(s: &mut Summary<P>, p: usize) -> Result<(), Error> {
    let z = width::<Z>(&s.dfa);
    let start = s.active_start;
    refresh_estimates::<P, Z>(s);
    // An active element that no active set contains leaves the active counters as they
    // are (the estimates only ever add non-negative terms, so zero is exact zero).
    let touches_active = p >= start && crate::on_est!(&s.est, e => e.row(p, z).iter().any(|d| !d.c.is_zero()));
    let ctx = retained!(s);
    let rebuilt = crate::promoting!(&mut s.exact, &ctx, |part| remove_exact::<P, _, Z>(part, &ctx, p, touches_active))?;
    let (dfa, tau, elems) = (&s.dfa, s.cfg.tau, &s.elems);
    let sum = s.cfg.aggregate == super::Aggregate::Sum;
    crate::on_est!(&mut s.est, e => {
        if let Some(lo) = shift_joint::<P, _, Z>(dfa, tau, elems, e, p, false) {
            // The neighbours before the active window lost matches: the lowest may have moved.
            for k in (lo..(lo + e.joint.joint.len()).min(start)).filter(|&k| k != p) {
                let value = super::selection::picked(&e.pres[k], sum);
                e.lowered(k, value);
            }
        }
    });
    if touches_active {
        s.est.set_al_dirty(); // before the element leaves: its row need not be spliced out
    }
    s.drop_element(p);
    if touches_active && !rebuilt {
        let ctx = retained!(s);
        crate::promoting!(&mut s.exact, &ctx, |part| rebuild_active::<P, _, Z>(part, &ctx))?;
    }
    Ok(())
}

/// A late element goes in at position `p`: the exact counters gain the sets through it
/// (`L_x`, the same algebra as removal, read the other way), the active counters are rebuilt,
/// and every neighbour's present benefit gains the matches it shares with the new element.
fn insert_at<P: SummaryPolicy>(s: &mut Summary<P>, p: usize, ev: Ev) -> Result<(), Error> {
    let z = s.dfa.n;
    let mut with = s.elems.clone();
    with.insert(p, ev);
    // An element the window has already passed is not active (and sits before the active ones).
    let start = s.active_start + usize::from(expired(ev.t, s.now.unwrap_or(ev.t), s.cfg.tau));
    let after = Retained { dfa: &s.dfa, tau: s.cfg.tau, elems: &with, active_start: start };
    let ctx = retained!(s);
    crate::promoting!(&mut s.exact, &ctx, |part| insert_at_exact::<P, _>(part, &after, p))?;
    let (dfa, tau) = (&s.dfa, s.cfg.tau);
    crate::on_est!(&mut s.est, e => {
        let own = local_sets(dfa, tau, P::SKIP, &with, p).and_then(|l| final_sum(dfa, &l)).unwrap_or_default();
        e.pres.insert(p, own);
        e.inactive_min = None; // the neighbours gain: the lowest is no longer known
        e.al.splice(p * z..p * z, std::iter::repeat_n(Dual::zero(), z));
        let _ = shift_joint::<P, _, 0>(dfa, tau, &with, e, p, true);
    });
    s.elems = with;
    s.active_start = start;
    s.est.set_al_dirty();
    Ok(())
}

/// The sets through the new element `r.elems[p]` join `g` and `detected`; `v` gets its row
/// and the active counters are rebuilt over the elements with it.
fn insert_at_exact<P: SummaryPolicy, N: Num>(c: &mut Counters<N>, r: &Retained<'_>, p: usize) -> R<()> {
    let z = r.dfa.n;
    let local = local_sets::<N>(r.dfa, r.tau, P::SKIP, r.elems, p)?;
    for (g, l) in c.g.iter_mut().zip(&local) {
        g.add_assign(l)?;
    }
    c.v.splice(p * z..p * z, std::iter::repeat_n(Dual::zero(), z));
    rebuild_active::<P, N, 0>(c, r)?;
    c.detected = c.detected.add(&final_sum(r.dfa, &local)?)?;
    Ok(())
}

/// Every neighbour of `elems[p]` gains (`add`: it was just inserted) or loses (it is about to
/// leave) the complete matches it shares with it.
/// Returns the first neighbour's position when some moved (`est.joint.joint` holds what each
/// gained or lost).
fn shift_joint<P: SummaryPolicy, F: Real, const Z: usize>(dfa: &crate::automaton::dfa::Dfa, tau: i64, elems: &[Ev], est: &mut Estimates<F>, p: usize, add: bool) -> Option<usize> {
    // Joint matches are a subset of x's own: none to move when x completes none.
    if !(est.pres[p].c >= F::from_f64(0.5)) {
        return None;
    }
    let mut work = std::mem::take(&mut est.joint);
    let moved = joint_matches_in::<F, Z>(&mut work, dfa, tau, P::SKIP, elems, p).ok();
    if let Some(lo) = moved {
        for (j, d) in work.joint.iter().enumerate() {
            est.pres[lo + j] = if add { est.pres[lo + j].plus(d) } else { est.pres[lo + j].minus(d) };
        }
    }
    est.joint = work;
    moved
}

fn expire<P: SummaryPolicy>(s: &mut Summary<P>, start: usize, end: usize) -> Result<(), Error> {
    let z = s.dfa.n;
    let leaving_initiator = s.elems[start..end].iter().any(|e| s.dfa.starts(e.sym));
    let sum = s.cfg.aggregate == super::Aggregate::Sum;
    crate::on_est!(&mut s.est, e => {
        e.al[start * z..end * z].iter_mut().for_each(|d| *d = Dual::zero());
        // They join the elements before the active window, after every one of them.
        for k in start..end {
            let value = super::selection::picked(&e.pres[k], sum);
            e.lowered(k, value);
        }
    });
    if leaving_initiator {
        s.est.set_al_dirty();
        let ctx = retained!(s);
        crate::promoting!(&mut s.exact, &ctx, |p| (|| {
            for i in start..end {
                for j in 0..z {
                    let d = std::mem::take(&mut p.v[i * z + j]);
                    p.a[j].sub_assign(&d)?;
                }
            }
            Ok(())
        })())?;
    }
    s.active_start = end;
    Ok(())
}

/// Leave-one-out: the matches of all retained elements minus those without each one.
fn exact_locals<P: SummaryPolicy>(s: &Summary<P>) -> Result<Vec<Dual<BigUint>>, Error> {
    let total = |elems: &[Ev]| -> Result<Dual<BigUint>, Error> {
        let w = crate::exact::window::Window::<BigUint, P>::run(s.dfa.clone(), s.cfg.tau, elems).map_err(|_| Error::internal("big"))?;
        let (c, s, _) = crate::exact::window::split_totals(&s.dfa, &w.totals);
        Ok(Dual { c, s })
    };
    let all = total(&s.elems)?;
    (0..s.elems.len())
        .map(|i| all.sub(&total(&super::without(&s.dfa, &s.elems, i))?).map_err(|_| Error::internal("leave-one-out went negative")))
        .collect()
}

/// Extend every active set by `ev`. Only `detected` is committed last: everything else is
/// rebuilt from the retained elements if a counter overflows.
fn insert_exact<P: Semantics, N: Num, const Z: usize>(c: &mut Counters<N>, r: &Retained<'_>, ev: &Ev) -> R<()> {
    let dfa = r.dfa;
    let z = width::<Z>(dfa);
    let mut formed = std::mem::take(&mut c.formed);
    formed.resize(z, Dual::zero()); // every cell is set by `formed`
    P::formed(dfa, &c.a, ev, &mut formed)?;
    let mut found = Dual::zero();
    for (q, f) in formed.iter().enumerate() {
        c.g[q].add_assign(f)?;
        if dfa.finals[q] {
            found.add_assign(f)?;
        }
    }
    P::advance(dfa, &mut c.a, ev, &formed)?;
    let n = c.v.len() / z;
    let mut scratch = Vec::new();
    for row in c.v[r.active_start * z..].chunks_exact_mut(z) {
        if !row.iter().all(|d| d.is_zero()) {
            step_sized::<_, Z>(dfa, ev, P::SKIP, row, Dir::Forward, Layout::Vector, &mut scratch)?;
        }
    }
    c.v.extend(std::iter::repeat_n(Dual::zero(), z));
    let init = dfa.init[ev.sym as usize];
    if init != NONE {
        c.v[n * z + init as usize] = Dual::weight(ev.v);
    }
    c.detected = c.detected.add(&found)?;
    c.formed = formed;
    Ok(())
}

/// Subtract the sets containing element `p`; with `rebuild`, also recompute the active
/// counters over the elements without it where the sweep for `L_x` built the product over the
/// elements after it (returns whether it did; else the caller rebuilds them after the element
/// has left).
fn remove_exact<P: Semantics, N: Num, const Z: usize>(c: &mut Counters<N>, r: &Retained<'_>, p: usize, rebuild: bool) -> R<bool> {
    let z = width::<Z>(r.dfa);
    let mut work = std::mem::take(&mut c.work);
    // Without kills or negation, leaving merges no gap that changes an operator: the elements
    // after `p` keep theirs, and their product is the tail.
    let want_tail = rebuild && r.dfa.negated.is_empty() && p >= r.active_start;
    let rebuilt = local_sets_and_tail_in::<N, Z>(&mut work, r.dfa, r.tau, P::SKIP, r.elems, p, want_tail)?;
    for (g, l) in c.g.iter_mut().zip(&work.local) {
        g.sub_assign(l)?;
    }
    // Only active initiators have a non-zero row.
    let row = super::estimates::zero_row_to_drop(p, r.active_start);
    for (a, d) in c.a.iter_mut().zip(c.v.drain(row * z..(row + 1) * z)) {
        if rebuilt {
            a.sub_assign(&d)?; // `a` keeps summing the rows (see `rebuild_active_before`)
        }
    }
    if rebuilt {
        rebuild_active_before::<P, N, Z>(c, r, p, &mut work.tail)?;
    }
    c.work = work;
    Ok(rebuilt)
}

/// [`rebuild_active`] after element `p` of `r` left (`c.v` without its row), given `after`,
/// the product over the elements after it: the rows of the initiators after `p` hold no set
/// through it and stay; those before it are swept again from `after`.
///
/// `a` still sums every other row as it was (`p`'s row is out of it too): each row swept
/// again is taken out of it and the new one put in, so the rows after `p` are not read (an
/// evicted element tends to sit early in the active window). Every partial sum adds rows,
/// new or old, and a new row is at most its old one (a removal only removes sets), so no
/// step overflows where the old total did not.
fn rebuild_active_before<P: Semantics, N: Num, const Z: usize>(c: &mut Counters<N>, r: &Retained<'_>, p: usize, after: &mut [Dual<N>]) -> R<()> {
    sweep_active_rows::<P, N, Z>(c, r, r.active_start..p, after, true)
}

/// Active local counters of every active element: the sets inside the active window that
/// contain it, from one forward sweep of rows `e_{q0}·P(s..y−1)` and one backward product.
/// With `ahead` (see [`extends_in_recomputation`]), the rows as that next element extends
/// them, and each present benefit gains what it completes: the backward product starts from
/// its step `M_ev` instead of the identity, and carries `P(y+1..n−1)·c` beside it, `c` the
/// matches taking `ev` completes from each state.
fn recompute_active_locals<P: SummaryPolicy, F: Real, const Z: usize>(s: &Summary<P>, est: &mut Estimates<F>, ahead: Option<&Ev>) {
    est.al_dirty = false;
    let dfa = s.dfa.clone();
    let z = width::<Z>(&dfa);
    let n = s.elems.len();
    let mut start = s.active_start;
    if P::SKIP == Skip::Kill && n > 0 {
        // Only the sets of the trailing unbroken run are alive under contiguity.
        let run = super::segment_start(&s.elems, n - 1).max(start);
        est.al[start * z..run * z].iter_mut().for_each(|d| *d = Dual::zero());
        start = run;
    }
    // The sweeps' buffers are kept with the estimates: this runs after most evictions.
    let (mut fwd, mut b, mut scratch) = (std::mem::take(&mut est.fwd), std::mem::take(&mut est.back), std::mem::take(&mut est.scratch));
    let kill = P::SKIP == Skip::Kill;
    forward_rows::<P, F, Z>(s, start, &mut fwd, &mut est.fwd_over, &mut scratch);
    #[cfg(debug_assertions)]
    {
        let (mut fresh, mut over) = (Vec::new(), Vec::new());
        forward_rows::<P, F, Z>(s, start, &mut fresh, &mut over, &mut scratch);
        let written = (n.saturating_sub(1).max(start) - start + 1) * z; // (the row after the last is not)
        assert!(fresh[..written] == fwd[..written], "kept forward rows differ from a fresh sweep");
    }
    b.clear();
    b.resize(z * z, Dual::zero());
    for q in 0..z {
        b[q * z + q] = Dual::one();
    }
    let mut completes = std::mem::take(&mut est.completes);
    completes.clear();
    if let Some(ev) = ahead {
        let _ = step_sized::<_, Z>(&dfa, ev, P::SKIP, &mut b, Dir::Backward, Layout::Rows, &mut scratch);
        // Most elements complete nothing: then no benefit gains and nothing is carried.
        for &(q, q2) in takes(&dfa, ev, P::SKIP).iter() {
            if dfa.finals[q2 as usize] {
                completes.resize(z, Dual::zero());
                completes[q as usize] = completes[q as usize].plus(&Dual::weight(ev.v));
            }
        }
    }
    let gains = !completes.is_empty();
    // Rows and elements walked together, backward (no index to check per element).
    let rows = est.al[start * z..n * z].chunks_exact_mut(z).zip(fwd[..(n - start) * z].chunks_exact(z));
    for ((y, &ev), (row, before)) in (start..n).zip(&s.elems[start..n]).zip(rows).rev() {
        let w = Dual::<F>::weight(ev.v);
        // The first term is written, the others added (zero plus a term is the term, bit for
        // bit, so the row needs no clearing first unless no term comes).
        let mut written = false;
        let mut gain = |u: &Dual<F>, from: &[Dual<F>]| {
            if written {
                for (r, m) in row.iter_mut().zip(from) {
                    r.plus_assign(&u.times(m));
                }
            } else {
                for (r, m) in row.iter_mut().zip(from) {
                    r.set(&u.times(m));
                }
                written = true;
            }
        };
        let mut gained = Dual::<F>::zero();
        for &(q, q2) in takes(&dfa, &ev, P::SKIP).iter() {
            // (A zero `u` adds exact zeros: the product's cells are finite.)
            let u = before[q as usize].times(&w);
            gain(&u, &b[q2 as usize * z..(q2 as usize + 1) * z]);
            if gains {
                gained = gained.plus(&u.times(&completes[q2 as usize]));
            }
        }
        if gains {
            est.pres[y].plus_assign(&gained);
        }
        let q0 = dfa.init[ev.sym as usize];
        if kill && q0 != NONE {
            gain(&w, &b[q0 as usize * z..(q0 as usize + 1) * z]); // the sets that start at y
        }
        if !written {
            row.iter_mut().for_each(|d| *d = Dual::zero());
        }
        if y > start {
            let _ = step_sized::<_, Z>(&dfa, &ev, P::SKIP, &mut b, Dir::Backward, Layout::Rows, &mut scratch); // (the product from `start` is never read)
            if gains {
                let _ = step_sized::<_, Z>(&dfa, &ev, P::SKIP, &mut completes, Dir::Backward, Layout::Vector, &mut scratch);
            }
        }
    }
    (est.fwd, est.back, est.scratch, est.completes) = (fwd, b, scratch, completes);
}

/// `fwd[k]`: the sets over the active elements before `start + k` that may take the next
/// one, for every `k` up to the last element (the row after it is never read). Under
/// skip-till-any-match the empty set at the start state stands for the sets that start later
/// (it skips everything); under contiguity it would die at the first element it skips, so
/// there each set is started where its initiator is.
///
/// A row depends only on the elements before it, so the rows built last time over the same
/// leading elements (`over` lists them) are kept: after an eviction, those up to the evicted
/// element (which tends to sit early in the active window, so the saving is modest:
/// docs/ENGINE.md). Comparing the elements finds them whatever moved since.
fn forward_rows<P: SummaryPolicy, F: Real, const Z: usize>(s: &Summary<P>, start: usize, fwd: &mut Vec<Dual<F>>, over: &mut Vec<Ev>, scratch: &mut Vec<Dual<F>>) {
    let dfa = &s.dfa;
    let z = width::<Z>(dfa);
    let n = s.elems.len();
    let kill = P::SKIP == Skip::Kill;
    // Every row is written below (the first here, each next one from the one before), so
    // the buffer is only grown, never cleared.
    super::neighbourhood::at_least(fwd, (n - start + 1) * z);
    fwd[..z].iter_mut().for_each(|d| *d = Dual::zero());
    if !kill {
        fwd[dfa.start as usize] = Dual::one();
    }
    let swept = &s.elems[start..n.saturating_sub(1).max(start)];
    let kept = over.iter().zip(swept).take_while(|(a, b)| a == b).count();
    over.truncate(kept);
    over.extend_from_slice(&swept[kept..]);
    for (k, ev) in swept.iter().enumerate().skip(kept) {
        // Each row starts as a copy of the one before (cell by cell: |Z| is small, and a
        // library copy per row cost more than the copying).
        let (done, rest) = fwd.split_at_mut((k + 1) * z);
        let rest = &mut rest[..z];
        for (r, d) in rest.iter_mut().zip(&done[k * z..]) {
            r.set(d);
        }
        let _ = step_sized::<_, Z>(dfa, ev, P::SKIP, rest, Dir::Forward, Layout::Vector, scratch);
        let q0 = dfa.init[ev.sym as usize];
        if kill && q0 != NONE {
            rest[q0 as usize] = rest[q0 as usize].plus(&Dual::weight(ev.v));
        }
    }
}
