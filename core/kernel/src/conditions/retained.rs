//! The elements a summary with conditions retains, and the exact counts over them
//! (docs/ENGINE.md, "Summaries with conditions").
//!
//! The counts are those of a conditions [`Engine`] fed exactly the retained elements, in time
//! order. Keeping an element feeds it (the engine's cost per event); removing elements
//! replays the rest into a blank engine, O(|S|) feeds, so no state but the elements and one
//! engine over them is ever needed. [`Retained::through`] gives, per element, the matches
//! through it (a summary's present benefit) by difference, in one pass.
use std::collections::VecDeque;

use num_bigint::BigUint;

use super::engine::{Engine, Spec, Totals};
use super::value::Value;
use crate::Error;

/// One retained element: (letter, timestamp, value, attribute values).
pub type Element = (usize, i64, u64, Box<[Value]>);

#[derive(Clone)]
pub struct Retained {
    /// Never fed: what a rebuild starts from.
    blank: Engine,
    elems: Vec<Element>,
    /// Fed exactly `elems`, in order.
    engine: Engine,
}

impl Retained {
    pub fn new(spec: Spec) -> Result<Retained, Error> {
        let blank = Engine::new(spec)?;
        Ok(Retained { engine: blank.clone(), blank, elems: Vec::new() })
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

    /// Over exactly the retained elements.
    pub fn totals(&self) -> &Totals {
        self.engine.totals()
    }

    /// Keep an element no earlier than the retained ones. On an error nothing changes.
    pub fn push(&mut self, e: Element) -> Result<(), Error> {
        in_order(&self.elems, &e)?;
        self.engine.feed(Some(e.0), e.1, e.2, e.3.clone())?; // on an error it counts nothing
        self.elems.push(e);
        Ok(())
    }

    /// Remove the elements at `positions` (any order, no repeats) and recount the rest.
    pub fn remove(&mut self, positions: &[usize]) -> Result<(), Error> {
        let kept = self.without(positions)?;
        self.engine = self.replayed(&kept)?;
        self.elems = kept;
        Ok(())
    }

    /// Remove the elements at `positions` and keep `e` (an eviction), with one recount; the
    /// totals before `e` joined. On an error nothing changes.
    pub fn replace(&mut self, positions: &[usize], e: Element) -> Result<Totals, Error> {
        let mut kept = self.without(positions)?;
        in_order(&kept, &e)?;
        let mut engine = self.replayed(&kept)?;
        let before = engine.totals().clone();
        engine.feed(Some(e.0), e.1, e.2, e.3.clone())?;
        kept.push(e);
        (self.engine, self.elems) = (engine, kept);
        Ok(before)
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

    /// The totals with `e` kept as well (nothing changes).
    pub fn with(&self, e: &Element) -> Result<Totals, Error> {
        let mut engine = self.engine.clone();
        engine.feed(Some(e.0), e.1, e.2, e.3.clone())?;
        Ok(engine.totals().clone())
    }

    fn replayed(&self, elems: &[Element]) -> Result<Engine, Error> {
        let mut engine = self.blank.clone();
        for e in elems {
            engine.feed(Some(e.0), e.1, e.2, e.3.clone())?;
        }
        Ok(engine)
    }

    /// Per retained element, (number, sum of values) of the matches through it:
    /// count(S) − count(S without e). A match through e lies within one window of e, so the
    /// two differ only by what the elements up to t_e + W add: an engine fed the elements
    /// before e is forked, takes the elements after e up to t_e + W, and its totals are
    /// subtracted from the main engine's at the same point. O(Σ_e |elements in (t_e, t_e + W]|)
    /// feeds and |S| forks.
    pub fn through(&self) -> Result<Vec<(BigUint, BigUint)>, Error> {
        let window = self.blank.spec().window as i128;
        let n = self.elems.len();
        let mut main = self.blank.clone();
        let mut after: Vec<Totals> = Vec::with_capacity(n); // main's totals after element k
        let mut open: VecDeque<(usize, Engine)> = VecDeque::new(); // forks without element i
        let mut out = vec![(BigUint::default(), BigUint::default()); n];
        let close = |i: usize, fork: &Engine, with: &Totals, out: &mut Vec<(BigUint, BigUint)>| -> Result<(), Error> {
            let (a, b) = (&with.matches, &fork.totals().matches);
            let (ac, bc, as_, bs) = (a.c.to_biguint(), b.c.to_biguint(), a.s.to_biguint(), b.s.to_biguint());
            if ac < bc || as_ < bs {
                return Err(Error::internal("removing an element added matches"));
            }
            out[i] = (ac - bc, as_ - bs);
            Ok(())
        };
        for (k, e) in self.elems.iter().enumerate() {
            while let Some((i, _)) = open.front() {
                if (e.1 as i128) - (self.elems[*i].1 as i128) <= window {
                    break;
                }
                let (i, fork) = open.pop_front().expect("front exists");
                close(i, &fork, &after[k - 1], &mut out)?;
            }
            for (_, fork) in open.iter_mut() {
                fork.feed(Some(e.0), e.1, e.2, e.3.clone())?;
            }
            open.push_back((k, main.clone()));
            main.feed(Some(e.0), e.1, e.2, e.3.clone())?;
            after.push(main.totals().clone());
        }
        for (i, fork) in open {
            close(i, &fork, &after[n - 1], &mut out)?;
        }
        Ok(out)
    }
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
    use proptest::prelude::*;

    fn element(&(letter, t, v, p): &(usize, i64, u64, Option<i64>)) -> Element {
        (letter, t, v, vec![p.map_or(Value::Null, Value::Int)].into())
    }

    fn counts(spec: &Spec, elems: &[Element]) -> (BigUint, BigUint) {
        let mut engine = Engine::new(spec.clone()).unwrap();
        for e in elems {
            engine.feed(Some(e.0), e.1, e.2, e.3.clone()).unwrap();
        }
        (engine.totals().matches.c.to_biguint(), engine.totals().matches.s.to_biguint())
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
        ) {
            let spec = rising_run(window, true);
            let mut t = 0;
            let elems: Vec<Element> = raw.iter().map(|&(l, gap, v, p)| { t += gap; element(&(l, t, v, p)) }).collect();
            let mut retained = Retained::new(spec.clone()).unwrap();
            for e in &elems {
                retained.push(e.clone()).unwrap();
            }
            for (k, r) in removals.into_iter().enumerate() {
                if retained.is_empty() {
                    continue;
                }
                let p = r % retained.len();
                if k % 2 == 0 {
                    retained.remove(&[p]).unwrap();
                } else {  // an eviction: the newest again, in its place at the end
                    let newest = retained.elements().last().unwrap().clone();
                    let before = retained.replace(&[p], newest).unwrap();
                    let mut kept = retained.elements().to_vec();
                    kept.pop();
                    let c = counts(&spec, &kept);
                    prop_assert_eq!((before.matches.c.to_biguint(), before.matches.s.to_biguint()), c);
                }
            }
            let left = retained.elements().to_vec();
            let all = counts(&spec, &left);
            let got = retained.totals();
            prop_assert_eq!((got.matches.c.to_biguint(), got.matches.s.to_biguint()), all.clone());
            let through = retained.through().unwrap();
            for (i, th) in through.iter().enumerate() {
                let mut without = left.clone();
                without.remove(i);
                let rest = counts(&spec, &without);
                prop_assert_eq!(th.clone(), (&all.0 - &rest.0, &all.1 - &rest.1));
            }
        }
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
