//! Selection semantics: how an element changes the sets (partial matches) before it.
//!
//! To add a semantics, implement [`Semantics`]: the step operator of one element as an
//! element of a monoid (`Agg`, with `identity`, `append`, `prepend`), what one initiator
//! contributes (`start`, `retract`), and what an element forms from the active sets
//! (`formed`, `advance`), and the decisions other layers ask of it (`SKIP`, `PLAIN`,
//! `edges`); then register it as a [`Policy`] variant and an arm of
//! [`with_semantics!`](crate::with_semantics). The exact window engine, its overflow promotion
//! and the summary's exact counters are generic over this trait; the other layers reach it
//! through a `Policy`, and only the engines' dispatch (`engine/mod.rs`) matches on one.
use crate::automaton::dfa::{Dfa, Skip, NONE};
use crate::numbers::dual::{Dual, DualX};
use crate::numbers::num::{Scalar, R};
use crate::automaton::step::{self, Dir, Layout};
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Ev {
    pub sym: u8,
    pub t: i64,
    pub v: u64,
    /// What lay between the previous element and this one without being an element: a bit
    /// per negated character that occurred, and [`GAP_BREAK`](crate::automaton::dfa::GAP_BREAK) if any
    /// event did. Sets pass the gap before they meet the element.
    pub gap: u32,
}

/// Whether an element at `old` has left the window of an element at `now` (no wrapping).
#[inline]
pub fn expired(old: i64, now: i64, tau: i64) -> bool {
    (now as i128) - (old as i128) > tau as i128
}

/// The run-time name of a semantics. Every decision that depends on it is a const or method of
/// [`Semantics`]; a `Policy` reaches them through [`with_semantics!`](crate::with_semantics),
/// the registration of every semantics (and the engines' variants in `engine/mod.rs`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Policy {
    /// Skip-till-any-match: every set may take or skip each element.
    Any,
    /// Skip-till-next-match: each initiator starts one run that takes every element it can.
    Next,
    /// Contiguity: a match's elements are consecutive events of the stream.
    Contiguous,
}

/// Runs `$body` with `$P` naming the [`Semantics`] type of `$policy`: the one place a
/// run-time policy becomes a type, where a new semantics is registered.
#[macro_export]
macro_rules! with_semantics {
    ($policy:expr, $P:ident => $body:expr) => {
        match $policy {
            $crate::automaton::semantics::Policy::Any => {
                type $P = $crate::automaton::semantics::AnyMatch;
                $body
            }
            $crate::automaton::semantics::Policy::Next => {
                type $P = $crate::automaton::semantics::NextMatch;
                $body
            }
            $crate::automaton::semantics::Policy::Contiguous => {
                type $P = $crate::automaton::semantics::Contiguous;
                $body
            }
        }
    };
}

impl Policy {
    /// Indexed like [`Policy::NAMES`] (the order of the variants).
    pub const ALL: [Policy; 3] = [Policy::Any, Policy::Next, Policy::Contiguous];
    pub const NAMES: [&'static str; 3] = ["any", "next", "contiguous"];
    pub fn parse(s: &str) -> Option<Policy> {
        Self::ALL.into_iter().find(|p| p.name() == s)
    }
    pub fn name(self) -> &'static str {
        Self::NAMES[self as usize]
    }
    /// [`Semantics::SKIP`] of this policy.
    pub fn skip(self) -> Skip {
        crate::with_semantics!(self, P => P::SKIP)
    }
    /// [`Semantics::PLAIN`] of this policy.
    pub fn plain(self) -> bool {
        crate::with_semantics!(self, P => P::PLAIN)
    }
    /// [`Semantics::edges`] under this policy.
    #[inline]
    pub fn edges(self, dfa: &Dfa, q: u32, ev: &Ev) -> (u32, u32) {
        crate::with_semantics!(self, P => P::edges(dfa, q, ev))
    }
}

pub trait Semantics: Clone + Copy + Default + Send + Sync + 'static {
    const POLICY: Policy;
    /// What happens to the sets that do not take an element.
    const SKIP: Skip;
    /// Whether every element's operator is `I + w·T_c` (before negation): each set takes or
    /// skips each element independently and nothing between two elements matters. Then a late
    /// element can be put in place, queries can share one product automaton, updates run in
    /// place over the symbol's transitions, and the adaptive look-ahead models loop growth.
    const PLAIN: bool;
    /// The product of the step operators of a range of elements.
    type Agg<S: Scalar>: Clone + Send + Sync;
    /// What one initiator contributes to the active vector, pushed to a stack boundary.
    type Cursor<S: Scalar>: Clone + Send + Sync;
    fn identity<S: Scalar>(dfa: &Dfa) -> Self::Agg<S>;
    /// `agg ← agg · step(ev)`; `scratch` is working space.
    fn append<S: Scalar>(dfa: &Dfa, agg: &mut Self::Agg<S>, ev: &Ev, scratch: &mut Self::Agg<S>) -> R<()>;
    /// `agg ← step(ev) · agg`.
    fn prepend<S: Scalar>(dfa: &Dfa, ev: &Ev, agg: &mut Self::Agg<S>, scratch: &mut Self::Agg<S>) -> R<()>;
    /// The cursor of initiator `ev` given the product of the elements after it; `spare` holds
    /// retracted cursors whose storage it may reuse.
    fn start<S: Scalar>(dfa: &Dfa, ev: &Ev, after: &Self::Agg<S>, spare: &mut Vec<Self::Cursor<S>>) -> R<Option<Self::Cursor<S>>>;
    /// `out -= cursor · back`.
    fn retract<S: Scalar>(dfa: &Dfa, cursor: &Self::Cursor<S>, back: &Self::Agg<S>, out: &mut [Dual<S>]) -> R<()>;
    /// The sets (matches, partial matches) `ev` forms per state, given the active vector `a`:
    /// every active set that takes it, and `{ev}` itself.
    fn formed<S: Scalar>(dfa: &Dfa, a: &[Dual<S>], ev: &Ev, formed: &mut [Dual<S>]) -> R<()> {
        Self::formed_from(dfa, a, ev, formed, Dual::clone)
    }
    /// [`Semantics::formed`] from active counters of another number type, each one read
    /// through `view` (only those of the states `ev` is taken from).
    #[inline(always)]
    fn formed_from<S: Scalar, T: Scalar>(dfa: &Dfa, a: &[Dual<T>], ev: &Ev, formed: &mut [Dual<S>], view: impl Fn(&Dual<T>) -> Dual<S>) -> R<()> {
        formed.iter_mut().for_each(|f| *f = Dual::zero());
        for &(q, q2) in step::takes(dfa, ev, Self::SKIP).iter() {
            if !a[q as usize].is_zero() {
                formed[q2 as usize].add_assign(&view(&a[q as usize]).take(ev.v)?)?;
            }
        }
        let init = dfa.init[ev.sym as usize];
        if init != NONE {
            formed[init as usize].add_assign(&Dual::weight(ev.v))?;
        }
        Ok(())
    }
    /// The edges of `ev` from state `q`: `(state after taking it, after skipping it)`, `NONE`
    /// where there is no such edge.
    #[inline]
    fn edges(dfa: &Dfa, q: u32, ev: &Ev) -> (u32, u32) {
        (dfa.take(q, ev.sym, ev.gap, Self::SKIP), dfa.pass(q, ev.sym, ev.gap, Self::SKIP))
    }
    /// Apply `ev` to the active vector, given what it formed.
    fn advance<S: Scalar>(dfa: &Dfa, a: &mut [Dual<S>], ev: &Ev, formed: &[Dual<S>]) -> R<()>;
    /// In expectation: what one set becomes when an element arrives, given the set as it is
    /// (`kept`) and moved along the element's transition (`None`: the state has none).
    fn expected_step(kept: &DualX, moved: Option<&DualX>) -> DualX;
}

/// `a ← a·(pass map) + formed`: the sets that skip `ev` go where [`Dfa::pass`] sends them.
fn pass_and_add<S: Scalar>(dfa: &Dfa, a: &mut [Dual<S>], ev: &Ev, skip: Skip, formed: &[Dual<S>], taken_move: bool) -> R<()> {
    let old: Vec<Dual<S>> = a.to_vec();
    a.iter_mut().for_each(|x| *x = Dual::zero());
    for (q, x) in old.iter().enumerate() {
        if x.is_zero() {
            continue;
        }
        let q = q as u32;
        // A run that takes the element moves on (skip-till-next-match) instead of staying.
        if taken_move && dfa.take(q, ev.sym, ev.gap, skip) != NONE {
            continue;
        }
        let to = dfa.pass(q, ev.sym, ev.gap, skip);
        if to != NONE {
            a[to as usize].add_assign(x)?;
        }
    }
    for (x, f) in a.iter_mut().zip(formed) {
        if !f.is_zero() {
            x.add_assign(f)?;
        }
    }
    Ok(())
}

/// Skip-till-any-match: the step is `I + (1+vε)·T_c`, so products are |Z|×|Z| matrices.
#[derive(Debug, Clone, Copy, Default)]
pub struct AnyMatch;

impl Semantics for AnyMatch {
    const POLICY: Policy = Policy::Any;
    const SKIP: Skip = Skip::Keep;
    const PLAIN: bool = true;
    type Agg<S: Scalar> = Vec<Dual<S>>; // |Z|×|Z| row-major
    type Cursor<S: Scalar> = Vec<Dual<S>>; // a row vector

    fn identity<S: Scalar>(dfa: &Dfa) -> Self::Agg<S> {
        step::identity(dfa.n)
    }

    fn append<S: Scalar>(dfa: &Dfa, agg: &mut Self::Agg<S>, ev: &Ev, scratch: &mut Self::Agg<S>) -> R<()> {
        step::step(dfa, ev, Skip::Keep, agg, Dir::Forward, Layout::Cols, scratch)
    }

    fn prepend<S: Scalar>(dfa: &Dfa, ev: &Ev, agg: &mut Self::Agg<S>, scratch: &mut Self::Agg<S>) -> R<()> {
        step::step(dfa, ev, Skip::Keep, agg, Dir::Backward, Layout::Rows, scratch)
    }

    fn start<S: Scalar>(dfa: &Dfa, ev: &Ev, after: &Self::Agg<S>, spare: &mut Vec<Self::Cursor<S>>) -> R<Option<Self::Cursor<S>>> {
        let q = dfa.init[ev.sym as usize];
        if q == NONE {
            return Ok(None);
        }
        let z = dfa.n;
        // A retracted cursor's storage, else one sized once: an allocation per initiator was
        // a tenth of the exact engine's instructions at τ = 100.
        let mut cursor = spare.pop().unwrap_or_else(|| Vec::with_capacity(z));
        cursor.clear();
        for d in &after[q as usize * z..(q as usize + 1) * z] {
            cursor.push(d.take(ev.v)?);
        }
        Ok(Some(cursor))
    }

    fn retract<S: Scalar>(dfa: &Dfa, cursor: &Self::Cursor<S>, back: &Self::Agg<S>, out: &mut [Dual<S>]) -> R<()> {
        let z = dfa.n;
        for (q, r) in cursor.iter().enumerate() {
            if r.is_zero() {
                continue;
            }
            for j in 0..z {
                let b = &back[q * z + j];
                if !b.is_zero() {
                    out[j].sub_assign(&r.mul(b)?)?;
                }
            }
        }
        Ok(())
    }

    fn advance<S: Scalar>(dfa: &Dfa, a: &mut [Dual<S>], ev: &Ev, formed: &[Dual<S>]) -> R<()> {
        if !dfa.plain(ev.sym, ev.gap, Skip::Keep) {
            return pass_and_add(dfa, a, ev, Skip::Keep, formed, false);
        }
        for (x, f) in a.iter_mut().zip(formed) {
            if !f.is_zero() {
                x.add_assign(f)?;
            }
        }
        Ok(())
    }

    fn expected_step(kept: &DualX, moved: Option<&DualX>) -> DualX {
        match moved {
            Some(m) => kept.plus(m), // the set is also kept without the element
            None => kept.clone(),
        }
    }
}

/// Products of the run semantics below are functions on states: per start state, the end
/// state (`NONE` once the run has died) and the weight of the elements taken.
type StateFn<S> = Vec<(u32, Dual<S>)>;

/// Where a run in state `q` goes on `ev` and whether it took it, or `None` if it dies.
type RunStep = fn(&Dfa, u32, &Ev) -> Option<(u32, bool)>;

fn fn_identity<S: Scalar>(dfa: &Dfa) -> StateFn<S> {
    (0..dfa.n as u32).map(|q| (q, Dual::one())).collect()
}

fn fn_append<S: Scalar>(dfa: &Dfa, agg: &mut StateFn<S>, ev: &Ev, run: RunStep) -> R<()> {
    for entry in agg.iter_mut() {
        if entry.0 == NONE {
            continue;
        }
        *entry = match run(dfa, entry.0, ev) {
            None => (NONE, Dual::zero()),
            Some((to, true)) => (to, entry.1.take(ev.v)?),
            Some((to, false)) => (to, entry.1.clone()),
        };
    }
    Ok(())
}

fn fn_prepend<S: Scalar>(dfa: &Dfa, ev: &Ev, agg: &mut StateFn<S>, old: &mut StateFn<S>, run: RunStep) -> R<()> {
    old.clone_from_slice(agg);
    for q in 0..dfa.n as u32 {
        agg[q as usize] = match run(dfa, q, ev) {
            None => (NONE, Dual::zero()),
            Some((to, took)) => {
                let (end, w) = &old[to as usize];
                if *end == NONE {
                    (NONE, Dual::zero())
                } else {
                    (*end, if took { w.take(ev.v)? } else { w.clone() })
                }
            }
        };
    }
    Ok(())
}

fn fn_start<S: Scalar>(dfa: &Dfa, ev: &Ev, after: &StateFn<S>) -> R<Option<(u32, Dual<S>)>> {
    let q = dfa.init[ev.sym as usize];
    if q == NONE {
        return Ok(None);
    }
    let (end, w) = &after[q as usize];
    Ok(Some((*end, w.take(ev.v)?)))
}

fn fn_retract<S: Scalar>(cursor: &(u32, Dual<S>), back: &StateFn<S>, out: &mut [Dual<S>]) -> R<()> {
    if cursor.0 == NONE {
        return Ok(());
    }
    let (end, w) = &back[cursor.0 as usize];
    if *end == NONE {
        return Ok(());
    }
    out[*end as usize].sub_assign(&cursor.1.mul(w)?)
}

/// The monoid methods of a run semantics (`$run`: where one run goes on one element).
macro_rules! state_fn_products {
    ($run:path) => {
        type Agg<S: Scalar> = StateFn<S>;
        type Cursor<S: Scalar> = (u32, Dual<S>);

        fn identity<S: Scalar>(dfa: &Dfa) -> Self::Agg<S> {
            fn_identity(dfa)
        }

        fn append<S: Scalar>(dfa: &Dfa, agg: &mut Self::Agg<S>, ev: &Ev, _scratch: &mut Self::Agg<S>) -> R<()> {
            fn_append(dfa, agg, ev, $run)
        }

        fn prepend<S: Scalar>(dfa: &Dfa, ev: &Ev, agg: &mut Self::Agg<S>, old: &mut Self::Agg<S>) -> R<()> {
            fn_prepend(dfa, ev, agg, old, $run)
        }

        fn start<S: Scalar>(dfa: &Dfa, ev: &Ev, after: &Self::Agg<S>, _spare: &mut Vec<Self::Cursor<S>>) -> R<Option<Self::Cursor<S>>> {
            fn_start(dfa, ev, after)
        }

        fn retract<S: Scalar>(_dfa: &Dfa, cursor: &Self::Cursor<S>, back: &Self::Agg<S>, out: &mut [Dual<S>]) -> R<()> {
            fn_retract(cursor, back, out)
        }
    };
}

/// Skip-till-next-match: each initiator starts one run that takes every later element with a
/// transition from its current state; negated characters filter it like any set.
#[derive(Debug, Clone, Copy, Default)]
pub struct NextMatch;

impl NextMatch {
    /// One element for one run.
    pub fn run_step(dfa: &Dfa, q: u32, ev: &Ev) -> Option<(u32, bool)> {
        let took = dfa.take(q, ev.sym, ev.gap, Skip::Keep);
        if took != NONE {
            return Some((took, true));
        }
        let stay = dfa.pass(q, ev.sym, ev.gap, Skip::Keep);
        (stay != NONE).then_some((stay, false))
    }
}

impl Semantics for NextMatch {
    const POLICY: Policy = Policy::Next;
    const SKIP: Skip = Skip::Keep;
    const PLAIN: bool = false;
    state_fn_products!(NextMatch::run_step);

    /// A run takes whenever it can: its one step.
    #[inline]
    fn edges(dfa: &Dfa, q: u32, ev: &Ev) -> (u32, u32) {
        match NextMatch::run_step(dfa, q, ev) {
            Some((to, true)) => (to, NONE),
            Some((to, false)) => (NONE, to),
            None => (NONE, NONE),
        }
    }

    fn advance<S: Scalar>(dfa: &Dfa, a: &mut [Dual<S>], ev: &Ev, formed: &[Dual<S>]) -> R<()> {
        if !dfa.plain(ev.sym, ev.gap, Skip::Keep) {
            return pass_and_add(dfa, a, ev, Skip::Keep, formed, true);
        }
        for &(q, _) in &dfa.by_sym[ev.sym as usize] {
            a[q as usize] = Dual::zero(); // the run moves on instead of being duplicated
        }
        for (x, f) in a.iter_mut().zip(formed) {
            if !f.is_zero() {
                x.add_assign(f)?;
            }
        }
        Ok(())
    }

    fn expected_step(kept: &DualX, moved: Option<&DualX>) -> DualX {
        moved.unwrap_or(kept).clone() // the run moves on, or stays
    }
}

/// Contiguity: every set must take the next event or die, so the step is `(1+vε)·T_c` and
/// products are functions on states, like runs.
#[derive(Debug, Clone, Copy, Default)]
pub struct Contiguous;

impl Contiguous {
    pub fn run_step(dfa: &Dfa, q: u32, ev: &Ev) -> Option<(u32, bool)> {
        let took = dfa.take(q, ev.sym, ev.gap, Skip::Kill);
        (took != NONE).then_some((took, true))
    }
}

impl Semantics for Contiguous {
    const POLICY: Policy = Policy::Contiguous;
    const SKIP: Skip = Skip::Kill;
    const PLAIN: bool = false;
    state_fn_products!(Contiguous::run_step);

    fn advance<S: Scalar>(_dfa: &Dfa, a: &mut [Dual<S>], _ev: &Ev, formed: &[Dual<S>]) -> R<()> {
        a.clone_from_slice(formed); // only the sets that took the element live on
        Ok(())
    }

    fn expected_step(_kept: &DualX, moved: Option<&DualX>) -> DualX {
        moved.cloned().unwrap_or_default()
    }
}

/// One skip-till-next-match run: the elements it took and where it ended.
pub struct Run<'a> {
    pub initiator: usize,
    /// Indices of the elements taken, the initiator first.
    pub taken: &'a [usize],
    /// For each taken element, whether the run was in a final state right after it.
    pub complete: &'a [bool],
    /// The state the run is in after the last element, `NONE` if it died.
    pub end: u32,
}

/// Walk every skip-till-next-match run over `elems` (each initiator starts one, which takes
/// every later element within its window that has a transition). The one definition of the
/// runs that exact local counters and selection estimates both read.
pub fn walk_runs(dfa: &Dfa, tau: i64, elems: &[Ev], mut visit: impl FnMut(Run<'_>)) {
    let (mut taken, mut complete) = (Vec::new(), Vec::new());
    for i in 0..elems.len() {
        let q0 = dfa.init[elems[i].sym as usize];
        if q0 == NONE {
            continue;
        }
        taken.clear();
        complete.clear();
        let mut state = q0;
        taken.push(i);
        complete.push(dfa.finals[q0 as usize]);
        for (j, e) in elems.iter().enumerate().skip(i + 1) {
            if expired(elems[i].t, e.t, tau) {
                break;
            }
            match NextMatch::run_step(dfa, state, e) {
                None => {
                    state = NONE; // a negated event killed the run
                    break;
                }
                Some((to, took)) => {
                    state = to;
                    if took {
                        taken.push(j);
                        complete.push(dfa.finals[to as usize]);
                    }
                }
            }
        }
        visit(Run { initiator: i, taken: &taken, complete: &complete, end: state });
    }
}

impl Run<'_> {
    /// Per taken element, the complete matches of this run containing it and their value sum:
    /// the element at position `k` is in every match the run completes at or after `k`.
    pub fn locals<S: Scalar>(&self, elems: &[Ev]) -> R<Vec<Dual<S>>> {
        let n = self.taken.len();
        let mut prefix_value = Vec::with_capacity(n);
        let mut v = S::zero();
        for &k in self.taken {
            v = v.add(&S::from_u64(elems[k].v))?;
            prefix_value.push(v.clone());
        }
        let mut out = vec![Dual::zero(); n];
        let mut acc = Dual::<S>::zero();
        for k in (0..n).rev() {
            if self.complete[k] {
                acc.add_assign(&Dual { c: S::from_u64(1), s: prefix_value[k].clone() })?;
            }
            out[k] = acc.clone();
        }
        Ok(out)
    }

    /// The value sum of everything the run took.
    pub fn value<S: Scalar>(&self, elems: &[Ev]) -> R<S> {
        let mut v = S::zero();
        for &k in self.taken {
            v = v.add(&S::from_u64(elems[k].v))?;
        }
        Ok(v)
    }
}
