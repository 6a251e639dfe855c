//! Exact sliding-window aggregation of subsequence matches.
//!
//! A match is a non-empty set of elements whose characters spell a word of the language and
//! whose first and last timestamps differ by at most the window. Counting by last element:
//! when element `e` arrives, the new matches are the active sets (first element still within
//! the window of `e`) extended by `e`, plus `{e}` itself. The engine keeps the vector `a` of
//! active sets per automaton state and must subtract, when an initiator `i` expires, the sets
//! that started at `i`: its row `e_{δ(q0,c_i)}` pushed through the product of the step
//! operators of every later element. Those suffix products are maintained with the two-stacks
//! method (front stack: products precomputed right-to-left at a flip; back stack: one running
//! product), so each event costs amortised O(|Z| · transitions) ring operations whatever the
//! window, instead of O(window) for per-initiator counters.
//!
//! The step operator depends on the selection policy ([`Algebra`]): skip-till-any-match
//! duplicates every set (`I + T_c`, a matrix), skip-till-next-match moves each run (a function
//! on states), so products are matrices or functions respectively.
use crate::dfa::{Dfa, NONE};
use crate::num::{Dual, Num, R};
use num_bigint::BigUint;
use serde::{Deserialize, Serialize};
use std::collections::VecDeque;
use std::sync::Arc;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Ev {
    pub sym: u8,
    pub t: i64,
    pub v: u64,
}

/// Whether element `old` has left the window of an element at time `now`.
#[inline]
pub fn expired(old: i64, now: i64, tau: i64) -> bool {
    (now as i128) - (old as i128) > tau as i128
}

/// The policy-specific algebra of step operators.
pub trait Algebra<N: Num>: Clone + Default + Send + Sync + 'static {
    /// The product of the step operators of a range of elements.
    type Agg: Clone + Send + Sync;
    /// What one initiator contributes to the active vector, pushed to a stack boundary.
    type Cursor: Clone + Send + Sync;
    fn identity(dfa: &Dfa) -> Self::Agg;
    /// `agg ← agg · step(ev)`; `scratch` is working space of the same shape.
    fn append(dfa: &Dfa, agg: &mut Self::Agg, ev: &Ev, scratch: &mut Self::Agg) -> R<()>;
    /// `agg ← step(ev) · agg`.
    fn prepend(dfa: &Dfa, ev: &Ev, agg: &mut Self::Agg, scratch: &mut Self::Agg) -> R<()>;
    /// The cursor of initiator `ev` given the product of the elements after it.
    fn start(dfa: &Dfa, ev: &Ev, after: &Self::Agg) -> R<Option<Self::Cursor>>;
    /// `out -= cursor · back`.
    fn retract(dfa: &Dfa, cursor: &Self::Cursor, back: &Self::Agg, out: &mut [Dual<N>]) -> R<()>;
    /// The sets (matches, partial matches) `ev` forms per state, given the active vector `a`.
    fn formed(dfa: &Dfa, a: &[Dual<N>], ev: &Ev, formed: &mut [Dual<N>]) -> R<()>;
    /// Apply `ev` to the active vector, given what it formed.
    fn advance(dfa: &Dfa, a: &mut [Dual<N>], ev: &Ev, formed: &[Dual<N>]) -> R<()>;
}

/// Skip-till-any-match: every set may take or skip each element; the step is `I + (1+vε)·T_c`.
#[derive(Debug, Clone, Copy, Default)]
pub struct AnyMatch;

impl<N: Num> Algebra<N> for AnyMatch {
    type Agg = Vec<Dual<N>>; // |Z|×|Z| row-major
    type Cursor = Vec<Dual<N>>; // a row vector

    fn identity(dfa: &Dfa) -> Self::Agg {
        let z = dfa.n;
        let mut m = vec![Dual::zero(); z * z];
        for q in 0..z {
            m[q * z + q] = Dual::one();
        }
        m
    }

    fn append(dfa: &Dfa, agg: &mut Self::Agg, ev: &Ev, old: &mut Self::Agg) -> R<()> {
        let z = dfa.n;
        if let Some(order) = &dfa.col_order[ev.sym as usize] {
            for &(q, q2) in order {
                for r in 0..z {
                    let add = agg[r * z + q as usize].take(ev.v)?;
                    agg[r * z + q2 as usize].add_assign(&add)?;
                }
            }
            return Ok(());
        }
        old.clone_from_slice(agg);
        for &(q, q2) in &dfa.by_sym[ev.sym as usize] {
            for r in 0..z {
                let add = old[r * z + q as usize].take(ev.v)?;
                agg[r * z + q2 as usize].add_assign(&add)?;
            }
        }
        Ok(())
    }

    fn prepend(dfa: &Dfa, ev: &Ev, agg: &mut Self::Agg, old: &mut Self::Agg) -> R<()> {
        let z = dfa.n;
        if let Some(order) = &dfa.row_order[ev.sym as usize] {
            for &(q, q2) in order {
                for col in 0..z {
                    let add = agg[q2 as usize * z + col].take(ev.v)?;
                    agg[q as usize * z + col].add_assign(&add)?;
                }
            }
            return Ok(());
        }
        old.clone_from_slice(agg);
        for &(q, q2) in &dfa.by_sym[ev.sym as usize] {
            for col in 0..z {
                let add = old[q2 as usize * z + col].take(ev.v)?;
                agg[q as usize * z + col].add_assign(&add)?;
            }
        }
        Ok(())
    }

    fn start(dfa: &Dfa, ev: &Ev, after: &Self::Agg) -> R<Option<Self::Cursor>> {
        let q = dfa.init[ev.sym as usize];
        if q == NONE {
            return Ok(None);
        }
        let z = dfa.n;
        let row = &after[q as usize * z..(q as usize + 1) * z];
        Ok(Some(row.iter().map(|d| d.take(ev.v)).collect::<R<Vec<_>>>()?))
    }

    fn retract(dfa: &Dfa, cursor: &Self::Cursor, back: &Self::Agg, out: &mut [Dual<N>]) -> R<()> {
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

    fn formed(dfa: &Dfa, a: &[Dual<N>], ev: &Ev, formed: &mut [Dual<N>]) -> R<()> {
        formed.iter_mut().for_each(|f| *f = Dual::zero());
        for &(q, q2) in &dfa.by_sym[ev.sym as usize] {
            formed[q2 as usize].add_assign(&a[q as usize].take(ev.v)?)?;
        }
        let init = dfa.init[ev.sym as usize];
        if init != NONE {
            formed[init as usize].add_assign(&Dual::weight(ev.v))?;
        }
        Ok(())
    }

    fn advance(_dfa: &Dfa, a: &mut [Dual<N>], _ev: &Ev, formed: &[Dual<N>]) -> R<()> {
        for (x, f) in a.iter_mut().zip(formed) {
            if !f.is_zero() {
                x.add_assign(f)?;
            }
        }
        Ok(())
    }
}

/// Skip-till-next-match: each initiator starts one run that takes every later element with a
/// transition from its current state. The step maps each state to one state (`δ(q,c)` or `q`).
#[derive(Debug, Clone, Copy, Default)]
pub struct NextMatch;

impl<N: Num> Algebra<N> for NextMatch {
    type Agg = Vec<(u32, Dual<N>)>; // per start state: (end state, weight of the taken elements)
    type Cursor = (u32, Dual<N>);

    fn identity(dfa: &Dfa) -> Self::Agg {
        (0..dfa.n as u32).map(|q| (q, Dual::one())).collect()
    }

    fn append(dfa: &Dfa, agg: &mut Self::Agg, ev: &Ev, _scratch: &mut Self::Agg) -> R<()> {
        for entry in agg.iter_mut() {
            let to = dfa.step(entry.0, ev.sym);
            if to != NONE {
                *entry = (to, entry.1.take(ev.v)?);
            }
        }
        Ok(())
    }

    fn prepend(dfa: &Dfa, ev: &Ev, agg: &mut Self::Agg, old: &mut Self::Agg) -> R<()> {
        old.clone_from_slice(agg);
        for q in 0..dfa.n as u32 {
            let to = dfa.step(q, ev.sym);
            agg[q as usize] = if to == NONE {
                old[q as usize].clone()
            } else {
                let (end, w) = &old[to as usize];
                (*end, w.take(ev.v)?)
            };
        }
        Ok(())
    }

    fn start(dfa: &Dfa, ev: &Ev, after: &Self::Agg) -> R<Option<Self::Cursor>> {
        let q = dfa.init[ev.sym as usize];
        if q == NONE {
            return Ok(None);
        }
        let (end, w) = &after[q as usize];
        Ok(Some((*end, w.take(ev.v)?)))
    }

    fn retract(_dfa: &Dfa, cursor: &Self::Cursor, back: &Self::Agg, out: &mut [Dual<N>]) -> R<()> {
        let (end, w) = &back[cursor.0 as usize];
        out[*end as usize].sub_assign(&cursor.1.mul(w)?)
    }

    fn formed(dfa: &Dfa, a: &[Dual<N>], ev: &Ev, formed: &mut [Dual<N>]) -> R<()> {
        <AnyMatch as Algebra<N>>::formed(dfa, a, ev, formed)
    }

    fn advance(dfa: &Dfa, a: &mut [Dual<N>], ev: &Ev, formed: &[Dual<N>]) -> R<()> {
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
}

/// Windowed aggregation over one stream. `totals[q]` counts the sets (matches and partial
/// matches) formed so far that end in state `q`, with the sums of their values.
#[derive(Clone)]
pub struct Window<N: Num, A: Algebra<N>> {
    pub dfa: Arc<Dfa>,
    pub tau: i64,
    front: VecDeque<(Ev, Option<A::Cursor>)>,
    back: Vec<Ev>,
    back_agg: A::Agg,
    scratch: A::Agg,
    pub a: Vec<Dual<N>>,
    pub totals: Vec<Dual<N>>,
    /// Sets formed by the last element, per state.
    pub formed: Vec<Dual<N>>,
    next_totals: Vec<Dual<N>>,
}

impl<N: Num, A: Algebra<N>> Window<N, A> {
    pub fn new(dfa: Arc<Dfa>, tau: i64) -> Self {
        let z = dfa.n;
        let back_agg = A::identity(&dfa);
        let scratch = back_agg.clone();
        let zero = vec![Dual::zero(); z];
        Window {
            dfa,
            tau,
            front: VecDeque::new(),
            back: Vec::new(),
            back_agg,
            scratch,
            a: zero.clone(),
            totals: zero.clone(),
            formed: zero.clone(),
            next_totals: zero,
        }
    }

    /// Raw events still inside the window, oldest first: all a rebuild needs.
    pub fn window_events(&self) -> Vec<Ev> {
        self.front.iter().map(|(e, _)| *e).chain(self.back.iter().copied()).collect()
    }

    fn oldest(&self) -> Option<&Ev> {
        self.front.front().map(|(e, _)| e).or_else(|| self.back.first())
    }

    fn flip(&mut self) -> R<()> {
        let mut agg = A::identity(&self.dfa);
        let mut items = Vec::with_capacity(self.back.len());
        for ev in self.back.iter().rev() {
            items.push((*ev, A::start(&self.dfa, ev, &agg)?));
            A::prepend(&self.dfa, ev, &mut agg, &mut self.scratch)?;
        }
        items.reverse();
        self.front = items.into();
        self.back.clear();
        self.back_agg = A::identity(&self.dfa);
        Ok(())
    }

    /// Drop the elements that a new element at time `now` can no longer share a match with.
    pub fn expire(&mut self, now: i64) -> R<()> {
        while let Some(t) = self.oldest().map(|e| e.t) {
            if !expired(t, now, self.tau) {
                break;
            }
            if self.front.is_empty() {
                self.flip()?;
            }
            let (_, cursor) = self.front.pop_front().expect("front is non-empty after a flip");
            if let Some(c) = cursor {
                // In place: after a failure the caller rebuilds from the raw window anyway.
                A::retract(&self.dfa, &c, &self.back_agg, &mut self.a)?;
            }
        }
        Ok(())
    }

    /// Process one element. On [`Overflow`] the committed totals and the raw window are intact,
    /// so the caller can rebuild over big integers and push the same element again.
    pub fn push(&mut self, ev: Ev) -> R<()> {
        self.expire(ev.t)?;
        A::formed(&self.dfa, &self.a, &ev, &mut self.formed)?;
        for ((n, t), f) in self.next_totals.iter_mut().zip(&self.totals).zip(&self.formed) {
            *n = t.add(f)?;
        }
        A::advance(&self.dfa, &mut self.a, &ev, &self.formed)?;
        A::append(&self.dfa, &mut self.back_agg, &ev, &mut self.scratch)?;
        // Commit: the totals and the raw window are the state a rebuild starts from.
        std::mem::swap(&mut self.totals, &mut self.next_totals);
        self.back.push(ev);
        Ok(())
    }

    /// Process elements without adding to the totals (used to rebuild the window).
    fn replay(&mut self, events: &[Ev]) -> R<()> {
        let saved = self.totals.clone();
        for ev in events {
            self.push(*ev)?;
        }
        self.totals = saved;
        Ok(())
    }

    pub fn to_big(&self) -> Window<BigUint, A>
    where
        A: Algebra<BigUint>,
    {
        let mut big = Window::<BigUint, A>::new(self.dfa.clone(), self.tau);
        big.replay(&self.window_events()).expect("big integers do not overflow");
        big.totals = self.totals.iter().map(|d| d.to_big()).collect();
        big
    }
}

/// A window that starts on `u128` and moves to big integers the first time a counter overflows.
#[derive(Clone)]
pub enum Promoting<A: Algebra<u128> + Algebra<BigUint>> {
    Small(Window<u128, A>),
    Big(Window<BigUint, A>),
}

impl<A: Algebra<u128> + Algebra<BigUint>> Promoting<A> {
    pub fn new(dfa: Arc<Dfa>, tau: i64) -> Self {
        Promoting::Small(Window::new(dfa, tau))
    }

    pub fn push(&mut self, ev: Ev) {
        if let Promoting::Small(w) = self {
            if w.push(ev).is_ok() {
                return;
            }
            let big = w.to_big();
            *self = Promoting::Big(big);
        }
        if let Promoting::Big(w) = self {
            w.push(ev).expect("big integers do not overflow");
        }
    }

    pub fn totals_big(&self) -> Vec<Dual<BigUint>> {
        match self {
            Promoting::Small(w) => w.totals.iter().map(|d| d.to_big()).collect(),
            Promoting::Big(w) => w.totals.clone(),
        }
    }

    pub fn dfa(&self) -> &Dfa {
        match self {
            Promoting::Small(w) => &w.dfa,
            Promoting::Big(w) => &w.dfa,
        }
    }

    pub fn is_big(&self) -> bool {
        matches!(self, Promoting::Big(_))
    }
}

/// `(count, sum)` over final states and the count over the other (live) states.
pub fn split_totals(dfa: &Dfa, totals: &[Dual<BigUint>]) -> (BigUint, BigUint, BigUint) {
    let (mut c, mut s, mut p) = (BigUint::default(), BigUint::default(), BigUint::default());
    for (q, d) in totals.iter().enumerate() {
        if dfa.finals[q] {
            c += &d.c;
            s += &d.s;
        } else {
            p += &d.c;
        }
    }
    (c, s, p)
}

/// Baseline for the benchmark: the same aggregation with one counter vector per active
/// initiator (O(window) work per element), on `u128` only. `None` if a counter overflows.
pub fn per_initiator_totals(dfa: &Dfa, tau: i64, events: &[Ev]) -> Option<Vec<Dual<u128>>> {
    let z = dfa.n;
    let mut runs: VecDeque<(i64, Vec<Dual<u128>>)> = VecDeque::new();
    let mut a = vec![Dual::<u128>::zero(); z];
    let mut totals = a.clone();
    let mut formed = a.clone();
    let mut old = a.clone();
    for ev in events {
        while runs.front().is_some_and(|(t, _)| expired(*t, ev.t, tau)) {
            let (_, v) = runs.pop_front()?;
            for (x, y) in a.iter_mut().zip(&v) {
                x.sub_assign(y).ok()?;
            }
        }
        <AnyMatch as Algebra<u128>>::formed(dfa, &a, ev, &mut formed).ok()?;
        for (t, f) in totals.iter_mut().zip(&formed) {
            t.add_assign(f).ok()?;
        }
        for (_, v) in runs.iter_mut() {
            old.clone_from_slice(v);
            for &(q, q2) in &dfa.by_sym[ev.sym as usize] {
                v[q2 as usize].add_assign(&old[q as usize].take(ev.v).ok()?).ok()?;
            }
        }
        <AnyMatch as Algebra<u128>>::advance(dfa, &mut a, ev, &formed).ok()?;
        let q = dfa.init[ev.sym as usize];
        if q != NONE {
            let mut v = vec![Dual::zero(); z];
            v[q as usize] = Dual::weight(ev.v);
            runs.push_back((ev.t, v));
        }
    }
    Some(totals)
}
