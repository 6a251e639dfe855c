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
use crate::automaton::dfa::{Dfa, NONE};
use crate::numbers::dual::Dual;
use crate::engine::error::Error;
use crate::numbers::num::{Num, Scalar, R};
use crate::automaton::semantics::{expired, AnyMatch, Ev, Semantics};
use crate::automaton::step::{self, Dir, Layout};
use crate::numbers::tier::{Family, Ladder};
use num_bigint::BigUint;
use std::collections::VecDeque;
use std::marker::PhantomData;
use std::sync::Arc;

/// A negation at the end of the pattern (`A B+ !C`): a set in a `pending` state is a match
/// only once its window has closed (the stream has passed its first element's time plus the
/// window) and it is still in a pending state then, no negated event having filtered it out
/// since its last element. Negated events must then reach the window as elements of their
/// own (letters with no transition, whose filter is their negation), so that each is applied
/// at its time, after the initiators whose window it lies beyond have left.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Closing {
    pub pending: Vec<u32>,
    /// The final state that holds the sets counted when their window closed.
    pub closed: u32,
}

impl Closing {
    /// Checked against `dfa`: pending states are not final, the closed state is final and
    /// takes no element, and every negated character is also a letter.
    pub fn new(dfa: &Dfa, pending: Vec<u32>, closed: u32) -> Result<Closing, String> {
        let state = |q: u32| q != NONE && (q as usize) < dfa.n;
        if !state(closed) || !dfa.finals[closed as usize] || (0..dfa.k()).any(|c| dfa.step(closed, c as u8) != NONE) {
            return Err(format!("closed state {closed} must be a final state that takes no element"));
        }
        if let Some(q) = pending.iter().find(|&&q| !state(q) || dfa.finals[q as usize]) {
            return Err(format!("pending state {q} must be a state that is not final"));
        }
        // A negated character that is no letter of the pattern reaches the engine as a letter
        // with no transition: an element that only filters.
        if let Some(&b) = dfa.negated.iter().find(|&&b| dfa.lookup[b as usize] == crate::automaton::dfa::UNKNOWN) {
            return Err(format!("negated character {:?} must also be a letter (one with no transition if it is no letter of the pattern)", b as char));
        }
        Ok(Closing { pending, closed })
    }
}

/// Windowed aggregation over one stream. `totals[q]` counts the sets (matches and partial
/// matches) formed so far that end in state `q`, with the sums of their values.
pub struct Window<S: Scalar, P: Semantics> {
    pub dfa: Arc<Dfa>,
    pub tau: i64,
    /// A negation at the end of the pattern: the sets its pending states hold are added to
    /// `totals[closed]` when their initiator leaves the window.
    pub closing: Option<Arc<Closing>>,
    front: VecDeque<(Ev, Option<P::Cursor<S>>)>,
    /// Cursors already retracted, kept for their storage (at most one front's worth).
    spare: Vec<P::Cursor<S>>,
    back: Vec<Ev>,
    back_agg: P::Agg<S>,
    scratch: P::Agg<S>,
    pub a: Vec<Dual<S>>,
    pub totals: Vec<Dual<S>>,
    /// Sets formed by the last element, per state.
    pub formed: Vec<Dual<S>>,
    next_totals: Vec<Dual<S>>,
}

impl<S: Scalar, P: Semantics> Clone for Window<S, P> {
    fn clone(&self) -> Self {
        Window {
            dfa: self.dfa.clone(),
            tau: self.tau,
            closing: self.closing.clone(),
            front: self.front.clone(),
            spare: Vec::new(),
            back: self.back.clone(),
            back_agg: self.back_agg.clone(),
            scratch: self.scratch.clone(),
            a: self.a.clone(),
            totals: self.totals.clone(),
            formed: self.formed.clone(),
            next_totals: self.next_totals.clone(),
        }
    }
}

impl<S: Scalar, P: Semantics> Window<S, P> {
    pub fn new(dfa: Arc<Dfa>, tau: i64) -> Self {
        let z = dfa.n;
        let back_agg = P::identity(&dfa);
        let scratch = back_agg.clone();
        let zero = vec![Dual::zero(); z];
        Window {
            dfa,
            tau,
            closing: None,
            front: VecDeque::new(),
            spare: Vec::new(),
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
        let mut agg = P::identity(&self.dfa);
        let mut items = Vec::with_capacity(self.back.len());
        for ev in self.back.iter().rev() {
            items.push((*ev, P::start(&self.dfa, ev, &agg, &mut self.spare)?));
            P::prepend(&self.dfa, ev, &mut agg, &mut self.scratch)?;
        }
        items.reverse();
        self.front = items.into();
        self.back.clear();
        self.back_agg = P::identity(&self.dfa);
        Ok(())
    }

    /// Drop the elements that a new element at time `now` can no longer share a match with.
    pub fn expire(&mut self, now: i64) -> R<()> {
        let tau = self.tau;
        self.expire_while(|t| expired(t, now, tau))
    }

    /// Close the window of every initiator at time `t` or more before `now`, with `now` no
    /// earlier than the last element: what an evaluation at `now` counts.
    pub fn close_upto(&mut self, now: i64) -> R<()> {
        let tau = self.tau as i128;
        self.expire_while(|t| now as i128 - t as i128 >= tau)
    }

    fn expire_while(&mut self, gone: impl Fn(i64) -> bool) -> R<()> {
        while let Some(t) = self.oldest().map(|e| e.t) {
            if !gone(t) {
                break;
            }
            if self.front.is_empty() {
                self.flip()?;
            }
            // A flip of a non-empty back stack leaves the front non-empty. Everything that can
            // fail happens before the initiator leaves: after a failure the caller rebuilds
            // from the raw window (still holding it) and the committed totals.
            let closed = match (self.front.front(), &self.closing) {
                (Some((_, Some(c))), closing) => {
                    let before = closing.as_ref().map(|k| self.pending_sum(k)).transpose()?;
                    P::retract(&self.dfa, c, &self.back_agg, &mut self.a)?;
                    match (before, closing) {
                        (Some(before), Some(k)) => Some((k.closed as usize, self.totals[k.closed as usize].add(&before.sub(&self.pending_sum(k)?)?)?)),
                        _ => None,
                    }
                }
                _ => None,
            };
            if let Some((_, Some(c))) = self.front.pop_front() {
                self.spare.push(c);
            }
            if let Some((q, total)) = closed {
                self.totals[q] = total;
            }
        }
        Ok(())
    }

    /// Forget the first element pushed, as if it never had been: the state of a window pushed
    /// only the rest (the same totals, active sets and raw window). `first_window`: that
    /// element and the later ones within its window, in order; `pushed`: how many elements
    /// were pushed since the window was new. Its sets all start with it, so its share is that
    /// element alone pushed through the later ones of its window (the sets it forms, its own
    /// pending sets counted when its window closed), subtracted: O(|first_window|) steps of
    /// one vector, none if it starts no set (a negated element has nothing earlier to filter).
    /// On an error nothing changed but the representation of the raw window.
    pub fn forget_first(&mut self, first_window: &[Ev], pushed: usize) -> R<()> {
        let Some((first, later)) = first_window.split_first() else { return Ok(()) };
        let held = self.front.len() + self.back.len() == pushed; // else it has left the window
        if held && self.front.is_empty() {
            self.flip()?; // it is the front's first then
        }
        let init = self.dfa.init[first.sym as usize];
        if init != NONE {
            let (mut totals, mut a) = (self.totals.clone(), self.a.clone());
            let mut alone = vec![Dual::zero(); self.dfa.n];
            alone[init as usize] = Dual::weight(first.v);
            let mut share = alone.clone(); // the sets it formed, per state
            let mut formed = vec![Dual::zero(); self.dfa.n];
            for ev in later {
                P::formed(&self.dfa, &alone, ev, &mut formed)?;
                let own = self.dfa.init[ev.sym as usize]; // {ev} alone is not one of its sets
                if own != NONE {
                    formed[own as usize].sub_assign(&Dual::weight(ev.v))?;
                }
                P::advance(&self.dfa, &mut alone, ev, &formed)?;
                for (s, f) in share.iter_mut().zip(&formed) {
                    s.add_assign(f)?;
                }
            }
            for (t, s) in totals.iter_mut().zip(&share) {
                t.sub_assign(s)?;
            }
            match &self.closing {
                _ if held => a.iter_mut().zip(&alone).try_for_each(|(x, s)| x.sub_assign(s))?,
                Some(k) => {
                    let pending = k.pending.iter().try_fold(Dual::zero(), |sum, &q| sum.add(&alone[q as usize]))?;
                    totals[k.closed as usize].sub_assign(&pending)?;
                }
                None => {}
            }
            (self.totals, self.a) = (totals, a);
        }
        if held {
            if let Some((_, Some(c))) = self.front.pop_front() {
                self.spare.push(c);
            }
        }
        Ok(())
    }

    /// The active sets in pending states (those a closing window counts).
    fn pending_sum(&self, closing: &Closing) -> R<Dual<S>> {
        let mut sum = Dual::zero();
        for &q in &closing.pending {
            sum.add_assign(&self.a[q as usize])?;
        }
        Ok(sum)
    }


    /// Process one element. On [`Overflow`](crate::numbers::num::Overflow) the committed totals and
    /// the raw window are intact, so the caller can rebuild wider and push the element again.
    pub fn push(&mut self, ev: Ev) -> R<()> {
        self.expire(ev.t)?;
        P::formed(&self.dfa, &self.a, &ev, &mut self.formed)?;
        for ((n, t), f) in self.next_totals.iter_mut().zip(&self.totals).zip(&self.formed) {
            *n = t.add(f)?;
        }
        P::advance(&self.dfa, &mut self.a, &ev, &self.formed)?;
        P::append(&self.dfa, &mut self.back_agg, &ev, &mut self.scratch)?;
        // Commit: the totals and the raw window are the state a rebuild starts from.
        std::mem::swap(&mut self.totals, &mut self.next_totals);
        self.back.push(ev);
        Ok(())
    }

    /// The totals of a window fed `events` from scratch.
    pub fn run(dfa: Arc<Dfa>, tau: i64, events: &[Ev]) -> R<Self> {
        Self::run_closing(dfa, tau, None, events)
    }

    /// [`Window::run`] with a negation at the end of the pattern.
    pub fn run_closing(dfa: Arc<Dfa>, tau: i64, closing: Option<Arc<Closing>>, events: &[Ev]) -> R<Self> {
        let mut w = Window::new(dfa, tau);
        w.closing = closing;
        for e in events {
            w.push(*e)?;
        }
        Ok(w)
    }
}

impl<S: Num, P: Semantics> Window<S, P> {
    /// The totals with every window closed now: the active sets in pending states counted
    /// (in big integers, which cannot overflow).
    pub fn totals_all_closed(&self) -> Vec<Dual<BigUint>> {
        let mut totals: Vec<Dual<BigUint>> = self.totals.iter().map(|d| d.to_big()).collect();
        if let Some(k) = &self.closing {
            for &q in &k.pending {
                let d = self.a[q as usize].to_big();
                let t = &mut totals[k.closed as usize];
                t.c += d.c;
                t.s += d.s;
            }
        }
        totals
    }
}

/// [`Window`] as a family over the exact number types.
pub struct WindowFamily<P>(PhantomData<P>);

impl<P: Semantics> Family for WindowFamily<P> {
    type At<N: Num> = Window<N, P>;
    type Ctx<'a> = ();
    fn widen<N: Num, M: Num>(_: &(), w: &Window<N, P>) -> R<Window<M, P>> {
        let mut wide = Window::<M, P>::run_closing(w.dfa.clone(), w.tau, w.closing.clone(), &w.window_events())?;
        wide.totals = w.totals.iter().map(|d| Dual::from_big(&d.to_big())).collect::<R<_>>()?;
        Ok(wide)
    }
}

/// The exact engine over a whole stream: a window that widens its numbers when they overflow.
pub struct ExactWindow<P: Semantics> {
    pub ladder: Ladder<WindowFamily<P>>,
}

impl<P: Semantics> Clone for ExactWindow<P> {
    fn clone(&self) -> Self {
        ExactWindow { ladder: self.ladder.clone() }
    }
}

impl<P: Semantics> ExactWindow<P> {
    pub fn new(dfa: Arc<Dfa>, tau: i64) -> Self {
        ExactWindow { ladder: Ladder::U64(Window::new(dfa, tau)) }
    }

    pub fn push(&mut self, ev: Ev) -> Result<(), Error> {
        crate::promoting!(&mut self.ladder, &(), |w| w.push(ev))
    }

    pub fn totals_big(&self) -> Vec<Dual<BigUint>> {
        crate::on_tier!(&self.ladder, |w| w.totals.iter().map(|d| d.to_big()).collect())
    }

    /// Count the sets of a negation at the end of the pattern when their window closes.
    pub fn set_closing(&mut self, closing: Arc<Closing>) {
        crate::on_tier!(&mut self.ladder, |w| w.closing = Some(closing))
    }

    pub fn closing(&self) -> Option<&Arc<Closing>> {
        crate::on_tier!(&self.ladder, |w| w.closing.as_ref())
    }

    /// The totals as an evaluation at `at` sees them: the windows that closed by then counted
    /// (on a copy, so later events can still reach the others), or every window closed with
    /// `at = None` (the stream is over). Without a closing, the totals.
    pub fn totals_closed(&self, at: Option<i64>) -> Result<Vec<Dual<BigUint>>, Error> {
        let Some(t) = at.filter(|_| self.closing().is_some()) else {
            return Ok(crate::on_tier!(&self.ladder, |w| w.totals_all_closed()));
        };
        let mut copy = self.clone();
        crate::promoting!(&mut copy.ladder, &(), |w| w.close_upto(t))?;
        Ok(copy.totals_big())
    }

    pub fn dfa(&self) -> &Arc<Dfa> {
        crate::on_tier!(&self.ladder, |w| &w.dfa)
    }

    /// [`Window::forget_first`], widening the numbers if they overflow.
    pub fn forget_first(&mut self, first_window: &[Ev], pushed: usize) -> Result<(), Error> {
        crate::promoting!(&mut self.ladder, &(), |w| w.forget_first(first_window, pushed))
    }
}

/// [`split_totals`] with a negation at the end of the pattern: the sets counted when their
/// window closed were partial matches when they formed (in a pending state), so they leave
/// the partial count.
pub fn split_closing(dfa: &Dfa, closing: Option<&Closing>, totals: &[Dual<BigUint>]) -> (BigUint, BigUint, BigUint) {
    let (c, s, p) = split_totals(dfa, totals);
    match closing {
        Some(k) => (c, s, p - &totals[k.closed as usize].c),
        None => (c, s, p),
    }
}

/// `(count, sum, partial count)`: totals over final states, and the count over the others.
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
    let mut scratch = Vec::new();
    for ev in events {
        while runs.front().is_some_and(|(t, _)| expired(*t, ev.t, tau)) {
            let (_, v) = runs.pop_front()?;
            for (x, y) in a.iter_mut().zip(&v) {
                x.sub_assign(y).ok()?;
            }
        }
        AnyMatch::formed(dfa, &a, ev, &mut formed).ok()?;
        for (t, f) in totals.iter_mut().zip(&formed) {
            t.add_assign(f).ok()?;
        }
        for (_, v) in runs.iter_mut() {
            step::step(dfa, ev, crate::automaton::dfa::Skip::Keep, v, Dir::Forward, Layout::Vector, &mut scratch).ok()?;
        }
        AnyMatch::advance(dfa, &mut a, ev, &formed).ok()?;
        let q = dfa.init[ev.sym as usize];
        if q != NONE {
            let mut v = vec![Dual::zero(); z];
            v[q as usize] = Dual::weight(ev.v);
            runs.push_back((ev.t, v));
        }
    }
    Some(totals)
}

#[cfg(test)]
pub mod tests {
    use super::*;
    use crate::engine::batch::Raw;
    use crate::automaton::dfa::tests::{letter_negated, negation, paper};
    use crate::automaton::dfa::{Skip, NONE};
    use crate::automaton::semantics::{Contiguous, NextMatch};
    use proptest::prelude::*;

    /// A raw event: a byte of the stream, its timestamp and value.
    pub type RawEv = (u8, i64, u64);

    /// The elements of a raw stream with their gaps, as the engines see them.
    pub fn elements(dfa: &Dfa, raw: &[RawEv]) -> Vec<Ev> {
        let mut pending = 0;
        let mut out = Vec::new();
        for &(b, t, v) in raw {
            match Raw::classify(dfa, b, t, v) {
                Raw::Element(ev) => out.push(Ev { gap: std::mem::take(&mut pending), ..ev }),
                Raw::Gap(bit) => pending |= bit,
            }
        }
        out
    }

    /// Brute force over index subsets of the raw stream (exponential: tiny streams only):
    /// chosen letters within the window (consecutive raw positions under contiguity), run
    /// through the automaton with every negated event strictly between two chosen elements
    /// applied as its filter. Skip-till-any-match and contiguity.
    pub fn brute_sets(dfa: &Dfa, tau: i64, skip: Skip, raw: &[RawEv]) -> (u128, u128) {
        let found = brute_matches(dfa, tau, skip, raw);
        let s = found.iter().map(|(idx, _)| idx.iter().map(|&i| raw[i].2 as u128).sum::<u128>()).sum();
        (found.len() as u128, s)
    }

    /// The matches of [`brute_sets`]: raw positions and the final state of each.
    pub fn brute_matches(dfa: &Dfa, tau: i64, skip: Skip, raw: &[RawEv]) -> Vec<(Vec<usize>, u32)> {
        let letters: Vec<usize> = (0..raw.len()).filter(|&i| dfa.lookup[raw[i].0 as usize] != crate::automaton::dfa::UNKNOWN).collect();
        let mut found = Vec::new();
        for mask in 1u32..(1 << letters.len()) {
            let idx: Vec<usize> = (0..letters.len()).filter(|i| mask >> i & 1 == 1).map(|i| letters[i]).collect();
            if expired(raw[idx[0]].1, raw[*idx.last().unwrap()].1, tau) {
                continue;
            }
            if skip == Skip::Kill && idx.windows(2).any(|w| w[1] != w[0] + 1) {
                continue;
            }
            let mut q = dfa.start;
            for (k, &i) in idx.iter().enumerate() {
                if k > 0 {
                    for between in &raw[idx[k - 1] + 1..i] {
                        let j = dfa.neg_lookup[between.0 as usize];
                        if j != crate::automaton::dfa::UNKNOWN && q != NONE {
                            q = dfa.neg_next[q as usize * dfa.negated.len() + j as usize];
                        }
                    }
                }
                if q != NONE {
                    q = dfa.step(q, dfa.lookup[raw[i].0 as usize]);
                }
            }
            if q != NONE && dfa.finals[q as usize] {
                found.push((idx, q));
            }
        }
        found
    }

    /// Skip-till-next-match by definition: each initiator's run takes every later letter it
    /// can within its window; a negated event it is guarded against kills it.
    pub fn brute_runs(dfa: &Dfa, tau: i64, raw: &[RawEv]) -> (u128, u128) {
        let (mut c, mut s) = (0u128, 0u128);
        let m = dfa.negated.len();
        for i in 0..raw.len() {
            let sym = dfa.lookup[raw[i].0 as usize];
            if sym == crate::automaton::dfa::UNKNOWN || dfa.init[sym as usize] == NONE {
                continue;
            }
            let mut q = dfa.init[sym as usize];
            let mut value = raw[i].2 as u128;
            if dfa.finals[q as usize] {
                c += 1;
                s += value;
            }
            for e in &raw[i + 1..] {
                let (letter, neg) = (dfa.lookup[e.0 as usize], dfa.neg_lookup[e.0 as usize]);
                if letter != crate::automaton::dfa::UNKNOWN {
                    if expired(raw[i].1, e.1, tau) {
                        break;
                    }
                    let to = dfa.step(q, letter);
                    if to != NONE {
                        q = to;
                        value += e.2 as u128;
                        if dfa.finals[q as usize] {
                            c += 1;
                            s += value;
                        }
                        continue;
                    }
                }
                if neg != crate::automaton::dfa::UNKNOWN {
                    q = dfa.neg_next[q as usize * m + neg as usize];
                    if q == NONE {
                        break;
                    }
                }
            }
        }
        (c, s)
    }

    /// Raw streams over `bytes` (letters, negated and foreign characters mixed).
    pub fn raw_stream(bytes: &'static [u8], max: usize) -> impl Strategy<Value = Vec<RawEv>> {
        proptest::collection::vec((0..bytes.len(), 0i64..3, 0u64..5), 0..max).prop_map(move |raw| {
            let mut t = 0;
            raw.into_iter()
                .map(|(b, dt, v)| {
                    t += dt;
                    (bytes[b], t, v)
                })
                .collect()
        })
    }

    /// Elements of the paper's query, no gaps (the common case).
    pub fn stream() -> impl Strategy<Value = Vec<Ev>> {
        raw_stream(b"abcdefg", 13).prop_map(|raw| elements(&paper(), &raw))
    }

    /// An automaton and a raw stream over its letters, negated characters and a stranger.
    pub fn case() -> impl Strategy<Value = (Arc<Dfa>, Vec<RawEv>)> {
        prop_oneof![
            raw_stream(b"abcdefgx", 13).prop_map(|r| (Arc::new(paper()), r)),
            raw_stream(b"abcdegx", 13).prop_map(|r| (Arc::new(negation()), r)),
            raw_stream(b"abx", 13).prop_map(|r| (Arc::new(letter_negated()), r)),
        ]
    }

    fn count<P: Semantics>(dfa: &Arc<Dfa>, tau: i64, evs: &[Ev]) -> (BigUint, BigUint) {
        let mut w = ExactWindow::<P>::new(dfa.clone(), tau);
        for e in evs {
            w.push(*e).unwrap();
        }
        let (c, s, _) = split_totals(dfa, &w.totals_big());
        (c, s)
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 400, ..ProptestConfig::default() })]

        #[test]
        fn every_policy_equals_brute_force((dfa, raw) in case(), tau in 0i64..12) {
            let evs = elements(&dfa, &raw);
            let big = |(c, s): (u128, u128)| (BigUint::from(c), BigUint::from(s));
            prop_assert_eq!(count::<AnyMatch>(&dfa, tau, &evs), big(brute_sets(&dfa, tau, Skip::Keep, &raw)), "any");
            prop_assert_eq!(count::<Contiguous>(&dfa, tau, &evs), big(brute_sets(&dfa, tau, Skip::Kill, &raw)), "contiguous");
            prop_assert_eq!(count::<NextMatch>(&dfa, tau, &evs), big(brute_runs(&dfa, tau, &raw)), "next");
        }

        #[test]
        fn per_initiator_baseline_agrees(evs in stream(), tau in 0i64..12) {
            let dfa = Arc::new(paper());
            let (c, s) = count::<AnyMatch>(&dfa, tau, &evs);
            let (pc, ps, _) = split_totals(&dfa, &per_initiator_totals(&dfa, tau, &evs).unwrap().iter().map(|d| d.to_big()).collect::<Vec<_>>());
            prop_assert_eq!((pc, ps), (c, s));
        }

        #[test]
        fn next_match_equals_run_walk((dfa, raw) in case(), tau in 0i64..12) {
            let evs = elements(&dfa, &raw);
            let (c, s) = count::<NextMatch>(&dfa, tau, &evs);
            let (mut wc, mut ws) = (0u128, 0u128);
            crate::automaton::semantics::walk_runs(&dfa, tau, &evs, |run| {
                for (k, &done) in run.complete.iter().enumerate() {
                    if done {
                        wc += 1;
                        ws += run.taken[..=k].iter().map(|&i| evs[i].v as u128).sum::<u128>();
                    }
                }
            });
            prop_assert_eq!((c, s), (BigUint::from(wc), BigUint::from(ws)));
        }
    }

    /// `A B+ !C` as the Python compiler builds it for the exact engine: C is also a letter with
    /// no transition (its events arrive at their time), state 2 is pending, state 3 closed.
    pub fn absence() -> Arc<Dfa> {
        let t = |row: [i64; 4]| row.to_vec();
        let table = [t([1, -1, -1, 0]), t([-1, 2, -1, 1]), t([-1, 2, -1, 1]), t([-1, -1, -1, 3])].concat();
        let spec = crate::automaton::dfa::DfaSpec { n: 4, alphabet: b"ABC".to_vec(), negated: b"C".to_vec(), start: 0, finals: vec![false, false, false, true], table };
        Arc::new(Dfa::new(spec).unwrap())
    }

    /// Brute force of the closing rule: a set spelling `A B+` whose first element is at f counts
    /// at `at` if `at >= f + tau` (always with `None`) and no C comes after its last element up
    /// to time f + tau.
    pub fn brute_closed(raw: &[RawEv], tau: i64, at: Option<i64>) -> (u128, u128) {
        let raw: Vec<RawEv> = raw.iter().copied().filter(|e| at.is_none_or(|t| e.1 <= t)).collect();
        let (mut c, mut s) = (0u128, 0u128);
        let letters: Vec<usize> = (0..raw.len()).filter(|&i| raw[i].0 != b'C').collect();
        for mask in 1u32..(1 << letters.len()) {
            let idx: Vec<usize> = (0..letters.len()).filter(|i| mask >> i & 1 == 1).map(|i| letters[i]).collect();
            let (first, last) = (idx[0], *idx.last().unwrap());
            let word_ok = raw[first].0 == b'A' && idx.len() >= 2 && idx[1..].iter().all(|&i| raw[i].0 == b'B');
            let closes = raw[first].1 + tau;
            if !word_ok || expired(raw[first].1, raw[last].1, tau) || at.is_some_and(|t| t < closes) {
                continue;
            }
            if raw[last + 1..].iter().any(|e| e.0 == b'C' && e.1 <= closes) {
                continue;
            }
            c += 1;
            s += idx.iter().map(|&i| raw[i].2 as u128).sum::<u128>();
        }
        (c, s)
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 300, ..ProptestConfig::default() })]

        #[test]
        fn closing_windows_equal_brute_force(raw in raw_stream(b"ABCx", 12), tau in 0i64..6) {
            let dfa = absence();
            let count = |ts: &[Dual<BigUint>]| (ts[3].c.clone(), ts[3].s.clone());
            let big = |(c, s): (u128, u128)| (BigUint::from(c), BigUint::from(s));
            let end = raw.last().map_or(0, |e| e.1) + tau + 1;
            // An evaluation at every time: the window fed the events up to it.
            for at in 0..=end {
                let mut w = ExactWindow::<AnyMatch>::new(dfa.clone(), tau);
                w.set_closing(Arc::new(Closing::new(&dfa, vec![2], 3).unwrap()));
                for e in elements(&dfa, &raw).into_iter().filter(|e| e.t <= at) {
                    w.push(e).unwrap();
                }
                prop_assert_eq!(count(&w.totals_closed(Some(at)).unwrap()), big(brute_closed(&raw, tau, Some(at))), "at {}", at);
                if at == end {
                    prop_assert_eq!(count(&w.totals_closed(None).unwrap()), big(brute_closed(&raw, tau, None)));
                }
            }
        }
    }

    #[test]
    fn a_closing_must_fit_its_automaton() {
        let dfa = absence();
        assert!(Closing::new(&dfa, vec![2], 3).is_ok());
        assert!(Closing::new(&dfa, vec![2], 2).unwrap_err().contains("closed state 2"));
        assert!(Closing::new(&dfa, vec![3], 3).unwrap_err().contains("pending state 3"));
        assert!(Closing::new(&negation(), vec![0], 0).is_err());
    }

    #[test]
    fn promotes_through_every_tier_with_exact_results() {
        // "a+" over n a's in one window has 2^n - 1 matches: crosses 2^64, 2^128 and 2^256.
        let dfa = Arc::new(Dfa::new(crate::automaton::dfa::DfaSpec { n: 2, alphabet: b"a".to_vec(), negated: Vec::new(), start: 0, finals: vec![false, true], table: vec![1, 1] }).unwrap());
        let mut w = ExactWindow::<AnyMatch>::new(dfa.clone(), 1_000_000);
        let mut tiers = Vec::new();
        for i in 0..300u64 {
            w.push(Ev { sym: 0, t: i as i64, v: 1, gap: 0 }).unwrap();
            let (c, s, _) = split_totals(&dfa, &w.totals_big());
            let n = i + 1;
            assert_eq!(c, (BigUint::from(1u8) << n) - 1u8, "count after {n}");
            // Each element is in 2^(n-1) matches: the sum is n·2^(n-1).
            assert_eq!(s, BigUint::from(n) << (n - 1), "sum after {n}");
            if tiers.last() != Some(&w.ladder.tier()) {
                tiers.push(w.ladder.tier());
            }
        }
        assert_eq!(tiers, vec!["u64", "u128", "u256", "big"]);
    }

    #[test]
    fn expiry_never_wraps_near_the_ends_of_time() {
        let dfa = Arc::new(paper());
        let mut w = ExactWindow::<AnyMatch>::new(dfa.clone(), i64::MAX);
        for (i, t) in [i64::MIN, i64::MIN + 1, 0, i64::MAX - 1, i64::MAX].into_iter().enumerate() {
            w.push(Ev { sym: (i % 2) as u8, t, v: 1, gap: 0 }).unwrap();
        }
        assert!(expired(i64::MIN, i64::MAX, i64::MAX));
        assert!(!expired(0, i64::MAX, i64::MAX));
        assert!(!expired(i64::MIN, -1, i64::MAX));
    }
}
