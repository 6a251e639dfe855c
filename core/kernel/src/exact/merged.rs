//! Queries with a common prefix counted over one merged automaton (A-Seq's prefix sharing).
//!
//! The product of several DFAs over the union of their letters is one DFA whose state is the
//! tuple of the queries' states; a set of elements is in one product state, and query `i`
//! counts it when component `i` is final (partial: alive and not final). Sets through the
//! common prefix are then one set of counters instead of one per query.
//!
//! The dense two-stacks engine costs O(|Z|²) per element, so a product of N queries would be
//! slower than N small engines. The product of prefix-sharing queries is block structured,
//! though: from a state of one query's suffix only that query's states are reachable. This
//! window is the two-stacks engine of [`crate::exact::window`] (skip-till-any-match, no negation)
//! with every loop restricted to reachable states, so it costs the structurally non-zero
//! cells: the prefix block once, plus each suffix.
use crate::automaton::dfa::{Dfa, DfaSpec, NONE};
use crate::numbers::dual::Dual;
use crate::numbers::num::{Num, Scalar, R};
use crate::automaton::semantics::{expired, AnyMatch, Ev, Semantics};
use crate::automaton::step;
use crate::numbers::tier::{Family, Ladder};
use num_bigint::BigUint;
use std::collections::{HashMap, VecDeque};
use std::sync::Arc;

/// A product automaton with, per state, the component state of every query (`NONE`: dead)
/// and the reachability the sparse loops follow.
pub struct Product {
    pub dfa: Arc<Dfa>,
    /// `parts[q][i]`: the state of query `i` in product state `q`, or `NONE`.
    pub parts: Vec<Vec<u32>>,
    /// States reachable from `q` (itself included), and the states that reach `q`.
    reach: Vec<Vec<u32>>,
    coreach: Vec<Vec<u32>>,
}

impl Product {
    /// The product of `dfas` (no negated characters), or None past `max_states` states.
    pub fn new(dfas: &[&Dfa], max_states: usize) -> Option<Product> {
        if dfas.is_empty() || dfas.iter().any(|d| !d.negated.is_empty()) {
            return None;
        }
        let mut letters: Vec<u8> = dfas.iter().flat_map(|d| d.alphabet.iter().copied()).collect();
        letters.sort_unstable();
        letters.dedup();
        let start: Vec<u32> = dfas.iter().map(|d| d.start).collect();
        let mut index: HashMap<Vec<u32>, u32> = HashMap::from([(start.clone(), 0)]);
        let mut parts = vec![start];
        let mut table: Vec<i64> = Vec::new();
        let mut q = 0;
        while q < parts.len() {
            for &b in &letters {
                let to: Vec<u32> = dfas
                    .iter()
                    .zip(&parts[q])
                    .map(|(d, &s)| {
                        let sym = d.lookup[b as usize];
                        if s == NONE || sym as usize >= d.k() {
                            NONE
                        } else {
                            d.next[s as usize * d.k() + sym as usize]
                        }
                    })
                    .collect();
                if to.iter().all(|&s| s == NONE) {
                    table.push(-1);
                    continue;
                }
                let next_id = parts.len() as u32;
                let id = *index.entry(to.clone()).or_insert(next_id);
                if id == next_id {
                    if parts.len() >= max_states {
                        return None;
                    }
                    parts.push(to);
                }
                table.push(id as i64);
            }
            q += 1;
        }
        let finals = parts.iter().map(|p| p.iter().zip(dfas).any(|(&s, d)| s != NONE && d.finals[s as usize])).collect();
        let spec = DfaSpec { n: parts.len(), alphabet: letters, negated: vec![], start: 0, finals, table };
        let dfa = Dfa::new(spec).ok()?;
        let (reach, coreach) = reachability(&dfa);
        Some(Product { dfa: Arc::new(dfa), parts, reach, coreach })
    }

    /// Structurally non-zero cells of a product matrix: what one element costs, roughly.
    pub fn cells(&self) -> usize {
        self.reach.iter().map(Vec::len).sum()
    }

    /// `(count, sum, partial count)` of query `i` from the per-state totals.
    pub fn split(&self, i: usize, totals: &[Dual<BigUint>], finals: &[bool]) -> (BigUint, BigUint, BigUint) {
        let (mut c, mut s, mut p) = (BigUint::default(), BigUint::default(), BigUint::default());
        for (q, d) in totals.iter().enumerate() {
            match self.parts[q][i] {
                NONE => {}
                own if finals[own as usize] => {
                    c += &d.c;
                    s += &d.s;
                }
                _ => p += &d.c,
            }
        }
        (c, s, p)
    }
}

/// Structurally non-zero cells of a single automaton's matrices (to compare with a product).
pub fn cells(dfa: &Dfa) -> usize {
    reachability(dfa).0.iter().map(Vec::len).sum()
}

fn reachability(dfa: &Dfa) -> (Vec<Vec<u32>>, Vec<Vec<u32>>) {
    let (n, k) = (dfa.n, dfa.k());
    let mut reach = Vec::with_capacity(n);
    for q in 0..n {
        let mut seen = vec![false; n];
        let mut stack = vec![q];
        seen[q] = true;
        while let Some(s) = stack.pop() {
            for c in 0..k {
                let t = dfa.next[s * k + c];
                if t != NONE && !seen[t as usize] {
                    seen[t as usize] = true;
                    stack.push(t as usize);
                }
            }
        }
        reach.push((0..n as u32).filter(|&s| seen[s as usize]).collect::<Vec<u32>>());
    }
    let mut coreach = vec![Vec::new(); n];
    for (q, r) in reach.iter().enumerate() {
        for &s in r {
            coreach[s as usize].push(q as u32);
        }
    }
    (reach, coreach)
}

/// The two-stacks window over a [`Product`], skip-till-any-match. Matrices are row-major,
/// `m[k * z + j]`: the sets from state `k` to state `j`.
#[derive(Clone)]
pub struct SparseWindow<S: Scalar> {
    pub prod: Arc<Product>,
    pub tau: i64,
    front: VecDeque<(Ev, Option<Vec<Dual<S>>>)>,
    back: Vec<Ev>,
    back_agg: Vec<Dual<S>>,
    spare: Vec<Dual<S>>, // the flip's working matrix, kept to spare an allocation
    scratch: Vec<Dual<S>>,
    a: Vec<Dual<S>>,
    pub totals: Vec<Dual<S>>,
    formed: Vec<Dual<S>>,
    next_totals: Vec<Dual<S>>,
}

impl<S: Scalar> SparseWindow<S> {
    pub fn new(prod: Arc<Product>, tau: i64) -> Self {
        let z = prod.dfa.n;
        let zero = vec![Dual::zero(); z];
        SparseWindow {
            back_agg: step::identity(z),
            spare: Vec::new(),
            scratch: Vec::new(),
            prod,
            tau,
            front: VecDeque::new(),
            back: Vec::new(),
            a: zero.clone(),
            totals: zero.clone(),
            formed: zero.clone(),
            next_totals: zero,
        }
    }

    fn window_events(&self) -> Vec<Ev> {
        self.front.iter().map(|(e, _)| *e).chain(self.back.iter().copied()).collect()
    }

    /// `m ← m · M_e`: column `δ(q,c)` gains `w ·` column `q`, over the rows that reach `q`.
    fn append(prod: &Product, m: &mut [Dual<S>], ev: &Ev, scratch: &mut Vec<Dual<S>>) -> R<()> {
        let (dfa, z, c) = (&prod.dfa, prod.dfa.n, ev.sym as usize);
        let cells = |q: u32, q2: u32| prod.coreach[q as usize].iter().map(move |&k| (k as usize * z + q as usize, k as usize * z + q2 as usize));
        Self::spread(m, scratch, dfa.col_order[c].as_deref(), &dfa.by_sym[c], ev.v, cells)
    }

    /// `m ← M_e · m`: row `q` gains `w ·` row `δ(q,c)`, over the states reachable from it.
    fn prepend(prod: &Product, ev: &Ev, m: &mut [Dual<S>], scratch: &mut Vec<Dual<S>>) -> R<()> {
        let (dfa, z, c) = (&prod.dfa, prod.dfa.n, ev.sym as usize);
        let cells = |q: u32, q2: u32| prod.reach[q2 as usize].iter().map(move |&j| (q2 as usize * z + j as usize, q as usize * z + j as usize));
        Self::spread(m, scratch, dfa.row_order[c].as_deref(), &dfa.by_sym[c], ev.v, cells)
    }

    /// `m[to] += w · m[from]` for the `(from, to)` cells of each transition `(q, δ(q,c))`:
    /// in place when `order` is a dependency-safe order of them, else reading a copy.
    fn spread<I: Iterator<Item = (usize, usize)>>(
        m: &mut [Dual<S>],
        scratch: &mut Vec<Dual<S>>,
        order: Option<&[(u32, u32)]>,
        trans: &[(u32, u32)],
        w: u64,
        cells: impl Fn(u32, u32) -> I,
    ) -> R<()> {
        let copy = order.is_none();
        if copy {
            scratch.clear();
            scratch.extend_from_slice(m);
        }
        for &(q, q2) in order.unwrap_or(trans) {
            for (from, to) in cells(q, q2) {
                let from = if copy { &scratch[from] } else { &m[from] };
                if from.is_zero() {
                    continue;
                }
                let add = from.take(w)?;
                m[to].add_assign(&add)?;
            }
        }
        Ok(())
    }

    /// `m ← I`, writing only the cells a product of transitions can make non-zero (`q` to a
    /// state reachable from it): a dense reset of the z² cells dominated sparse windows.
    fn reset_identity(prod: &Product, m: &mut Vec<Dual<S>>) {
        let z = prod.dfa.n;
        if m.len() != z * z {
            *m = step::identity(z);
            return;
        }
        for (q, reach) in prod.reach.iter().enumerate() {
            for &j in reach {
                m[q * z + j as usize] = Dual::zero();
            }
            m[q * z + q] = Dual::one();
        }
    }

    fn flip(&mut self) -> R<()> {
        let z = self.prod.dfa.n;
        // Reused buffers; after a failure `back_agg` is still the back stack's aggregate.
        let mut agg = std::mem::take(&mut self.spare);
        Self::reset_identity(&self.prod, &mut agg);
        let mut items = Vec::with_capacity(self.back.len());
        for ev in self.back.iter().rev() {
            let q = self.prod.dfa.init[ev.sym as usize];
            let cursor = if q == NONE {
                None
            } else {
                let row = &agg[q as usize * z..(q as usize + 1) * z];
                Some(row.iter().map(|d| d.take(ev.v)).collect::<R<Vec<_>>>()?)
            };
            items.push((*ev, cursor));
            Self::prepend(&self.prod, ev, &mut agg, &mut self.scratch)?;
        }
        items.reverse();
        self.front = items.into();
        self.back.clear();
        std::mem::swap(&mut self.back_agg, &mut agg);
        Self::reset_identity(&self.prod, &mut self.back_agg);
        self.spare = agg;
        Ok(())
    }

    fn expire(&mut self, now: i64) -> R<()> {
        let z = self.prod.dfa.n;
        while let Some(t) = self.front.front().map(|(e, _)| e.t).or_else(|| self.back.first().map(|e| e.t)) {
            if !expired(t, now, self.tau) {
                break;
            }
            if self.front.is_empty() {
                self.flip()?;
            }
            if let Some((_, Some(cursor))) = self.front.pop_front() {
                for (q, r) in cursor.iter().enumerate() {
                    if r.is_zero() {
                        continue;
                    }
                    for &j in &self.prod.reach[q] {
                        let b = &self.back_agg[q * z + j as usize];
                        if !b.is_zero() {
                            self.a[j as usize].sub_assign(&r.mul(b)?)?;
                        }
                    }
                }
            }
        }
        Ok(())
    }

    /// Process one element; on overflow the committed totals and raw window are intact.
    pub fn push(&mut self, ev: Ev) -> R<()> {
        self.expire(ev.t)?;
        let dfa = &self.prod.dfa;
        AnyMatch::formed(dfa, &self.a, &ev, &mut self.formed)?;
        for ((n, t), f) in self.next_totals.iter_mut().zip(&self.totals).zip(&self.formed) {
            *n = t.add(f)?;
        }
        AnyMatch::advance(dfa, &mut self.a, &ev, &self.formed)?;
        Self::append(&self.prod, &mut self.back_agg, &ev, &mut self.scratch)?;
        std::mem::swap(&mut self.totals, &mut self.next_totals);
        self.back.push(ev);
        Ok(())
    }

    fn run(prod: Arc<Product>, tau: i64, events: &[Ev]) -> R<Self> {
        let mut w = SparseWindow::new(prod, tau);
        for e in events {
            w.push(*e)?;
        }
        Ok(w)
    }
}

pub struct SparseFamily;

impl Family for SparseFamily {
    type At<N: Num> = SparseWindow<N>;
    type Ctx<'a> = ();
    fn widen<N: Num, M: Num>(_: &(), w: &SparseWindow<N>) -> R<SparseWindow<M>> {
        let mut wide = SparseWindow::<M>::run(w.prod.clone(), w.tau, &w.window_events())?;
        wide.totals = w.totals.iter().map(|d| Dual::from_big(&d.to_big())).collect::<R<_>>()?;
        Ok(wide)
    }
}

/// The merged exact engine: a sparse window that widens its numbers when they overflow.
#[derive(Clone)]
pub struct MergedExact {
    pub ladder: Ladder<SparseFamily>,
}

impl MergedExact {
    pub fn new(prod: Arc<Product>, tau: i64) -> Self {
        MergedExact { ladder: Ladder::U64(SparseWindow::new(prod, tau)) }
    }

    pub fn push(&mut self, ev: Ev) -> Result<(), crate::engine::error::Error> {
        crate::promoting!(&mut self.ladder, &(), |w| w.push(ev))
    }

    pub fn totals_big(&self) -> Vec<Dual<BigUint>> {
        crate::on_tier!(&self.ladder, |w| w.totals.iter().map(|d| d.to_big()).collect())
    }

    pub fn tier(&self) -> &'static str {
        self.ladder.tier()
    }
}
