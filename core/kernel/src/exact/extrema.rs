//! MIN and MAX over the elements that belong to at least one match.
//!
//! Neither is invertible, so the count engine's expiry (which subtracts an initiator's sets)
//! cannot carry them. They run instead over the lattice [`Ext`] = (a path exists, smallest and
//! largest value taken on some such path), with `⊕` = union of paths and `⊗` = concatenation.
//! Both are associative and `⊗` distributes over `⊕`, so the two-stacks method composes them
//! without inverses: the front stack keeps, per element, the *union* of the cursors of the
//! initiators from it to the boundary, and an expiry just moves to the next entry.
//!
//! One element's operator is a relation on states: the sets that skip it (`pass`) and those
//! that take it (`take`), chosen by the policy; taking adds the element's value when its
//! letter is in the `of` mask. Products are dense |Z|×|Z| matrices of `Ext`.
use crate::engine::batch::Raw;
use crate::automaton::dfa::{Dfa, Skip, NONE};
use crate::engine::error::Error;
use crate::automaton::semantics::{expired, Ev, Policy};
use std::collections::VecDeque;
use std::sync::Arc;

/// Smallest and largest value over a union of paths; `ok`: at least one path exists.
/// `lo > hi` while no path took a masked element.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ext {
    pub ok: bool,
    pub lo: u64,
    pub hi: u64,
}

impl Ext {
    /// No path.
    pub const NONE: Ext = Ext { ok: false, lo: u64::MAX, hi: 0 };
    /// A path that took no value (the identity of `⊗`).
    pub const EMPTY: Ext = Ext { ok: true, lo: u64::MAX, hi: 0 };

    pub fn value(v: u64) -> Ext {
        Ext { ok: true, lo: v, hi: v }
    }

    /// `self ⊕= o`: either path.
    #[inline]
    pub fn join(&mut self, o: &Ext) {
        if o.ok {
            self.ok = true;
            self.lo = self.lo.min(o.lo);
            self.hi = self.hi.max(o.hi);
        }
    }

    /// `self ⊗ o`: a path of `self` followed by one of `o`.
    #[inline]
    pub fn then(&self, o: &Ext) -> Ext {
        if self.ok && o.ok {
            Ext { ok: true, lo: self.lo.min(o.lo), hi: self.hi.max(o.hi) }
        } else {
            Ext::NONE
        }
    }

    /// `(min, max)`, or `None` when no path took a masked value.
    pub fn range(&self) -> Option<(u64, u64)> {
        (self.ok && self.lo <= self.hi).then_some((self.lo, self.hi))
    }
}

/// Which letters' values are aggregated (`of=`); `None` in the engine means all of them.
pub fn check_mask(dfa: &Dfa, mask: &[bool]) -> Result<(), Error> {
    if mask.len() != dfa.k() {
        return Err(Error::input(format!("`of` mask has {} entries for an alphabet of {} letters", mask.len(), dfa.k())));
    }
    if !mask.iter().any(|&m| m) {
        return Err(Error::input("`of` must name at least one letter of the query"));
    }
    Ok(())
}

/// The windowed MIN/MAX engine (exact, any policy).
#[derive(Clone)]
pub struct Extrema {
    dfa: Arc<Dfa>,
    tau: i64,
    policy: Policy,
    mask: Vec<bool>,
    /// Per element: its time and the union of the cursors of the initiators from it to the
    /// stack boundary (pushed to the boundary).
    front: VecDeque<(i64, Vec<Ext>)>,
    back: Vec<Ev>,
    back_agg: Vec<Ext>,
    /// Sets started in the back stack, up to now.
    back_vec: Vec<Ext>,
    /// The oldest front entry's union pushed through `back_agg`.
    front_vec: Vec<Ext>,
    scratch: Vec<Ext>,
    /// Per state, the current element's edges (general path only).
    edges_buf: Vec<[(u32, bool); 2]>,
    vec_buf: Vec<Ext>,
    /// Over every match formed so far.
    pub total: Ext,
    pending_gap: u32,
}

impl Extrema {
    pub fn new(dfa: Arc<Dfa>, tau: i64, policy: Policy, mask: Option<Vec<bool>>) -> Result<Self, Error> {
        let mask = match mask {
            Some(m) => {
                check_mask(&dfa, &m)?;
                m
            }
            None => vec![true; dfa.k()],
        };
        let z = dfa.n;
        Ok(Extrema {
            tau,
            policy,
            mask,
            front: VecDeque::new(),
            back: Vec::new(),
            back_agg: identity(z),
            back_vec: vec![Ext::NONE; z],
            front_vec: vec![Ext::NONE; z],
            scratch: vec![Ext::NONE; z * z],
            edges_buf: vec![[(NONE, false); 2]; z],
            vec_buf: vec![Ext::NONE; z],
            total: Ext::NONE,
            pending_gap: 0,
            dfa,
        })
    }

    /// `(min, max)` over every match formed so far, `None` without one (or without a
    /// masked element in any).
    pub fn result(&self) -> Option<(u64, u64)> {
        self.total.range()
    }

    /// MIN/MAX over the windowed matches of `elems` (with their gaps), from scratch:
    /// O(n · |Z|²) for n elements.
    pub fn over(dfa: Arc<Dfa>, tau: i64, policy: Policy, mask: Option<Vec<bool>>, elems: &[Ev]) -> Result<Option<(u64, u64)>, Error> {
        let mut x = Extrema::new(dfa, tau, policy, mask)?;
        for e in elems {
            x.push(*e);
        }
        Ok(x.result())
    }

    /// Process one raw event (an element, or a gap event).
    pub fn feed(&mut self, raw: Raw) {
        match raw {
            Raw::Element(ev) => {
                let ev = Ev { gap: std::mem::take(&mut self.pending_gap), ..ev };
                self.push(ev)
            }
            Raw::Gap(bit) => self.pending_gap |= bit,
        }
    }

    /// The element's edges from state `q`: `(to, took)`, at most two.
    #[inline]
    fn edges(&self, q: u32, ev: &Ev) -> [(u32, bool); 2] {
        let (take, pass) = self.policy.edges(&self.dfa, q, ev);
        [(take, true), (pass, false)]
    }

    /// Whether the element's operator is `I ⊕ w·T_c`: then updates run in place over the
    /// symbol's transitions only, in the order the count engine uses (`Dfa::col_order`,
    /// `row_order`), instead of through a dense copy.
    #[inline]
    fn plain(&self, ev: &Ev) -> bool {
        self.policy.plain() && self.dfa.plain(ev.sym, ev.gap, Skip::Keep)
    }

    fn weight(&self, ev: &Ev) -> Ext {
        if self.mask[ev.sym as usize] {
            Ext::value(ev.v)
        } else {
            Ext::EMPTY
        }
    }

    /// The initiator's cursor: `{ev}` pushed through `after` (its state's row).
    fn cursor(&self, ev: &Ev, after: &[Ext]) -> Option<Vec<Ext>> {
        let q = self.dfa.init[ev.sym as usize];
        if q == NONE {
            return None;
        }
        let z = self.dfa.n;
        let w = self.weight(ev);
        Some(after[q as usize * z..(q as usize + 1) * z].iter().map(|x| w.then(x)).collect())
    }

    fn flip(&mut self) {
        let z = self.dfa.n;
        let mut agg = identity(z);
        let mut union = vec![Ext::NONE; z];
        let mut items = Vec::with_capacity(self.back.len());
        let mut scratch = std::mem::take(&mut self.scratch);
        for ev in self.back.iter().rev() {
            if let Some(c) = self.cursor(ev, &agg) {
                union.iter_mut().zip(&c).for_each(|(u, x)| u.join(x));
            }
            items.push((ev.t, union.clone()));
            // agg ← op(ev) · agg
            if self.plain(ev) {
                if let Some(order) = &self.dfa.row_order[ev.sym as usize] {
                    let w = self.weight(ev);
                    for &(q, to) in order {
                        let (q, to) = (q as usize, to as usize);
                        for r in 0..z {
                            let x = agg[to * z + r];
                            if x.ok {
                                agg[q * z + r].join(&w.then(&x));
                            }
                        }
                    }
                    continue;
                }
            }
            for q in 0..z {
                let row = &mut scratch[q * z..(q + 1) * z];
                row.iter_mut().for_each(|x| *x = Ext::NONE);
                let w = self.weight(ev);
                for (to, took) in self.edges(q as u32, ev) {
                    if to == NONE {
                        continue;
                    }
                    for (r, x) in row.iter_mut().zip(&agg[to as usize * z..(to as usize + 1) * z]) {
                        r.join(&if took { w.then(x) } else { *x });
                    }
                }
            }
            std::mem::swap(&mut agg, &mut scratch);
        }
        self.scratch = scratch;
        items.reverse();
        self.front = items.into();
        self.back.clear();
        self.back_agg = identity(z);
        self.back_vec.iter_mut().for_each(|x| *x = Ext::NONE);
        self.front_vec = self.front.front().map_or_else(|| vec![Ext::NONE; z], |(_, u)| u.clone());
    }

    fn expire(&mut self, now: i64) {
        let mut popped = false;
        loop {
            let oldest = self.front.front().map(|(t, _)| *t).or_else(|| self.back.first().map(|e| e.t));
            match oldest {
                Some(t) if expired(t, now, self.tau) => {}
                _ => break,
            }
            if self.front.is_empty() {
                self.flip();
            }
            self.front.pop_front();
            popped = true;
        }
        if popped {
            // The next entry's union, pushed through the back stack: O(|Z|²).
            let z = self.dfa.n;
            self.front_vec.iter_mut().for_each(|x| *x = Ext::NONE);
            if let Some((_, u)) = self.front.front() {
                for (p, x) in u.iter().enumerate() {
                    if !x.ok {
                        continue;
                    }
                    for (f, b) in self.front_vec.iter_mut().zip(&self.back_agg[p * z..(p + 1) * z]) {
                        f.join(&x.then(b));
                    }
                }
            }
        }
    }

    /// Process one element (its gap already filled in).
    pub fn push(&mut self, ev: Ev) {
        self.expire(ev.t);
        let w = self.weight(&ev);
        let init = self.dfa.init[ev.sym as usize];
        if init != NONE && self.dfa.finals[init as usize] {
            self.total.join(&w); // {ev} itself
        }
        let dfa = Arc::clone(&self.dfa); // borrowed beside `self`
        match dfa.col_order[ev.sym as usize].as_deref() {
            Some(order) if self.plain(&ev) => self.push_plain(&ev, w, order),
            _ => self.push_general(&ev, w),
        }
        if init != NONE {
            self.back_vec[init as usize].join(&w);
        }
        self.back.push(ev);
    }

    /// `I ⊕ w·T_c` in place, over the symbol's transitions in a dependency-safe order.
    fn push_plain(&mut self, ev: &Ev, w: Ext, order: &[(u32, u32)]) {
        let z = self.dfa.n;
        // The matches `ev` completes: active sets that take it into a final state.
        for &(q, to) in &self.dfa.by_sym[ev.sym as usize] {
            if self.dfa.finals[to as usize] {
                let mut a = self.front_vec[q as usize];
                a.join(&self.back_vec[q as usize]);
                if a.ok {
                    self.total.join(&a.then(&w));
                }
            }
        }
        for &(q, to) in order {
            let (q, to) = (q as usize, to as usize);
            for v in [&mut self.front_vec, &mut self.back_vec] {
                if v[q].ok {
                    let x = v[q].then(&w);
                    v[to].join(&x);
                }
            }
            for p in 0..z {
                let x = self.back_agg[p * z + q];
                if x.ok {
                    self.back_agg[p * z + to].join(&x.then(&w));
                }
            }
        }
    }

    /// Any operator (negation filters, skip-till-next-match, contiguity), through copies.
    fn push_general(&mut self, ev: &Ev, w: Ext) {
        let z = self.dfa.n;
        for q in 0..z {
            self.edges_buf[q] = self.edges(q as u32, ev);
        }
        for q in 0..z {
            let mut a = self.front_vec[q];
            a.join(&self.back_vec[q]);
            let (to, _) = self.edges_buf[q][0];
            if a.ok && to != NONE && self.dfa.finals[to as usize] {
                self.total.join(&a.then(&w));
            }
        }
        let step = |edges: &[[(u32, bool); 2]], v: &mut Vec<Ext>, out: &mut Vec<Ext>| {
            out.iter_mut().for_each(|x| *x = Ext::NONE);
            for (q, x) in v.iter().enumerate() {
                if !x.ok {
                    continue;
                }
                for &(to, took) in &edges[q] {
                    if to != NONE {
                        out[to as usize].join(&if took { x.then(&w) } else { *x });
                    }
                }
            }
            std::mem::swap(v, out);
        };
        step(&self.edges_buf, &mut self.front_vec, &mut self.vec_buf);
        step(&self.edges_buf, &mut self.back_vec, &mut self.vec_buf);
        // back_agg ← back_agg · op(ev), column by column through the edges.
        self.scratch.iter_mut().for_each(|x| *x = Ext::NONE);
        for q in 0..z {
            for (to, took) in self.edges_buf[q] {
                if to == NONE {
                    continue;
                }
                for p in 0..z {
                    let x = self.back_agg[p * z + q];
                    if x.ok {
                        self.scratch[p * z + to as usize].join(&if took { x.then(&w) } else { x });
                    }
                }
            }
        }
        std::mem::swap(&mut self.back_agg, &mut self.scratch);
    }
}

fn identity(z: usize) -> Vec<Ext> {
    let mut m = vec![Ext::NONE; z * z];
    for q in 0..z {
        m[q * z + q] = Ext::EMPTY;
    }
    m
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::automaton::dfa::tests::{letter_negated, negation, paper};
    use crate::automaton::dfa::UNKNOWN;
    use crate::exact::window::tests::{elements, RawEv};
    use proptest::prelude::*;

    /// Brute force over index subsets of the raw stream, as `window::tests::brute_sets` and
    /// the run walk define matches: min/max over the masked elements of every match.
    fn brute(dfa: &Dfa, tau: i64, policy: Policy, mask: &[bool], raw: &[RawEv]) -> Option<(u64, u64)> {
        let elems = elements(dfa, raw);
        let mut in_match = vec![false; elems.len()];
        match policy {
            Policy::Next => crate::automaton::semantics::walk_runs(dfa, tau, &elems, |run| {
                if let Some(last) = run.complete.iter().rposition(|&c| c) {
                    for &k in &run.taken[..=last] {
                        in_match[k] = true;
                    }
                }
            }),
            _ => {
                let skip = if policy == Policy::Contiguous { Skip::Kill } else { Skip::Keep };
                for mask_bits in 1u32..(1 << elems.len()) {
                    let idx: Vec<usize> = (0..elems.len()).filter(|i| mask_bits >> i & 1 == 1).collect();
                    if expired(elems[idx[0]].t, elems[*idx.last().unwrap()].t, tau) {
                        continue;
                    }
                    let mut q = dfa.init[elems[idx[0]].sym as usize];
                    let mut prev = idx[0];
                    for &j in &idx[1..] {
                        if q == NONE {
                            break;
                        }
                        // Skipped elements between prev and j: the set passes them.
                        for e in &elems[prev + 1..j] {
                            q = dfa.pass(q, e.sym, e.gap, skip);
                            if q == NONE {
                                break;
                            }
                        }
                        if q != NONE {
                            q = dfa.take(q, elems[j].sym, elems[j].gap, skip);
                        }
                        prev = j;
                    }
                    if q != NONE && dfa.finals[q as usize] {
                        idx.iter().for_each(|&i| in_match[i] = true);
                    }
                }
            }
        }
        let vals: Vec<u64> = (0..elems.len()).filter(|&i| in_match[i] && mask[elems[i].sym as usize]).map(|i| elems[i].v).collect();
        Some((*vals.iter().min()?, *vals.iter().max()?))
    }

    fn run(dfa: &Dfa, tau: i64, policy: Policy, mask: &[bool], raw: &[RawEv]) -> Option<(u64, u64)> {
        let mut x = Extrema::new(Arc::new(dfa.clone()), tau, policy, Some(mask.to_vec())).unwrap();
        for &(b, t, v) in raw {
            x.feed(Raw::classify(dfa, b, t, v));
        }
        x.result()
    }

    fn stream(bytes: &'static [u8]) -> impl Strategy<Value = Vec<RawEv>> {
        prop::collection::vec((prop::sample::select(bytes), 0i64..3, 0u64..50), 0..11).prop_map(|v| {
            let mut t = 0;
            v.into_iter()
                .map(|(b, dt, val)| {
                    t += dt;
                    (b, t, val)
                })
                .collect()
        })
    }

    fn check(dfa: &Dfa, raw: &[RawEv], tau: i64, mask_bits: u32) -> Result<(), TestCaseError> {
        let mut mask: Vec<bool> = (0..dfa.k()).map(|c| mask_bits >> c & 1 == 1).collect();
        if !mask.iter().any(|&m| m) {
            mask[0] = true;
        }
        for policy in Policy::ALL {
            prop_assert_eq!(run(dfa, tau, policy, &mask, raw), brute(dfa, tau, policy, &mask, raw), "policy {:?}", policy);
        }
        Ok(())
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(300))]
        #[test]
        fn extrema_equal_brute_force(raw in stream(b"abcdefgx"), tau in 0i64..6, m in 0u32..16) {
            check(&paper(), &raw, tau, m)?;
        }

        #[test]
        fn extrema_with_negation_equal_brute_force(raw in stream(b"abcdegx"), tau in 0i64..6, m in 0u32..16) {
            check(&negation(), &raw, tau, m)?;
            check(&letter_negated(), &raw, tau, m)?;
        }
    }

    #[test]
    fn mask_is_checked() {
        let dfa = Arc::new(paper());
        assert!(Extrema::new(dfa.clone(), 3, Policy::Any, Some(vec![true])).is_err());
        assert!(Extrema::new(dfa.clone(), 3, Policy::Any, Some(vec![false; dfa.k()])).is_err());
        assert_eq!(dfa.lookup[b'z' as usize], UNKNOWN);
    }
}
