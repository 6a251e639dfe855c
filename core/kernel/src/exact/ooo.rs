//! Out-of-order events and retraction in front of an in-order engine (`lateness = L`).
//!
//! Events at or before the horizon h = (largest timestamp seen) − L are final: a new arrival
//! has a timestamp ≥ h and sorts after them (ties go by arrival). They are fed once, in order,
//! to `done`, the unchanged two-stacks engine (`window.rs`). Newer events wait in `recent`,
//! sorted by (timestamp, arrival); a late one is placed by binary search, a retraction
//! removes one. A read-out is `done` followed by `recent`: `live` caches it and follows the
//! arrivals as long as they come in order and are read, so in-order input with a read-out per
//! event costs two pushes per event and no copy; a late arrival or a retraction drops the
//! cache and the next read-out rebuilds it (a copy of `done` plus a replay of `recent`).
//!
//! Why not a tree of step-matrix products over `recent`: the engine's result is the running
//! total of the matches formed by every element, and the matches an element forms depend on
//! which initiators are still within τ of *that* element. A late element therefore changes the
//! totals by a sum over (initiator, last element) pairs constrained by the window, which is not
//! a product over the recent part (it is one only without expiry). docs/ENGINE.md has the
//! details and the measurements.
use crate::engine::batch::Raw;
use crate::engine::ExactEngine;
use crate::engine::error::Error;
use std::borrow::Cow;
use std::collections::VecDeque;

/// An in-order engine that can be copied and fed raw events.
pub trait Replay: Clone {
    fn feed_raw(&mut self, byte: u8, t: i64, v: u64) -> Result<(), Error>;
}

impl Replay for ExactEngine {
    fn feed_raw(&mut self, byte: u8, t: i64, v: u64) -> Result<(), Error> {
        let raw = Raw::classify(self.dfa(), byte, t, v);
        self.feed(raw)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Pending {
    pub t: i64,
    pub byte: u8,
    pub v: u64,
}

/// What a retraction did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Retracted {
    Removed,
    /// At or before the horizon (or nothing seen yet): final, cannot be taken back.
    Final,
    /// No such event is pending.
    Missing,
}

#[derive(Clone)]
pub struct OutOfOrder<E: Replay> {
    lateness: i64,
    done: E,
    recent: VecDeque<Pending>,
    live: Option<E>,
    /// In-order pushes into `live` since the last read-out; past the length of `recent` the
    /// cache is dropped (rebuilding it then costs less than following a stream nobody reads).
    since_readout: usize,
    max_ts: Option<i64>,
}

impl<E: Replay> OutOfOrder<E> {
    pub fn new(engine: E, lateness: i64) -> Result<Self, Error> {
        if lateness < 0 {
            return Err(Error::input(format!("lateness must be non-negative, got {lateness}")));
        }
        Ok(OutOfOrder { lateness, done: engine, recent: VecDeque::new(), live: None, since_readout: 0, max_ts: None })
    }

    /// An engine as it was: `done` fed the final events, the largest timestamp seen and the
    /// pending events in (timestamp, arrival) order (a pickled `suse.Exact`).
    pub fn resume(done: E, lateness: i64, max_ts: Option<i64>, pending: &[Pending]) -> Result<Self, Error> {
        let mut me = OutOfOrder::new(done, lateness)?;
        me.max_ts = max_ts;
        let h = me.horizon();
        if pending.iter().any(|p| max_ts.is_none_or(|m| p.t > m) || h.is_some_and(|h| p.t <= h)) || pending.windows(2).any(|w| w[1].t < w[0].t) {
            return Err(Error::State("saved pending events do not lie in order between the horizon and the largest timestamp".into()));
        }
        me.recent = pending.iter().copied().collect();
        Ok(me)
    }

    pub fn lateness(&self) -> i64 {
        self.lateness
    }

    pub fn max_timestamp(&self) -> Option<i64> {
        self.max_ts
    }

    /// h = max − L, clamped to the smallest timestamp.
    pub fn horizon(&self) -> Option<i64> {
        self.max_ts.map(|m| ((m as i128) - (self.lateness as i128)).max(i64::MIN as i128) as i64)
    }

    /// The events newer than the horizon, in (timestamp, arrival) order.
    pub fn pending(&self) -> impl Iterator<Item = &Pending> {
        self.recent.iter()
    }

    /// The engine fed the final events only.
    pub fn done(&self) -> &E {
        &self.done
    }

    fn is_late(&self, t: i64, max: Option<i64>) -> bool {
        max.is_some_and(|m| (m as i128) - (t as i128) > self.lateness as i128)
    }

    /// Accept one event not older than the horizon.
    pub fn push(&mut self, byte: u8, t: i64, v: u64) -> Result<(), Error> {
        if self.is_late(t, self.max_ts) {
            return Err(Error::input(format!("timestamp {t} is earlier than the horizon {}", self.horizon().unwrap_or(t))));
        }
        self.max_ts = Some(self.max_ts.map_or(t, |m| m.max(t)));
        let h = self.horizon().unwrap_or(t);
        if self.recent.is_empty() && t <= h {
            // Final at once (always so with L = 0): the plain engine, nothing cached.
            if self.live.is_some() {
                self.live = None;
            }
            return self.done.feed_raw(byte, t, v);
        }
        let at = self.recent.partition_point(|p| p.t <= t);
        let ev = Pending { t, byte, v };
        if at == self.recent.len() {
            self.recent.push_back(ev);
            if let Some(live) = &mut self.live {
                self.since_readout += 1;
                // past the cost of a rebuild (a replay of `recent`), following is the worse bet
                if self.since_readout > self.recent.len() {
                    self.live = None;
                } else {
                    live.feed_raw(byte, t, v)?;
                }
            }
        } else {
            self.recent.insert(at, ev);
            self.live = None;
        }
        self.flush()
    }

    /// Feed `done` the events the horizon has passed.
    fn flush(&mut self) -> Result<(), Error> {
        let Some(h) = self.horizon() else { return Ok(()) };
        while self.recent.front().is_some_and(|p| p.t <= h) {
            let p = self.recent.pop_front().expect("checked non-empty");
            self.done.feed_raw(p.byte, p.t, p.v)?;
        }
        if self.recent.is_empty() {
            self.live = None; // it equals `done` now
        }
        Ok(())
    }

    /// Take back the latest-arriving pending event equal to (byte, t, v).
    pub fn retract(&mut self, byte: u8, t: i64, v: u64) -> Retracted {
        match self.horizon() {
            Some(h) if t > h => {}
            _ => return Retracted::Final,
        }
        let (lo, hi) = (self.recent.partition_point(|p| p.t < t), self.recent.partition_point(|p| p.t <= t));
        match (lo..hi).rev().find(|&i| self.recent[i].byte == byte && self.recent[i].v == v) {
            Some(i) => {
                self.recent.remove(i);
                self.live = None;
                Retracted::Removed
            }
            None => Retracted::Missing,
        }
    }

    /// The engine fed every accepted event, owned: a copy of the cached read-out, or `done`
    /// followed by a replay of `recent`. One copy, and the cache is left as it is (building it
    /// here would cost a second copy, and following it costs a second feed of every arrival).
    pub fn settled(&self) -> Result<E, Error> {
        if let Some(live) = &self.live {
            return Ok(live.clone());
        }
        let mut e = self.done.clone();
        for p in &self.recent {
            e.feed_raw(p.byte, p.t, p.v)?;
        }
        Ok(e)
    }

    /// The engine fed every accepted event with a timestamp ≤ `upto` (all with `None`), in
    /// (timestamp, arrival) order.
    pub fn readout(&mut self, upto: Option<i64>) -> Result<Cow<'_, E>, Error> {
        let k = upto.map_or(self.recent.len(), |u| self.recent.partition_point(|p| p.t <= u));
        if k == 0 {
            return Ok(Cow::Borrowed(&self.done));
        }
        let replay = |upto: usize, recent: &VecDeque<Pending>, done: &E| -> Result<E, Error> {
            let mut e = done.clone();
            for p in recent.iter().take(upto) {
                e.feed_raw(p.byte, p.t, p.v)?;
            }
            Ok(e)
        };
        if k < self.recent.len() {
            return Ok(Cow::Owned(replay(k, &self.recent, &self.done)?));
        }
        self.since_readout = 0;
        if self.live.is_none() {
            self.live = Some(replay(k, &self.recent, &self.done)?);
        }
        Ok(Cow::Borrowed(self.live.as_ref().expect("just built")))
    }

    /// Process a batch in arrival order; `snap(engine, T)` is taken for each evaluation time T
    /// (increasing, not earlier than the horizon) just before the first event that lifts the
    /// largest timestamp above T + L, or after the batch, on the events up to T. The whole
    /// batch is checked before anything changes.
    pub fn extend<Row>(
        &mut self,
        chars: &[u8],
        ts: &[i64],
        vals: Option<&[i64]>,
        evals: &[i64],
        snap: impl Fn(&E, i64) -> Row,
    ) -> Result<Vec<Row>, Error> {
        crate::engine::batch::Batch::unordered(chars, ts, vals)?; // lengths and values
        crate::engine::batch::check_evals(evals)?;
        if let (Some(&first), Some(h)) = (evals.first(), self.horizon()) {
            if first < h {
                return Err(Error::input(format!(
                    "evaluation time {first} is earlier than the horizon {h} (largest timestamp seen {} - lateness {}): the events before it are final and the result at that time is no longer kept",
                    self.max_ts.unwrap_or(h),
                    self.lateness
                )));
            }
        }
        let mut top = self.max_ts;
        for (i, &t) in ts.iter().enumerate() {
            if self.is_late(t, top) {
                return Err(Error::input(format!("event {i}: timestamp {t} is earlier than the horizon {}", top.unwrap_or(t) as i128 - self.lateness as i128)));
            }
            top = Some(top.map_or(t, |m| m.max(t)));
        }
        let cuts = evaluation_cuts(self.max_ts, self.lateness, ts, evals);
        let mut rows = Vec::with_capacity(evals.len());
        let mut next = 0;
        for i in 0..=ts.len() {
            while next < evals.len() && cuts[next] == i {
                rows.push(snap(&*self.readout(Some(evals[next]))?, evals[next]));
                next += 1;
            }
            if i < ts.len() {
                self.push(chars[i], ts[i], vals.map_or(1, |v| v[i] as u64))?;
            }
        }
        Ok(rows)
    }
}

/// Where each evaluation time T of a batch (increasing) is taken under lateness L, as the
/// number of the batch's events before it: just before the first event that lifts the largest
/// timestamp seen (`max_ts` before the batch) above T + L, or after the batch. Then every event
/// with a timestamp <= T that can still come without being late is in. The buffered layer
/// (`OutOfOrder::extend`) and a summary inserting late events at their place share this rule.
pub fn evaluation_cuts(max_ts: Option<i64>, lateness: i64, ts: &[i64], evals: &[i64]) -> Vec<usize> {
    let mut cuts = Vec::with_capacity(evals.len());
    let mut top = max_ts;
    for (i, &t) in ts.iter().enumerate() {
        let lifted = top.map_or(t, |m| m.max(t)) as i128;
        while cuts.len() < evals.len() && lifted > evals[cuts.len()] as i128 + lateness as i128 {
            cuts.push(i);
        }
        top = Some(lifted as i64);
    }
    cuts.resize(evals.len(), ts.len());
    cuts
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::automaton::dfa::tests::{letter_negated, negation, paper};
    use crate::automaton::dfa::Dfa;
    use crate::engine::limits::Limits;
    use crate::automaton::semantics::Policy;
    use crate::exact::window::tests::{brute_runs, brute_sets, RawEv};
    use num_bigint::BigUint;
    use proptest::prelude::*;
    use std::sync::Arc;

    fn engine(dfa: &Arc<Dfa>, tau: i64, p: Policy) -> ExactEngine {
        ExactEngine::new(dfa.clone(), tau, p, &Limits::default()).unwrap()
    }

    fn sorted_totals(dfa: &Arc<Dfa>, tau: i64, p: Policy, raw: &[RawEv]) -> (BigUint, BigUint, BigUint) {
        let mut e = engine(dfa, tau, p);
        for &(b, t, v) in raw {
            e.feed_raw(b, t, v).unwrap();
        }
        e.totals()
    }

    /// A stream whose arrival order moves events back by at most `lateness` time units (each
    /// event is not older than the largest timestamp before it − L), with retractions of
    /// pending events mixed in: `(arrival, retracted arrival indices in arrival order)`.
    fn disordered() -> impl Strategy<Value = (Arc<Dfa>, Vec<RawEv>, i64, Vec<prop::sample::Index>, Vec<u8>)> {
        (
            crate::exact::window::tests::case(),
            0i64..6,
            proptest::collection::vec(any::<prop::sample::Index>(), 0..20),
            proptest::collection::vec(0u8..4, 0..20),
        )
            .prop_map(|((dfa, raw), l, swaps, kinds)| (dfa, raw, l, swaps, kinds))
    }

    /// Shuffle `raw` (sorted) by random adjacent-ish moves that keep every event within the
    /// lateness bound of the running maximum.
    fn permute(raw: &[RawEv], l: i64, picks: &[prop::sample::Index]) -> Vec<RawEv> {
        let mut out = raw.to_vec();
        for p in picks {
            if out.len() < 2 {
                break;
            }
            let i = p.index(out.len() - 1);
            let mut cand = out.clone();
            cand.swap(i, i + 1);
            if ok(&cand, l) {
                out = cand;
            }
        }
        out
    }

    fn ok(arrival: &[RawEv], l: i64) -> bool {
        let mut top: Option<i64> = None;
        arrival.iter().all(|&(_, t, _)| {
            let fine = top.is_none_or(|m| m - t <= l);
            top = Some(top.map_or(t, |m| m.max(t)));
            fine
        })
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 300, ..ProptestConfig::default() })]

        /// Results equal the sorted, retraction-free stream (and brute force over it), after
        /// every arrival, with read-outs at random moments, for every policy.
        #[test]
        fn equals_the_sorted_stream((dfa, raw, l, picks, kinds) in disordered(), tau in 0i64..8) {
            let arrival = permute(&raw, l, &picks);
            for p in Policy::ALL {
                let mut o = OutOfOrder::new(engine(&dfa, tau, p), l).unwrap();
                let mut kept: Vec<(usize, RawEv)> = Vec::new();
                for (i, &(b, t, v)) in arrival.iter().enumerate() {
                    o.push(b, t, v).unwrap();
                    kept.push((i, (b, t, v)));
                    let kind = kinds.get(i).copied().unwrap_or(0);
                    if kind == 1 {
                        // retract the latest-arriving equal pending event, if any is pending
                        let h = o.horizon().unwrap();
                        if let Some(pos) = kept.iter().rposition(|&(_, (b2, t2, _))| t2 > h && b2 == b) {
                            let (_, (rb, rt, rv)) = kept[pos];
                            let latest = kept.iter().rposition(|&(_, e)| e == (rb, rt, rv)).unwrap();
                            prop_assert_eq!(o.retract(rb, rt, rv), Retracted::Removed);
                            kept.remove(latest);
                        }
                    }
                    if kind >= 2 {
                        let mut sorted: Vec<RawEv> = kept.iter().map(|&(_, e)| e).collect();
                        sorted.sort_by_key(|e| e.1); // stable: arrival among equal times
                        prop_assert_eq!(o.readout(None).unwrap().totals(), sorted_totals(&dfa, tau, p, &sorted));
                    }
                }
                let mut sorted: Vec<RawEv> = kept.iter().map(|&(_, e)| e).collect();
                sorted.sort_by_key(|e| e.1);
                prop_assert_eq!(o.settled().unwrap().totals(), sorted_totals(&dfa, tau, p, &sorted));
                let got = o.readout(None).unwrap().totals();
                prop_assert_eq!(&got, &sorted_totals(&dfa, tau, p, &sorted));
                prop_assert_eq!(o.settled().unwrap().totals(), got.clone(), "from the cache");
                let (c, s) = match p {
                    Policy::Any => brute_sets(&dfa, tau, crate::automaton::dfa::Skip::Keep, &sorted),
                    Policy::Contiguous => brute_sets(&dfa, tau, crate::automaton::dfa::Skip::Kill, &sorted),
                    Policy::Next => brute_runs(&dfa, tau, &sorted),
                };
                prop_assert_eq!((got.0, got.1), (BigUint::from(c), BigUint::from(s)), "{:?}", p);
            }
        }

        /// An evaluation at T equals the sorted stream cut at T.
        #[test]
        fn evaluations_cover_the_events_up_to_their_time((dfa, raw, l, picks, _k) in disordered(), tau in 0i64..8, at in 0i64..30) {
            let arrival = permute(&raw, l, &picks);
            let chars: Vec<u8> = arrival.iter().map(|e| e.0).collect();
            let ts: Vec<i64> = arrival.iter().map(|e| e.1).collect();
            let vals: Vec<i64> = arrival.iter().map(|e| e.2 as i64).collect();
            let mut o = OutOfOrder::new(engine(&dfa, tau, Policy::Any), l).unwrap();
            let rows = o.extend(&chars, &ts, Some(&vals), &[at], |e, t| (t, e.totals())).unwrap();
            let mut sorted: Vec<RawEv> = arrival.iter().copied().filter(|e| e.1 <= at).collect();
            sorted.sort_by_key(|e| e.1);
            prop_assert_eq!(&rows[0].1, &sorted_totals(&dfa, tau, Policy::Any, &sorted));
        }
    }

    proptest! {
        /// Each evaluation's cut is the first event lifting the running maximum above T + L
        /// (counted without overflow), or the end of the batch.
        #[test]
        fn cuts_follow_the_running_maximum(
            before in proptest::option::of(-5i64..20),
            ts in proptest::collection::vec(-5i64..25, 0..12),
            mut evals in proptest::collection::vec(-10i64..30, 0..5),
            l in 0i64..6,
        ) {
            evals.sort();
            let cuts = evaluation_cuts(before, l, &ts, &evals);
            for (&e, &cut) in evals.iter().zip(&cuts) {
                let mut top = before;
                let want = ts.iter().position(|&t| {
                    top = Some(top.map_or(t, |m| m.max(t)));
                    top.unwrap() > e + l
                }).unwrap_or(ts.len());
                prop_assert_eq!(cut, want);
            }
        }
    }

    #[test]
    fn cuts_at_the_ends_of_the_integers() {
        assert_eq!(evaluation_cuts(None, 5, &[i64::MAX, i64::MAX], &[i64::MAX - 1]), vec![2]);
        assert_eq!(evaluation_cuts(Some(i64::MIN), 0, &[i64::MIN + 1], &[i64::MIN]), vec![0]);
    }

    #[test]
    fn retraction_errors_change_nothing() {
        let dfa = Arc::new(paper());
        let mut o = OutOfOrder::new(engine(&dfa, 5, Policy::Any), 3).unwrap();
        assert_eq!(o.retract(b'a', 1, 1), Retracted::Final, "nothing seen yet");
        for (b, t) in [(b'a', 1), (b'b', 5), (b'a', 4), (b'c', 6)] {
            o.push(b, t, 1).unwrap();
        }
        let before = o.readout(None).unwrap().totals();
        assert_eq!(o.retract(b'a', 1, 1), Retracted::Final, "1 <= horizon 3");
        assert_eq!(o.retract(b'a', 4, 2), Retracted::Missing, "other value");
        assert_eq!(o.readout(None).unwrap().totals(), before);
        assert_eq!(o.retract(b'a', 4, 1), Retracted::Removed);
        assert_eq!(o.readout(None).unwrap().totals(), sorted_totals(&dfa, 5, Policy::Any, &[(b'a', 1, 1), (b'b', 5, 1), (b'c', 6, 1)]));
        assert!(o.push(b'a', 2, 1).is_err(), "older than the horizon");
        assert!(o.extend(b"ab", &[9, 1], None, &[], |_, _| ()).is_err());
        assert_eq!(o.max_timestamp(), Some(6), "a refused batch changes nothing");
        assert!(o.extend(b"", &[], None, &[2], |_, _| ()).is_err(), "evaluation before the horizon");
    }

    #[test]
    fn long_streams_with_late_events_and_retractions() {
        // hundreds of events in windows of hundreds: errors in the bookkeeping show up here
        for dfa in [Arc::new(paper()), Arc::new(negation()), Arc::new(letter_negated())] {
            let bytes = b"abcdegx";
            let mut x: u64 = 7;
            let mut rnd = move || {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                x
            };
            let l = 40;
            let mut arrival = Vec::new();
            let mut top = 0i64;
            for _ in 0..600 {
                top += (rnd() % 3) as i64;
                let t = if rnd() % 10 == 0 { top - (rnd() % (l as u64 + 1)) as i64 } else { top };
                arrival.push((bytes[(rnd() % bytes.len() as u64) as usize], t, rnd() % 4));
            }
            for p in Policy::ALL {
                let mut o = OutOfOrder::new(engine(&dfa, 300, p), l).unwrap();
                let mut kept: Vec<RawEv> = Vec::new();
                for (i, &(b, t, v)) in arrival.iter().enumerate() {
                    o.push(b, t, v).unwrap();
                    kept.push((b, t, v));
                    if i % 7 == 0 {
                        let h = o.horizon().unwrap();
                        if let Some(pos) = kept.iter().rposition(|e| e.1 > h) {
                            let e = kept.remove(pos);
                            assert_eq!(o.retract(e.0, e.1, e.2), Retracted::Removed);
                        }
                    }
                    if i % 50 == 0 {
                        let mut sorted = kept.clone();
                        sorted.sort_by_key(|e| e.1);
                        assert_eq!(o.readout(None).unwrap().totals(), sorted_totals(&dfa, 300, p, &sorted));
                    }
                }
                let mut sorted = kept.clone();
                sorted.sort_by_key(|e| e.1);
                assert_eq!(o.readout(None).unwrap().totals(), sorted_totals(&dfa, 300, p, &sorted), "{p:?}");
            }
        }
    }
}
