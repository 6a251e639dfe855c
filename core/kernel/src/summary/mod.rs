//! The state summary (paper §5) and summary selection (§6).
//!
//! The summary keeps at most `size` elements in time order, with two kinds of state beside
//! them:
//! * **exact counters** ([`counters`]), never wrapping, held on a promotion [`Ladder`]: what
//!   `result()` reports;
//! * **selection estimates** ([`estimates`], extended-range floats): per element the complete
//!   matches it is part of (the present benefit) and its active local counters. They only
//!   rank elements, so they may carry rounding, and never feed a reported number.
//!
//! Until a summary first has to choose a victim it holds every element it was given, so its
//! counters are the exact window's: it runs the exact engine (O(|Z|·transitions) per
//! element) and keeps no selection state. The first eviction (or anything else that needs
//! that state) replays the retained elements through the full path, which leaves every
//! counter and estimate bit for bit as if they had been kept all along ([`Summary::settle`]).
//!
//! This module is the lifecycle (observe, insert, evict, expire, time-to-live); what differs
//! by selection semantics sits behind [`SummaryPolicy`] (skip-till-any-match in [`any`],
//! skip-till-next-match in [`next`]); the algebra of what an element shares with the others
//! is in [`neighbourhood`]; victim choice behind [`selection::Selector`].
pub mod any;
pub mod benefit;
pub mod counters;
pub mod estimates;
pub mod neighbourhood;
pub mod next;
pub mod selection;

use crate::summary::benefit::{Coefficients, Estimator};
use crate::automaton::dfa::Dfa;
use crate::numbers::dual::{Dual, DualX};
use crate::engine::error::Error;
use crate::automaton::semantics::{expired, Ev, Semantics};
use crate::numbers::tier::Ladder;
use crate::exact::window::ExactWindow;
use crate::numbers::xf::Real;
use counters::{Counters, CountersFamily, Retained};
use estimates::Est;
use num_bigint::BigUint;
use rand::SeedableRng;
use rand_pcg::Pcg64;
use selection::StrategyKind;
use serde::{Deserialize, Serialize};
use std::marker::PhantomData;
use std::sync::Arc;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Aggregate {
    Count,
    Sum,
    Avg,
}

impl Aggregate {
    pub const NAMES: [&'static str; 3] = ["count", "sum", "avg"];
    pub fn parse(s: &str) -> Option<Aggregate> {
        match s {
            "count" => Some(Aggregate::Count),
            "sum" => Some(Aggregate::Sum),
            "avg" => Some(Aggregate::Avg),
            _ => None,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Config {
    pub size: usize,
    pub tau: i64,
    pub strategy: StrategyKind,
    pub aggregate: Aggregate,
    pub time_to_live: Option<i64>,
    /// Alphabet probabilities given by the user (normalised), or `None` to estimate them.
    pub probabilities: Option<Vec<f64>>,
    pub seed: u64,
}

const LATE_INSERT_ONLY: &str = "late elements go in at their place only under policy \"any\" without negation";

/// What differs between selection semantics inside a summary. The exact window algebra
/// comes from [`Semantics`]; these hooks keep the exact counters and estimates in step.
pub trait SummaryPolicy: Semantics {
    /// Whether each retained element keeps its active row `v` (else `v` stays empty).
    const ACTIVE_ROWS: bool;
    /// Whether evicting an element builds up to two |Z|×|Z| matrices per retained element
    /// (the memory limit counts them).
    const EVICTION_MATRICES: bool;
    /// Recompute the active counters (`a`, and `v` where the policy keeps it) from scratch.
    fn rebuild_active<N: crate::numbers::num::Num>(c: &mut Counters<N>, r: &Retained<'_>) -> crate::numbers::num::R<()>;
    /// Append `ev` (the window already moved to it).
    fn insert(s: &mut Summary<Self>, ev: Ev) -> Result<(), Error>;
    /// Evict the element at position `p`.
    fn remove(s: &mut Summary<Self>, p: usize) -> Result<(), Error>;
    /// Put a late element in at position `p` (the elements after it are later), correcting
    /// every counter and estimate. Only skip-till-any-match without negation can: elsewhere
    /// what lies between two elements (their gap) matters and is not known for a late one.
    fn insert_at(_s: &mut Summary<Self>, _p: usize, _ev: Ev) -> Result<(), Error> {
        Err(Error::input(LATE_INSERT_ONLY))
    }
    /// Elements `start..end` left the active window; the hook moves `active_start` to `end`.
    fn expire(s: &mut Summary<Self>, start: usize, end: usize) -> Result<(), Error>;
    /// Bring the estimates up to date before they are read.
    fn refresh_estimates(s: &mut Summary<Self>);
    /// Exact complete matches containing each element, recomputed from scratch (for tests).
    fn exact_locals(s: &Summary<Self>) -> Result<Vec<Dual<BigUint>>, Error>;
}

#[derive(Serialize, Deserialize)]
#[serde(bound = "")]
pub struct Summary<P: SummaryPolicy> {
    pub cfg: Config,
    pub dfa: Arc<Dfa>,
    pub elems: Vec<Ev>,
    pub(crate) exact: Ladder<CountersFamily<P>>,
    pub(crate) est: Est,
    pub(crate) active_start: usize,
    pub now: Option<i64>,
    pub(crate) estimator: Estimator,
    pub(crate) coeffs: Coefficients,
    pub(crate) rng: Pcg64,
    pub events: u64,
    pub skipped: u64,
    /// Elements evicted to make room for a new one.
    pub evictions: u64,
    /// The gap since the last retained element (events and elements not retained).
    pub(crate) pending_gap: u32,
    /// Tests: the slower forms a summary otherwise leaves as soon as it can.
    #[serde(skip)]
    pub(crate) forced: Forced,
    /// While no element has had to go: the exact window over the retained elements, standing
    /// in for the counters and estimates (which are then empty). Never saved: saving settles.
    #[serde(skip)]
    deferred: Option<ExactWindow<P>>,
    /// `adaptive`'s record of the whole stream (|Z| numbers; not saved).
    #[serde(skip)]
    pub(crate) shadow: selection::Shadow,
    #[serde(skip)]
    _policy: PhantomData<P>,
}

impl<P: SummaryPolicy> Clone for Summary<P> {
    fn clone(&self) -> Self {
        Summary {
            cfg: self.cfg.clone(),
            dfa: self.dfa.clone(),
            elems: self.elems.clone(),
            exact: self.exact.clone(),
            est: self.est.clone(),
            active_start: self.active_start,
            now: self.now,
            estimator: self.estimator.clone(),
            coeffs: self.coeffs.clone(),
            rng: self.rng.clone(),
            events: self.events,
            skipped: self.skipped,
            evictions: self.evictions,
            pending_gap: self.pending_gap,
            forced: self.forced,
            deferred: self.deferred.clone(),
            shadow: self.shadow.clone(),
            _policy: PhantomData,
        }
    }
}

/// Forms a summary takes only where it must, forced for tests that compare them with the
/// ones it takes where it can (every one gives the same decisions and values).
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Forced {
    /// Hold the estimates in [`crate::numbers::xf::Xf`] throughout.
    pub wide: bool,
    /// Keep the sums in the estimates under every aggregate.
    pub sums: bool,
    /// Recompute the active local rows and then extend them, never both in one sweep.
    pub unfused: bool,
    /// Run the kernels that read the automaton's size at run time, not the copies compiled
    /// for it ([`crate::with_width!`]).
    pub runtime_width: bool,
}

/// Counters as maintained and as recomputed from the retained elements.
pub type KeptAndFresh = (Vec<Dual<BigUint>>, Vec<Dual<BigUint>>);

/// The reported numbers: the sets per state over the retained elements, and `detected`.
pub struct Readout {
    pub g: Vec<Dual<BigUint>>,
    pub detected: Dual<BigUint>,
}

impl<P: SummaryPolicy> Summary<P> {
    /// The automaton size the kernels are compiled for ([`crate::with_width!`]): its number
    /// of states, or 0 (read at run time) where a test forces that.
    #[inline(always)]
    pub(crate) fn kernel_width(&self) -> usize {
        if self.forced.runtime_width { 0 } else { self.dfa.n }
    }

    pub fn new(dfa: Arc<Dfa>, cfg: Config) -> Summary<P> {
        let estimator = Estimator::new(dfa.k(), cfg.probabilities.clone());
        let coeffs = Coefficients::new(estimator.probabilities(), estimator.mean_values());
        let z = dfa.n;
        let rng = Pcg64::seed_from_u64(cfg.seed);
        let deferred = Some(ExactWindow::new(dfa.clone(), cfg.tau));
        Summary {
            cfg,
            dfa,
            elems: Vec::new(),
            exact: Ladder::U64(Counters::empty(z)),
            est: Est::default(),
            active_start: 0,
            now: None,
            estimator,
            coeffs,
            rng,
            events: 0,
            skipped: 0,
            evictions: 0,
            pending_gap: 0,
            forced: Forced::default(),
            deferred,
            shadow: selection::Shadow::default(),
            _policy: PhantomData,
        }
    }

    /// Whether the summary still defers its selection state (no element has had to go).
    pub fn is_deferred(&self) -> bool {
        self.deferred.is_some()
    }

    /// Build the selection state a deferred summary has not kept, by replaying its elements
    /// through the full path in their order (each after the window moved to it, as when it
    /// arrived): the same operations on the same values, so the same bits. Only the time at
    /// which the estimates widen may differ, and both widths agree on every value.
    pub fn settle(&mut self) -> Result<(), Error> {
        if self.deferred.take().is_none() {
            return Ok(());
        }
        let elems = std::mem::take(&mut self.elems);
        let now = self.now;
        self.exact = Ladder::U64(Counters::empty(self.dfa.n));
        self.est = Est::default();
        self.fit_estimates(); // the form the aggregate needs, even with no element to replay
        self.active_start = 0;
        for ev in elems {
            self.now = Some(ev.t);
            self.fit_estimates();
            self.expire(ev.t)?;
            P::insert(self, ev)?;
        }
        self.now = now;
        Ok(())
    }

    /// A deferred summary's element: count it in the window, keep it.
    fn observe_deferred(&mut self, ev: Ev) -> Result<(), Error> {
        self.events += 1;
        self.now = Some(ev.t);
        self.learn(&ev);
        let ev = Ev { gap: ev.gap | std::mem::take(&mut self.pending_gap), ..ev };
        if let Some(w) = &mut self.deferred {
            w.push(ev)?;
        }
        self.active_start = self.active_end(ev.t);
        self.elems.push(ev);
        Ok(())
    }

    /// `detected`: while deferred, every set ever formed is still held, so the matches in `g`.
    fn detected(&self) -> Dual<BigUint> {
        match &self.deferred {
            Some(w) => self.held_matches(&w.totals_big()),
            None => crate::on_tier!(&self.exact, |p| p.detected.to_big()),
        }
    }

    /// The complete matches among the sets `g` (what a deferred summary has detected).
    fn held_matches(&self, g: &[Dual<BigUint>]) -> Dual<BigUint> {
        crate::automaton::step::final_sum(&self.dfa, g).unwrap_or_default()
    }

    pub fn readout(&self) -> Readout {
        if let Some(w) = &self.deferred {
            let g = w.totals_big();
            return Readout { detected: self.held_matches(&g), g };
        }
        let (g, detected) = crate::on_tier!(&self.exact, |p| p.readout());
        Readout { g, detected }
    }

    /// [`Summary::readout`] as of time `t`: over the retained elements with timestamps up to
    /// `t` (recomputed, O(|S|·|Z|²)), for evaluations of a summary that has already taken
    /// later (and then late) elements. `detected` is today's.
    /// Also returns the elements it covers.
    pub fn readout_upto(&self, t: i64) -> Result<(Readout, &[Ev]), Error> {
        let upto = &self.elems[..self.elems.partition_point(|e| e.t <= t)];
        let w = crate::exact::window::Window::<BigUint, P>::run(self.dfa.clone(), self.cfg.tau, upto).map_err(|_| Error::internal("a recount over big integers failed"))?;
        Ok((Readout { g: w.totals, detected: self.detected() }, upto))
    }

    /// Which number type the exact counters are on now (`u128`, `u256`, `big`).
    pub fn tier(&self) -> &'static str {
        match &self.deferred {
            Some(w) => w.ladder.tier(),
            None => self.exact.tier(),
        }
    }

    pub fn active_start(&self) -> usize {
        self.active_start
    }

    /// Process one element of the query's alphabet (its `gap`: what lay between it and the
    /// previous element of the stream).
    pub fn observe(&mut self, ev: Ev) -> Result<(), Error> {
        if self.deferred.is_some() {
            let ttl_due = self.cfg.time_to_live.is_some_and(|ttl| self.elems.first().is_some_and(|e| expired(e.t, ev.t, ttl)));
            if self.cfg.size > self.elems.len() && !ttl_due {
                return self.observe_deferred(ev);
            }
            self.settle()?;
        }
        self.events += 1;
        self.fit_estimates();
        self.now = Some(ev.t);
        if let Some(ttl) = self.cfg.time_to_live {
            while !self.elems.is_empty() && expired(self.elems[0].t, ev.t, ttl) {
                self.remove(0)?;
            }
        }
        self.expire(ev.t)?;
        self.learn(&ev);
        // What lies between the last retained element and this one.
        let ev = Ev { gap: ev.gap | self.pending_gap, ..ev };
        if self.cfg.size > self.elems.len() {
            return self.retain(ev);
        }
        if self.cfg.size > 0 {
            if let Some(i) = self.cfg.strategy.choose(self, &ev) {
                self.evictions += 1;
                self.remove(i)?;
                // An evicted last element is now part of this one's gap.
                return self.retain(Ev { gap: ev.gap | self.pending_gap, ..ev });
            }
        }
        // Not retained: the element and its gap lie in the next one's gap.
        self.pending_gap = ev.gap | self.dfa.absorbed(ev.sym);
        Ok(())
    }

    /// Process an element older than the latest one seen (a late event): it goes in at its
    /// place in time order (after the retained elements with its timestamp, which arrived
    /// earlier), and if that makes one too many, the strategy evicts its lowest element (the
    /// late one among them). The counters then equal a recomputation from the retained
    /// elements, as after every step; what differs from processing the sorted stream is only
    /// which elements earlier selections kept (docs/ENGINE.md, "Out-of-order events").
    pub fn observe_late(&mut self, ev: Ev) -> Result<(), Error> {
        let now = match self.now {
            Some(now) if ev.t < now => now,
            _ => return self.observe(ev),
        };
        self.settle()?;
        if !P::PLAIN || !self.dfa.negated.is_empty() {
            return Err(Error::input(LATE_INSERT_ONLY));
        }
        self.events += 1;
        self.fit_estimates();
        self.learn(&ev);
        if self.cfg.size == 0 || self.cfg.time_to_live.is_some_and(|ttl| expired(ev.t, now, ttl)) {
            return Ok(()); // kept by no summary that processed it in order either
        }
        let p = self.elems.partition_point(|e| e.t <= ev.t);
        P::insert_at(self, p, Ev { gap: 0, ..ev })?;
        if self.elems.len() > self.cfg.size {
            let victim = self.cfg.strategy.victim(self);
            self.evictions += 1;
            self.remove(victim)?;
        }
        Ok(())
    }

    /// The letter frequencies, mean values and rate learn from an element; the coefficients
    /// follow when the estimator says they moved.
    fn learn(&mut self, ev: &Ev) {
        selection::on_arrival(self, ev);
        if self.estimator.observe(ev.sym, ev.t, ev.v) {
            self.coeffs = Coefficients::new(self.estimator.probabilities(), self.estimator.mean_values());
        }
    }

    fn retain(&mut self, ev: Ev) -> Result<(), Error> {
        P::insert(self, ev)?;
        self.pending_gap = 0;
        Ok(())
    }

    /// An event that can be no element: a negated character (`bit` set) or, with `bit` 0,
    /// a character outside the query (counted as skipped). Either lies in the next gap.
    pub fn gap_event(&mut self, bit: u32) {
        self.events += 1;
        if bit == crate::automaton::dfa::GAP_BREAK {
            self.skipped += 1;
        }
        self.pending_gap |= bit;
    }

    /// Move the active window to the elements a new element at `now` can still match with.
    fn expire(&mut self, now: i64) -> Result<(), Error> {
        let (start, end) = (self.active_start, self.active_end(now));
        if end == start {
            return Ok(());
        }
        P::expire(self, start, end)
    }

    /// Where the active window starts for a new element at `now`: past the elements it can
    /// no longer match with.
    fn active_end(&self, now: i64) -> usize {
        let mut end = self.active_start;
        while end < self.elems.len() && expired(self.elems[end].t, now, self.cfg.tau) {
            end += 1;
        }
        end
    }

    /// Evict the element at position `p`.
    pub fn remove(&mut self, p: usize) -> Result<(), Error> {
        self.settle()?;
        P::remove(self, p)
    }

    /// Take element `p` out of the element list and its per-element estimates; what it was
    /// (and its gap) joins the gap of the element after it.
    pub(crate) fn drop_element(&mut self, p: usize) {
        let gone = self.elems.remove(p);
        let merged = gone.gap | self.dfa.absorbed(gone.sym);
        match self.elems.get_mut(p) {
            Some(next) => next.gap |= merged,
            None => self.pending_gap |= merged,
        }
        self.est.drop_element(p, self.dfa.n, self.active_start);
        if p < self.active_start {
            self.active_start -= 1;
        }
    }

    pub(crate) fn retained(&self) -> Retained<'_> {
        Retained { dfa: &self.dfa, tau: self.cfg.tau, elems: &self.elems, active_start: self.active_start }
    }

    /// Float view of the sets a new element would form, from the exact active counters, into
    /// `formed` (reused: this runs once or twice per decision); only the counters the element
    /// extends are converted.
    pub(crate) fn formed_estimate<F: Real>(&self, ev: &Ev, formed: &mut Vec<Dual<F>>) {
        formed.clear();
        formed.resize(self.dfa.n, Dual::zero());
        // Estimates never overflow.
        let _ = crate::on_tier!(&self.exact, |p| P::formed_from(&self.dfa, &p.a, ev, formed, Dual::to_real));
    }

    /// A loaded state takes the forms this build would have kept it in: counters held in
    /// `u128` whose values fit `u64` (saved before the `u64` tier existed) move down to it, and
    /// estimates saved with sums drop them unless the aggregate is SUM. It then re-saves to
    /// the bytes the same arrivals give now.
    pub fn fit_loaded(&mut self) {
        if let Ladder::U128(c) = &self.exact {
            if let Ok(word) = c.convert::<u64>() {
                self.exact = Ladder::U64(word);
            }
        }
        self.fit_estimates();
    }

    /// Hold the estimates in `f64` exactly while that is safe: the exact counters and the
    /// summary are small enough ([`crate::numbers::xf::narrow_fits`]) and the expected-future
    /// coefficients have an `f64` table (see [`Real`]). Widening happens at most once per tier
    /// change; the two forms agree on every value. Sums are kept only under SUM, the one
    /// aggregate that reads them (the counts never do).
    pub(crate) fn fit_estimates(&mut self) {
        let narrow_ok = !self.forced.wide && crate::numbers::xf::narrow_fits(self.exact.bits(), self.cfg.size) && self.coeffs.narrow_ok();
        self.est.fit(!narrow_ok, self.forced.sums || self.cfg.aggregate == Aggregate::Sum);
    }

    /// Selection estimates, refreshed: (present benefit per element, active local rows); their
    /// sums are 0 where the aggregate is not SUM (the estimates are count-only there).
    /// (A deferred summary settles first; that cannot fail on a summary that took its
    /// elements, and if it did the estimates come back empty.)
    pub fn estimates(&mut self) -> (Vec<DualX>, Vec<Vec<DualX>>) {
        if self.settle().is_err() {
            return (Vec::new(), Vec::new());
        }
        P::refresh_estimates(self);
        let w = self.est.wide();
        (w.pres, w.al.chunks(self.dfa.n).map(|c| c.to_vec()).collect())
    }

    /// Exact active counters as maintained, and recomputed from the elements (for tests).
    pub fn active_check(&self) -> Result<KeptAndFresh, Error> {
        if self.deferred.is_some() {
            let mut settled = self.clone();
            settled.settle()?;
            return settled.active_check();
        }
        let kept = crate::on_tier!(&self.exact, |p| p.a.iter().map(|d| d.to_big()).collect());
        let fresh = Counters::<BigUint>::rebuild::<P>(&self.retained(), &Dual::zero()).map_err(|_| Error::internal("rebuild failed"))?;
        Ok((kept, fresh.a))
    }

    /// Exact local counters (complete matches containing each element), by recomputation.
    pub fn exact_locals(&self) -> Result<Vec<Dual<BigUint>>, Error> {
        P::exact_locals(self)
    }

    /// Internal consistency of a loaded summary: sizes agree with the automaton and each other.
    pub fn validate(&self) -> Result<(), Error> {
        let (z, n) = (self.dfa.n, self.elems.len());
        let bad = |m: String| Err(Error::state(m));
        if n > self.cfg.size {
            return bad(format!("{n} retained elements exceed the summary size {}", self.cfg.size));
        }
        if self.active_start > n {
            return bad("active window starts past the retained elements".into());
        }
        if let Some(e) = self.elems.iter().find(|e| e.sym as usize >= self.dfa.k()) {
            return bad(format!("retained element with symbol {} outside the alphabet", e.sym));
        }
        if self.elems.windows(2).any(|w| w[1].t < w[0].t) {
            return bad("retained elements are not in time order".into());
        }
        if self.cfg.tau < 0 || self.cfg.time_to_live.is_some_and(|t| t < 0) {
            return bad("negative window or time to live".into());
        }
        if self.estimator.counts.len() != self.dfa.k() || self.coeffs.probabilities.len() != self.dfa.k() || self.coeffs.means.len() != self.dfa.k() {
            return bad("estimator does not match the alphabet".into());
        }
        if self.cfg.probabilities.as_ref().is_some_and(|p| p.len() != self.dfa.k()) {
            return bad("probabilities do not match the alphabet".into());
        }
        if self.deferred.is_some() {
            return Ok(()); // no counters or estimates held yet
        }
        let lens = crate::on_tier!(&self.exact, |p| (p.g.len(), p.a.len(), p.v.len()));
        let v_ok = lens.2 == n * z || (!P::ACTIVE_ROWS && lens.2 == 0);
        if lens.0 != z || lens.1 != z || !v_ok {
            return bad("exact counters do not match the automaton".into());
        }
        self.est.validate(n, z).map_err(Error::state)
    }
}

/// The first element of the run of elements up to `p` with no break between them: under
/// contiguity no set reaches back past it.
pub fn segment_start(elems: &[Ev], p: usize) -> usize {
    elems[..=p].iter().rposition(|e| e.gap & crate::automaton::dfa::GAP_BREAK != 0).unwrap_or(0)
}

/// The retained elements without element `p`, its gap merged into the next one's: the
/// stream a summary that never held `p` would see.
pub fn without(dfa: &Dfa, elems: &[Ev], p: usize) -> Vec<Ev> {
    let mut rest = elems.to_vec();
    let gone = rest.remove(p);
    if let Some(next) = rest.get_mut(p) {
        next.gap |= gone.gap | dfa.absorbed(gone.sym);
    }
    rest
}

#[cfg(test)]
mod tests;
