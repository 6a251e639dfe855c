//! The elements a summary retains when its counts need an engine of their own, and the
//! exact counts over them (docs/ENGINE.md, "Summaries with conditions"): a query with
//! conditions (the conditions [`Engine`]) or with a negation at the end of the pattern (the
//! exact window with its [`Closing`]).
//!
//! The counts are those of one engine fed exactly the retained elements, in time order.
//! Keeping an element feeds it (the engine's cost per event); removing the oldest elements
//! takes their share out of the engine ([`Recount::forget_oldest`]: each alone replayed through
//! the later elements of its window), removing others replays the rest into a blank engine,
//! O(|S|) feeds, so no state but the elements and one engine over them is ever needed. [`Retained::through`] gives, per element, the matches through it (a
//! summary's present benefit) by difference, in one pass.
use std::sync::Mutex;
use std::collections::VecDeque;
use std::sync::Arc;

use num_bigint::{BigInt, BigUint};

use super::count::Count;
use super::engine::{Engine, Spec, Totals};
use super::value::Value;
use crate::automaton::dfa::Dfa;
use crate::automaton::semantics::{expired, AnyMatch, Ev};
use crate::exact::window::{split_closing, Closing, ExactWindow};
use crate::numbers::dual::Dual;
use crate::Error;

/// One retained element: (letter, timestamp, value, attribute values).
pub type Element = (usize, i64, u64, Box<[Value]>);

/// An exact engine a summary's retained elements are counted with.
pub trait Recount: Clone {
    /// Take the next element (timestamps do not decrease). On an error it counts nothing.
    fn feed(&mut self, e: &Element) -> Result<(), Error>;
    /// What the engine has counted as its elements arrived.
    fn counted(&self) -> Totals;
    /// What an evaluation at `at` reports (`None`: the stream is over). They differ from
    /// [`Recount::counted`] only with a negation at the end of the pattern, whose matches count
    /// once their window has closed.
    fn totals_at(&self, at: Option<i64>) -> Result<Totals, Error>;
    /// The window: a match's elements, and whatever decides it, lie within one window of each
    /// of its elements.
    fn window(&self) -> i64;
    /// Forget the oldest of `fed` (exactly the elements fed, in order): the state of a blank
    /// engine fed the rest. `false`: this engine cannot, nothing changed (the caller replays).
    fn forget_oldest(&mut self, _fed: &[Element]) -> Result<bool, Error> {
        Ok(false)
    }
    /// Per automaton state (numbered as in [`Recount::outlook_dfa`]), (count, sum) of the
    /// partial matches whose first element is still in the window at `now` (no earlier than
    /// the last element fed). The engine first expires what `now` leaves behind, as an element
    /// at `now` would: call it on a copy, or when nothing more is fed.
    fn partial_at(&mut self, now: i64) -> Result<Vec<Dual<BigUint>>, Error>;
    /// The automaton of the expected-matches recurrence over these states: one letter per
    /// element letter, final where a set is a match (or, with a negation at the end, waits
    /// for its window to close), no conditions and no negation.
    fn outlook_dfa(&self) -> Result<Dfa, Error>;
}

/// A [`Dfa`] over `letters` letters (named by printable bytes) with `next(q, c)` its moves.
fn plain_dfa(states: usize, letters: usize, start: usize, finals: Vec<bool>, next: impl Fn(usize, usize) -> Option<usize>) -> Result<Dfa, Error> {
    let alphabet: Vec<u8> = (b'!'..=b'~').take(letters).collect();
    if alphabet.len() < letters {
        return Err(Error::input(format!("{letters} letters are too many for the expected benefit (at most 94)")));
    }
    let table = (0..states).flat_map(|q| (0..letters).map(move |c| (q, c))).map(|(q, c)| next(q, c).map_or(-1, |t| t as i64)).collect();
    let spec = crate::automaton::dfa::DfaSpec { n: states, alphabet, negated: Vec::new(), start: start as u32, finals, table };
    Dfa::new(spec).map_err(Error::Input)
}

impl Recount for Engine {
    fn feed(&mut self, e: &Element) -> Result<(), Error> {
        Engine::feed(self, Some(e.0), e.1, e.2, e.3.clone())
    }

    fn counted(&self) -> Totals {
        self.totals().clone()
    }

    fn totals_at(&self, _: Option<i64>) -> Result<Totals, Error> {
        Ok(self.totals().clone())
    }

    fn window(&self) -> i64 {
        self.spec().window
    }

    fn forget_oldest(&mut self, fed: &[Element]) -> Result<bool, Error> {
        self.forget_first(fed)
    }

    fn partial_at(&mut self, now: i64) -> Result<Vec<Dual<BigUint>>, Error> {
        Ok(self.partial_by_state(now)?.iter().map(|d| Dual { c: d.c.to_biguint(), s: d.s.to_biguint() }).collect())
    }

    fn outlook_dfa(&self) -> Result<Dfa, Error> {
        let spec = self.spec();
        plain_dfa(spec.finals.len(), spec.conditions.len(), spec.start, spec.finals.clone(), |q, c| spec.delta[q][c])
    }
}

/// The exact engine of a query with a negation at the end of the pattern (`A B+ !C`), policy
/// "any": elements are letters of its automaton, the negated characters among them.
#[derive(Clone)]
pub struct ClosingCount {
    window: ExactWindow<AnyMatch>,
}

impl ClosingCount {
    pub fn new(dfa: Arc<Dfa>, window: i64, closing: Closing) -> Result<ClosingCount, Error> {
        if window < 0 {
            return Err(Error::input("the window must not be negative"));
        }
        let mut w = ExactWindow::new(dfa, window);
        w.set_closing(Arc::new(closing));
        Ok(ClosingCount { window: w })
    }

    fn split(&self, totals: &[Dual<BigUint>]) -> Totals {
        let closing = self.window.closing().map(|k| &**k);
        let (c, s, p) = split_closing(self.window.dfa(), closing, totals);
        Totals { matches: Dual { c: Count::from_biguint(c), s: Count::from_biguint(s) }, partial: Count::from_biguint(p), extrema: None }
    }
}

#[cfg(test)]
impl ClosingCount {
    /// The totals and active sets per state and the raw window, whatever the tier.
    fn state(&self) -> (Vec<Dual<BigUint>>, Vec<Dual<BigUint>>, Vec<Ev>) {
        crate::on_tier!(&self.window.ladder, |w| (w.totals.iter().map(|d| d.to_big()).collect(), w.a.iter().map(|d| d.to_big()).collect(), w.window_events()))
    }
}

impl Recount for ClosingCount {
    fn feed(&mut self, e: &Element) -> Result<(), Error> {
        let letters = self.window.dfa().k();
        if e.0 >= letters || !e.3.is_empty() {
            return Err(Error::input(format!("an element must be a letter below {letters} without attributes")));
        }
        self.window.push(Ev { sym: e.0 as u8, t: e.1, v: e.2, gap: 0 })
    }

    fn counted(&self) -> Totals {
        self.split(&self.window.totals_big())
    }

    fn totals_at(&self, at: Option<i64>) -> Result<Totals, Error> {
        Ok(self.split(&self.window.totals_closed(at)?))
    }

    fn window(&self) -> i64 {
        crate::on_tier!(&self.window.ladder, |w| w.tau)
    }

    fn forget_oldest(&mut self, fed: &[Element]) -> Result<bool, Error> {
        let Some(first) = fed.first().filter(|_| fed.len() > 1) else { return Ok(false) };
        let tau = self.window();
        let ev = |e: &Element| Ev { sym: e.0 as u8, t: e.1, v: e.2, gap: 0 };
        let first_window: Vec<Ev> = fed.iter().take_while(|e| !expired(first.1, e.1, tau)).map(ev).collect();
        self.window.forget_first(&first_window, fed.len())?;
        Ok(true)
    }

    fn partial_at(&mut self, now: i64) -> Result<Vec<Dual<BigUint>>, Error> {
        crate::promoting!(&mut self.window.ladder, &(), |w| w.expire(now))?;
        Ok(crate::on_tier!(&self.window.ladder, |w| w.a.iter().map(|d| d.to_big()).collect()))
    }

    /// The pattern's automaton with its pending states final (the matches a negation at the
    /// end may still refute) and the negation left out: a negated character's element is a
    /// letter with no move, so the recurrence lets every set skip it.
    fn outlook_dfa(&self) -> Result<Dfa, Error> {
        let dfa = self.window.dfa();
        let mut finals = dfa.finals.clone();
        for &q in self.window.closing().map_or(&[][..], |k| &k.pending[..]) {
            finals[q as usize] = true;
        }
        plain_dfa(dfa.n, dfa.k(), dfa.start as usize, finals, |q, c| Some(dfa.step(q as u32, c as u8)).filter(|&t| t != crate::automaton::dfa::NONE).map(|t| t as usize))
    }
}

#[derive(Clone)]
pub struct Retained<E: Recount = Engine> {
    /// Never fed: what a rebuild starts from.
    blank: E,
    elems: Vec<Element>,
    /// Fed exactly `elems`, in order.
    engine: E,
    /// The last [`Retained::through`] with partial counts, and how many elements had left
    /// the window at its `now`: the same answer while the elements and that number stay
    /// (every change of the elements clears it).
    through_cache: ThroughCache,
}

impl Retained<Engine> {
    pub fn new(spec: Spec) -> Result<Retained, Error> {
        Ok(Retained::over(Engine::new(spec)?))
    }
}

impl<E: Recount> Retained<E> {
    /// Empty, counting with `blank` (never fed).
    pub fn over(blank: E) -> Retained<E> {
        Retained { engine: blank.clone(), blank, elems: Vec::new(), through_cache: ThroughCache::default() }
    }

    /// The automaton the partial counts of [`Retained::through`] are numbered by
    /// ([`Recount::outlook_dfa`]).
    pub fn outlook_dfa(&self) -> Result<Dfa, Error> {
        self.blank.outlook_dfa()
    }

    pub fn window(&self) -> i64 {
        self.blank.window()
    }

    pub fn elements(&self) -> &[Element] {
        &self.elems
    }

    pub fn len(&self) -> usize {
        self.elems.len()
    }

    pub fn is_empty(&self) -> bool {
        self.elems.is_empty()
    }

    /// Over exactly the retained elements: what the engine counted as they arrived.
    pub fn totals(&self) -> Totals {
        self.engine.counted()
    }

    /// Over exactly the retained elements, as an evaluation at `at` reports them (`None`:
    /// the stream is over).
    pub fn totals_at(&self, at: Option<i64>) -> Result<Totals, Error> {
        self.engine.totals_at(at)
    }

    /// Keep an element no earlier than the retained ones. On an error nothing changes.
    pub fn push(&mut self, e: Element) -> Result<(), Error> {
        in_order(&self.elems, &e)?;
        self.through_cache.clear();
        self.engine.feed(&e)?; // on an error it counts nothing
        self.elems.push(e);
        Ok(())
    }

    /// Remove the elements at `positions` (any order, no repeats) and recount the rest.
    pub fn remove(&mut self, positions: &[usize]) -> Result<(), Error> {
        self.through_cache.clear();
        if self.forgot_oldest(positions)? {
            self.elems.drain(..positions.len());
            return Ok(());
        }
        let kept = self.without(positions)?;
        self.engine = self.replayed(&kept)?;
        self.elems = kept;
        Ok(())
    }

    /// Remove the elements at `positions` and keep `e` (an eviction), with one recount; the
    /// totals ([`Retained::totals`]) before `e` joined. On an error nothing changes.
    pub fn replace(&mut self, positions: &[usize], e: Element) -> Result<Totals, Error> {
        self.through_cache.clear();
        let oldest = oldest(positions, self.elems.len());
        if oldest.is_some_and(|k| k < self.elems.len()) {
            in_order(&self.elems, &e)?; // the last element stays
        }
        if self.forgot_oldest(positions)? {
            let before = self.engine.counted();
            if let Err(err) = self.engine.feed(&e) {
                self.engine = self.replayed(&self.elems)?; // as it was
                return Err(err);
            }
            self.elems.drain(..positions.len());
            self.elems.push(e);
            return Ok(before);
        }
        let mut kept = self.without(positions)?;
        in_order(&kept, &e)?;
        let mut engine = self.replayed(&kept)?;
        let before = engine.counted();
        engine.feed(&e)?;
        kept.push(e);
        (self.engine, self.elems) = (engine, kept);
        Ok(before)
    }

    /// When `positions` are the oldest elements but not all, the engine forgets them without
    /// a replay if it can (the elements stay: the caller drops them). `false`: the engine is
    /// to be replayed (it may have forgotten some). On an error it is as it was.
    fn forgot_oldest(&mut self, positions: &[usize]) -> Result<bool, Error> {
        let Some(k) = oldest(positions, self.elems.len()).filter(|&k| k < self.elems.len()) else { return Ok(false) };
        for i in 0..k {
            match self.engine.forget_oldest(&self.elems[i..]) {
                Ok(true) => {}
                Ok(false) => return Ok(false),
                Err(err) => {
                    self.engine = self.replayed(&self.elems)?;
                    return Err(err);
                }
            }
        }
        Ok(true)
    }

    /// The elements but those at `positions`.
    fn without(&self, positions: &[usize]) -> Result<Vec<Element>, Error> {
        let mut gone = vec![false; self.elems.len()];
        for &p in positions {
            match gone.get_mut(p) {
                Some(g) if !*g => *g = true,
                _ => return Err(Error::input(format!("no retained element {p} to remove"))),
            }
        }
        Ok(self.elems.iter().zip(&gone).filter(|(_, g)| !**g).map(|(e, _)| e.clone()).collect())
    }

    /// The totals with `e` kept as well, the stream over then (nothing changes).
    pub fn with(&self, e: &Element) -> Result<Totals, Error> {
        let mut engine = self.engine.clone();
        engine.feed(e)?;
        engine.totals_at(None)
    }

    fn replayed(&self, elems: &[Element]) -> Result<E, Error> {
        let mut engine = self.blank.clone();
        for e in elems {
            engine.feed(e)?;
        }
        Ok(engine)
    }

    /// Per retained element, (number, sum of values) of the matches through it, the stream
    /// over: count(S) − count(S without e). Negative for an element of a negated character at
    /// the end of the pattern (the matches it keeps from counting). Whatever e changes has its
    /// first element within one window before e and is decided by the elements up to
    /// t_e + W, so the two counts differ only by what the elements up to t_e + W add: an
    /// engine fed the elements before e is forked, takes the elements after e up to t_e + W,
    /// and its totals are subtracted from the main engine's at the same point. O(Σ_e
    /// |elements in (t_e, t_e + W]|) feeds and |S| forks.
    ///
    /// With `now` (no earlier than the last element), also the partial matches through e by
    /// automaton state ([`Recount::partial_at`] at `now`, the main engine's minus the fork's):
    /// those of the forks still open at the end (a fork closed earlier belongs to an element
    /// more than a window before the last one, whose partial matches have all expired).
    pub fn through(&self, now: Option<i64>) -> Result<Vec<Through>, Error> {
        let window = self.blank.window() as i128;
        // What `now` changes is only which first elements have left the window.
        let left = now.map(|now| self.elems.iter().take_while(|e| (now as i128) - (e.1 as i128) > window).count());
        if let Some(through) = left.and_then(|left| self.through_cache.get(left)) {
            return Ok(through);
        }
        let out = self.through_uncached(now)?;
        if let Some(left) = left {
            self.through_cache.set(left, out.clone());
        }
        Ok(out)
    }

    fn through_uncached(&self, now: Option<i64>) -> Result<Vec<Through>, Error> {
        let window = self.blank.window() as i128;
        let n = self.elems.len();
        let mut main = self.blank.clone();
        let mut after: Vec<Totals> = Vec::with_capacity(n); // main's totals after element k
        let mut open: VecDeque<(usize, E)> = VecDeque::new(); // forks without element i
        let mut out = vec![Through::default(); n];
        let matches = |fork: &E, with: &Totals| -> Result<(BigInt, BigInt), Error> {
            let without = fork.totals_at(None)?;
            let (a, b) = (&with.matches, &without.matches);
            let signed = |x: &Count| BigInt::from(x.to_biguint());
            Ok((signed(&a.c) - signed(&b.c), signed(&a.s) - signed(&b.s)))
        };
        for (k, e) in self.elems.iter().enumerate() {
            while let Some((i, _)) = open.front() {
                if (e.1 as i128) - (self.elems[*i].1 as i128) <= window {
                    break;
                }
                let (i, fork) = open.pop_front().expect("front exists");
                out[i].matches = matches(&fork, &after[k - 1])?;
            }
            for (_, fork) in open.iter_mut() {
                fork.feed(e)?;
            }
            open.push_back((k, main.clone()));
            main.feed(e)?;
            after.push(main.totals_at(None)?);
        }
        let now = match now {
            Some(now) if self.elems.last().is_some_and(|last| now < last.1) => return Err(Error::input(format!("time {now} is earlier than the last retained element"))),
            Some(now) => Some(now),
            None => None,
        };
        let with = match now {
            Some(now) => main.partial_at(now)?,
            None => Vec::new(),
        };
        for (i, mut fork) in open {
            out[i].matches = matches(&fork, &after[n - 1])?;
            if let Some(now) = now {
                out[i].partial = difference(&with, &fork.partial_at(now)?);
            }
        }
        if now.is_some() {
            let states = with.len();
            out.iter_mut().filter(|th| th.partial.is_empty()).for_each(|th| th.partial = vec![(BigInt::default(), BigInt::default()); states]);
        }
        Ok(out)
    }

    /// What keeping `e` too would add ([`Retained::through`] of it, `e` no earlier than the
    /// retained elements): the matches, the stream over, and the partial matches by state at
    /// `now` (no earlier than `e`). Nothing changes.
    pub fn gain(&self, e: &Element, now: i64) -> Result<Through, Error> {
        in_order(&self.elems, e)?;
        if now < e.1 {
            return Err(Error::input(format!("time {now} is earlier than the element")));
        }
        let (mut with, mut without) = (self.engine.clone(), self.engine.clone());
        with.feed(e)?;
        let (a, b) = (with.totals_at(None)?.matches, without.totals_at(None)?.matches);
        let signed = |x: &Count| BigInt::from(x.to_biguint());
        Ok(Through {
            matches: (signed(&a.c) - signed(&b.c), signed(&a.s) - signed(&b.s)),
            partial: difference(&with.partial_at(now)?, &without.partial_at(now)?),
        })
    }
}

/// What one retained element adds ([`Retained::through`]): (count, sum) of the matches through
/// it, and per automaton state (count, sum) of the partial matches through it (empty when not
/// asked for).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Through {
    pub matches: (BigInt, BigInt),
    pub partial: Vec<(BigInt, BigInt)>,
}

/// [`Retained::through`]'s last answer with partial counts (a copy starts empty).
#[derive(Default)]
struct ThroughCache(Mutex<Option<(usize, Vec<Through>)>>);

impl Clone for ThroughCache {
    fn clone(&self) -> Self {
        ThroughCache::default()
    }
}

impl ThroughCache {
    fn get(&self, left: usize) -> Option<Vec<Through>> {
        let cached = self.0.lock().unwrap_or_else(|e| e.into_inner());
        cached.as_ref().filter(|(l, _)| *l == left).map(|(_, through)| through.clone())
    }

    fn set(&self, left: usize, through: Vec<Through>) {
        *self.0.lock().unwrap_or_else(|e| e.into_inner()) = Some((left, through));
    }

    fn clear(&self) {
        *self.0.lock().unwrap_or_else(|e| e.into_inner()) = None;
    }
}

/// `a − b` per state, signed.
fn difference(a: &[Dual<BigUint>], b: &[Dual<BigUint>]) -> Vec<(BigInt, BigInt)> {
    a.iter().zip(b).map(|(x, y)| (BigInt::from(x.c.clone()) - BigInt::from(y.c.clone()), BigInt::from(x.s.clone()) - BigInt::from(y.s.clone()))).collect()
}

/// `Some(k)` when `positions` are exactly the first k of `len` positions (k > 0, any order).
fn oldest(positions: &[usize], len: usize) -> Option<usize> {
    let k = positions.len();
    let mut seen = vec![false; k];
    for &p in positions {
        match seen.get_mut(p) {
            Some(s) if !*s && p < len => *s = true,
            _ => return None,
        }
    }
    (k > 0).then_some(k)
}

/// `e` may follow `elems`: no earlier than the last of them.
fn in_order(elems: &[Element], e: &Element) -> Result<(), Error> {
    match elems.last() {
        Some(last) if last.1 > e.1 => Err(Error::input(format!("element at {} is earlier than the last retained one", e.1))),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::conditions::engine::tests::rising_run;
    use crate::exact::window::tests::{absence, brute_closed, RawEv};
    use proptest::prelude::*;

    fn element(&(letter, t, v, p): &(usize, i64, u64, Option<i64>)) -> Element {
        (letter, t, v, vec![p.map_or(Value::Null, Value::Int)].into())
    }

    /// Per state of the rising run (`A B+ C`: 0 start, 1 after A, 2 after a B, 3 final), the
    /// (count, sum) of the index sets of `elems` that spell a prefix of a word, satisfy the
    /// conditions, lie in the window and whose first element is in the window at `now`: by
    /// enumeration.
    fn brute_partials(elems: &[Element], window: i64, now: i64) -> Vec<(BigInt, BigInt)> {
        let mut out = vec![(BigInt::default(), BigInt::default()); 4];
        let p = |e: &Element| match e.3[0] {
            Value::Int(x) => Some(x),
            _ => None,
        };
        for mask in 1u32..(1 << elems.len()) {
            let set: Vec<&Element> = (0..elems.len()).filter(|i| mask >> i & 1 == 1).map(|i| &elems[i]).collect();
            let (first, last) = (set[0].1, set[set.len() - 1].1);
            if last - first > window || now - first > window {
                continue;
            }
            let (mut q, mut last_b): (usize, Option<&Element>) = (0, None);
            let mut ok = true;
            for e in &set {
                let moved = match (q, e.0) {
                    (0, 0) => Some(1),
                    (1 | 2, 1) => last_b.is_none_or(|b| p(b).is_none() || matches!((p(e), p(b)), (Some(x), Some(y)) if x > y)).then_some(2),
                    (2, 2) => matches!((p(e), last_b.and_then(p)), (Some(x), Some(y)) if x < y).then_some(3),
                    _ => None,
                };
                match moved {
                    Some(to) => q = to,
                    None => ok = false,
                }
                if !ok {
                    break;
                }
                if e.0 == 1 {
                    last_b = Some(e);
                }
            }
            if ok {
                out[q].0 += 1;
                out[q].1 += set.iter().map(|e| e.2).sum::<u64>();
            }
        }
        out
    }

    /// The same for `A B+ !C` (0 start, 1 after A or refuted by a C, 2 pending, 3 closed):
    /// sets of A and B elements spelling `A B*`, in state 2 when no C comes after their last
    /// element, else 1.
    fn brute_closing_partials(elems: &[Element], window: i64, now: i64) -> Vec<(BigInt, BigInt)> {
        let mut out = vec![(BigInt::default(), BigInt::default()); 4];
        let letters: Vec<usize> = (0..elems.len()).filter(|&i| elems[i].0 != 2).collect();
        for mask in 1u32..(1 << letters.len()) {
            let idx: Vec<usize> = (0..letters.len()).filter(|i| mask >> i & 1 == 1).map(|i| letters[i]).collect();
            let (first, last) = (idx[0], idx[idx.len() - 1]);
            let shape = elems[first].0 == 0 && idx[1..].iter().all(|&i| elems[i].0 == 1);
            if !shape || elems[last].1 - elems[first].1 > window || now - elems[first].1 > window {
                continue;
            }
            let refuted = elems[last + 1..].iter().any(|e| e.0 == 2);
            let q = if idx.len() == 1 || refuted { 1 } else { 2 };
            out[q].0 += 1;
            out[q].1 += idx.iter().map(|&i| elems[i].2).sum::<u64>();
        }
        out
    }

    fn minus(a: &[(BigInt, BigInt)], b: &[(BigInt, BigInt)]) -> Vec<(BigInt, BigInt)> {
        a.iter().zip(b).map(|(x, y)| (&x.0 - &y.0, &x.1 - &y.1)).collect()
    }

    fn counts(spec: &Spec, elems: &[Element]) -> (BigUint, BigUint) {
        let mut engine = Engine::new(spec.clone()).unwrap();
        for e in elems {
            engine.feed(Some(e.0), e.1, e.2, e.3.clone()).unwrap();
        }
        (engine.totals().matches.c.to_biguint(), engine.totals().matches.s.to_biguint())
    }

    /// Removals (even steps) and evictions of the newest element into its own place at the end
    /// (odd steps), at positions taken modulo the size; `check` sees each eviction's result
    /// and the totals before the element joined.
    fn remove_and_evict<E: Recount>(
        retained: &mut Retained<E>,
        removals: Vec<usize>,
        mut check: impl FnMut(&Retained<E>, Totals) -> Result<(), TestCaseError>,
    ) -> Result<(), TestCaseError> {
        for (k, r) in removals.into_iter().enumerate() {
            if retained.is_empty() {
                continue;
            }
            let p = r % retained.len();
            if k % 2 == 0 {
                retained.remove(&[p]).unwrap();
            } else {
                let newest = retained.elements().last().unwrap().clone();
                let before = retained.replace(&[p], newest).unwrap();
                check(retained, before)?;
            }
        }
        Ok(())
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(150))]
        /// After pushes and removals the totals equal a fresh engine over the elements left,
        /// and `through` equals the difference of two fresh counts per element.
        #[test]
        fn counts_equal_a_recount_and_through_is_the_difference(
            raw in proptest::collection::vec((0usize..3, 0i64..3, 0u64..5, proptest::option::weighted(0.85, 0i64..4)), 0..10),
            removals in proptest::collection::vec(0usize..10, 0..4),
            window in 0i64..6,
            later in 0i64..4,
            next in (0usize..3, 0i64..3, 0u64..5, proptest::option::weighted(0.85, 0i64..4)),
        ) {
            let spec = rising_run(window, true);
            let mut t = 0;
            let elems: Vec<Element> = raw.iter().map(|&(l, gap, v, p)| { t += gap; element(&(l, t, v, p)) }).collect();
            let mut retained = Retained::new(spec.clone()).unwrap();
            for e in &elems {
                retained.push(e.clone()).unwrap();
            }
            remove_and_evict(&mut retained, removals, |retained, before| {
                let mut kept = retained.elements().to_vec();
                kept.pop();
                prop_assert_eq!((before.matches.c.to_biguint(), before.matches.s.to_biguint()), counts(&spec, &kept));
                Ok(())
            })?;
            let left = retained.elements().to_vec();
            let all = counts(&spec, &left);
            let got = retained.totals();
            prop_assert_eq!((got.matches.c.to_biguint(), got.matches.s.to_biguint()), all.clone());
            let last = left.last().map_or(0, |e| e.1);
            let now = last + later;
            let through = retained.through(Some(now)).unwrap();
            prop_assert_eq!(retained.through(None).unwrap().iter().map(|th| th.matches.clone()).collect::<Vec<_>>(), through.iter().map(|th| th.matches.clone()).collect::<Vec<_>>());
            let partials = brute_partials(&left, window, now);
            for (i, th) in through.iter().enumerate() {
                let mut without = left.clone();
                without.remove(i);
                let rest = counts(&spec, &without);
                prop_assert_eq!(th.matches.clone(), (BigInt::from(&all.0 - &rest.0), BigInt::from(&all.1 - &rest.1)));
                prop_assert_eq!(&th.partial, &minus(&partials, &brute_partials(&without, window, now)), "element {}", i);
            }
            // a new element's gain: its matches and partial matches, by enumeration
            let e = element(&(next.0, last + next.1, next.2, next.3));
            let gain = retained.gain(&e, e.1 + later).unwrap();
            let mut with = left.clone();
            with.push(e.clone());
            let more = counts(&spec, &with);
            prop_assert_eq!(gain.matches, (BigInt::from(&more.0 - &all.0), BigInt::from(&more.1 - &all.1)));
            prop_assert_eq!(gain.partial, minus(&brute_partials(&with, window, e.1 + later), &brute_partials(&left, window, e.1 + later)));
        }

        /// With a negation at the end (`A B+ !C`, letters 0, 1, 2): after pushes and removals,
        /// every evaluation equals the brute force of the closing rule over the elements left,
        /// and `through` (negative for a C) equals the difference of two brute-force counts.
        #[test]
        fn closing_counts_equal_brute_force_after_removals(
            raw in proptest::collection::vec((0usize..3, 0i64..3, 0u64..5), 0..10),
            removals in proptest::collection::vec(0usize..10, 0..4),
            window in 0i64..5,
        ) {
            let mut t = 0;
            let elems: Vec<Element> = raw.iter().map(|&(l, gap, v)| { t += gap; (l, t, v, Box::default()) }).collect();
            let dfa = absence();
            let mut retained = Retained::over(ClosingCount::new(dfa.clone(), window, Closing::new(&dfa, vec![2], 3).unwrap()).unwrap());
            let brute = |elems: &[Element], at: Option<i64>| {
                let raw: Vec<RawEv> = elems.iter().map(|e| (b"ABC"[e.0], e.1, e.2)).collect();
                let (c, s) = brute_closed(&raw, window, at);
                (BigInt::from(c), BigInt::from(s))
            };
            let signed = |t: &Totals| (BigInt::from(t.matches.c.to_biguint()), BigInt::from(t.matches.s.to_biguint()));
            for e in &elems {
                retained.push(e.clone()).unwrap();
                prop_assert_eq!(signed(&retained.totals_at(Some(e.1)).unwrap()), brute(retained.elements(), Some(e.1)));
            }
            remove_and_evict(&mut retained, removals, |_, _| Ok(()))?;
            let left = retained.elements().to_vec();
            let last = left.last().map_or(0, |e| e.1);
            for at in last..=last + window + 1 {
                prop_assert_eq!(signed(&retained.totals_at(Some(at)).unwrap()), brute(&left, Some(at)), "at {}", at);
            }
            let all = brute(&left, None);
            prop_assert_eq!(signed(&retained.totals_at(None).unwrap()), all.clone());
            let now = last + window / 2;
            let partials = brute_closing_partials(&left, window, now);
            for (i, th) in retained.through(Some(now)).unwrap().iter().enumerate() {
                let mut without = left.clone();
                without.remove(i);
                let rest = brute(&without, None);
                prop_assert_eq!(th.matches.clone(), (&all.0 - &rest.0, &all.1 - &rest.1), "element {}", i);
                prop_assert_eq!(&th.partial, &minus(&partials, &brute_closing_partials(&without, window, now)), "element {}", i);
            }
        }
    }

    /// Pushes, removals of the oldest elements (one or two, as `time_to_live` does) and
    /// evictions of them (`ops`: element and operation); after each, `state` of the engine that
    /// forgot them without a replay equals that of a replay of the elements left, and the
    /// totals before an eviction's element joined are those of the elements left.
    fn forget_like_a_replay<E: Recount, T: PartialEq + std::fmt::Debug>(
        mut retained: Retained<E>,
        ops: Vec<(Element, usize)>,
        state: impl Fn(&E) -> T,
    ) -> Result<(), TestCaseError> {
        for (e, op) in ops {
            let n = retained.len();
            match op {
                2 if n > 0 => retained.remove(&[0]).unwrap(),
                3 if n > 1 => retained.remove(&[1, 0]).unwrap(),
                4 | 5 if n > 1 => {
                    let gone: &[usize] = if op == 4 { &[0] } else { &[1, 0] };
                    let before = retained.replace(gone, e).unwrap();
                    let kept = &retained.elements()[..retained.len() - 1];
                    prop_assert_eq!(before, retained.replayed(kept).unwrap().counted());
                }
                _ => retained.push(e).unwrap(),
            }
            prop_assert_eq!(state(&retained.engine), state(&retained.replayed(retained.elements()).unwrap()));
        }
        Ok(())
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(300))]
        /// The conditions engine forgets its oldest elements as a replay of the rest counts
        /// them: totals, counts by state and registers, held events.
        #[test]
        fn forgetting_the_oldest_equals_a_replay(
            raw in proptest::collection::vec((0usize..3, 0i64..3, 0u64..5, proptest::option::weighted(0.85, 0i64..4), 0usize..6), 0..18),
            window in 0i64..6,
            indexed in proptest::bool::ANY,
        ) {
            let mut t = 0;
            let ops = raw.into_iter().map(|(l, gap, v, p, op)| { t += gap; (element(&(l, t, v, p)), op) }).collect();
            forget_like_a_replay(Retained::new(rising_run(window, indexed)).unwrap(), ops, Engine::state)?;
        }

        /// With a negation at the end (`A B+ !C`): the window forgets its oldest elements as a
        /// replay of the rest counts them: totals, active sets, raw window, every evaluation.
        #[test]
        fn a_closing_window_forgets_the_oldest_like_a_replay(
            raw in proptest::collection::vec((0usize..3, 0i64..3, 0u64..5, 0usize..6), 0..18),
            window in 0i64..5,
        ) {
            let mut t = 0;
            let ops: Vec<_> = raw.into_iter().map(|(l, gap, v, op)| { t += gap; ((l, t, v, Box::default()), op) }).collect();
            let dfa = absence();
            let blank = ClosingCount::new(dfa.clone(), window, Closing::new(&dfa, vec![2], 3).unwrap()).unwrap();
            let last = t;
            forget_like_a_replay(Retained::over(blank), ops, |c: &ClosingCount| {
                let evaluations: Vec<Totals> = (0..=last + window + 1).map(Some).chain([None]).map(|at| c.totals_at(at).unwrap()).collect();
                (c.state(), evaluations)
            })?;
        }
    }

    #[test]
    fn minmax_is_replayed() {
        let mut spec = rising_run(5, true);
        spec.extrema = Some(vec![true, true, true]);
        let mut engine = Engine::new(spec).unwrap();
        let fed: Vec<Element> = (0..3).map(|i| element(&(i, i as i64, 1, Some(4 - i as i64)))).collect();
        for e in &fed {
            Recount::feed(&mut engine, e).unwrap();
        }
        assert!(!engine.forget_first(&fed).unwrap());
        assert_eq!(engine.totals().extrema, Some((1, 1)));
    }

    #[test]
    fn a_closing_element_must_be_a_letter_without_attributes() {
        let dfa = absence();
        let mut retained = Retained::over(ClosingCount::new(dfa.clone(), 3, Closing::new(&dfa, vec![2], 3).unwrap()).unwrap());
        assert!(retained.push((3, 0, 1, Box::default())).is_err());
        assert!(retained.push((0, 0, 1, vec![Value::Int(1)].into())).is_err());
        assert!(retained.is_empty());
        assert!(ClosingCount::new(dfa.clone(), -1, Closing::new(&dfa, vec![2], 3).unwrap()).is_err());
    }

    #[test]
    fn an_element_out_of_order_or_a_bad_position_changes_nothing() {
        let mut retained = Retained::new(rising_run(5, true)).unwrap();
        retained.push(element(&(0, 3, 1, Some(1)))).unwrap();
        assert!(retained.push(element(&(1, 2, 1, Some(1)))).is_err());
        assert!(retained.remove(&[1]).is_err());
        assert!(retained.remove(&[0, 0]).is_err());
        assert!(retained.replace(&[], element(&(1, 2, 1, Some(1)))).is_err());
        assert!(retained.replace(&[3], element(&(1, 4, 1, Some(1)))).is_err());
        assert_eq!(retained.len(), 1);
    }
}
