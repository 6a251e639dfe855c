//! What a caller drives: the two engines with the selection semantics chosen at run time,
//! validated batches ([`batch`]), saved state ([`state`]), memory limits ([`limits`]) and
//! errors ([`error`]).
//!
//! Everything below is generic over [`Semantics`](crate::automaton::semantics::Semantics); this is the
//! one place that turns a run-time [`Policy`] into a type.
pub mod batch;
pub mod error;
pub mod limits;
pub mod shared;
pub mod state;

use crate::engine::batch::Raw;
use crate::automaton::dfa::{Dfa, Skip, UNKNOWN};
use crate::engine::error::Error;
use crate::engine::limits::Limits;
use crate::automaton::semantics::{AnyMatch, Contiguous, Ev, NextMatch, Policy};
use crate::summary::{Config, Readout, Summary};
use crate::exact::window::{split_closing, Closing, ExactWindow};
use num_bigint::BigUint;
use serde::{Deserialize, Serialize};
use std::sync::Arc;

/// Exact aggregation over a whole stream (the ground truth).
#[derive(Clone)]
pub enum ExactEngine {
    Any(ExactWindow<AnyMatch>, u32),
    Next(ExactWindow<NextMatch>, u32),
    Contiguous(ExactWindow<Contiguous>, u32),
}

macro_rules! with_policy {
    ($engine:expr, ExactEngine, |$e:ident, $g:ident| $body:expr) => {
        match $engine {
            ExactEngine::Any($e, $g) => $body,
            ExactEngine::Next($e, $g) => $body,
            ExactEngine::Contiguous($e, $g) => $body,
        }
    };
    ($engine:expr, SummaryEngine, |$e:ident| $body:expr) => {
        match $engine {
            SummaryEngine::Any($e) => $body,
            SummaryEngine::Next($e) => $body,
            SummaryEngine::Contiguous($e) => $body,
        }
    };
}

impl ExactEngine {
    pub fn new(dfa: Arc<Dfa>, tau: i64, policy: Policy, limits: &Limits) -> Result<Self, Error> {
        if tau < 0 {
            return Err(Error::input(format!("window must be non-negative, got {tau}")));
        }
        limits.check_exact(&dfa)?;
        Ok(match policy {
            Policy::Any => ExactEngine::Any(ExactWindow::new(dfa, tau), 0),
            Policy::Next => ExactEngine::Next(ExactWindow::new(dfa, tau), 0),
            Policy::Contiguous => ExactEngine::Contiguous(ExactWindow::new(dfa, tau), 0),
        })
    }

    /// Process one raw event: an element (with the gap since the previous one) or a gap event.
    pub fn feed(&mut self, raw: Raw) -> Result<(), Error> {
        with_policy!(self, ExactEngine, |e, gap| match raw {
            Raw::Element(ev) => {
                let ev = Ev { gap: std::mem::take(gap), ..ev };
                e.push(ev)
            }
            Raw::Gap(bit) => {
                *gap |= bit;
                Ok(())
            }
        })
    }

    /// A negation at the end of the pattern: the sets in `pending` states count when their
    /// window closes, moved to the final state `closed` (skip-till-any-match only).
    pub fn close_at_window_end(&mut self, pending: Vec<u32>, closed: u32) -> Result<(), Error> {
        let closing = Arc::new(Closing::new(self.dfa(), pending, closed).map_err(Error::Input)?);
        match self {
            ExactEngine::Any(e, _) => {
                e.set_closing(closing);
                Ok(())
            }
            _ => Err(Error::input("a negation at the end of the pattern is counted with policy 'any' only")),
        }
    }

    /// `(count, sum, partial count)` over everything processed. With a negation at the end of
    /// the pattern every window counts as closed (the stream is over).
    pub fn totals(&self) -> (BigUint, BigUint, BigUint) {
        with_policy!(self, ExactEngine, |e, _g| split_closing(e.dfa(), e.closing().map(|k| &**k), &crate::on_tier!(&e.ladder, |w| w.totals_all_closed())))
    }

    /// The totals an evaluation at `at` reports: with a negation at the end of the pattern, a
    /// match counts once its window has closed by `at` (`None`: every window has closed).
    pub fn totals_at(&self, at: Option<i64>) -> Result<(BigUint, BigUint, BigUint), Error> {
        with_policy!(self, ExactEngine, |e, _g| Ok(split_closing(e.dfa(), e.closing().map(|k| &**k), &e.totals_closed(at)?)))
    }

    /// The totals per automaton state (what [`crate::exact::approx::CostLabels::split`] reads).
    pub fn per_state(&self) -> Vec<crate::numbers::dual::Dual<BigUint>> {
        with_policy!(self, ExactEngine, |e, _g| e.totals_big())
    }

    pub fn dfa(&self) -> &Arc<Dfa> {
        with_policy!(self, ExactEngine, |e, _g| e.dfa())
    }

    pub fn tier(&self) -> &'static str {
        with_policy!(self, ExactEngine, |e, _g| e.ladder.tier())
    }
}

/// Present benefits and active local rows as `(count, sum)` floats.
pub type FloatEstimates = (Vec<(f64, f64)>, Vec<Vec<(f64, f64)>>);

/// A bounded summary under either policy.
#[derive(Clone, Serialize, Deserialize)]
pub enum SummaryEngine {
    Any(Summary<AnyMatch>),
    Next(Summary<NextMatch>),
    Contiguous(Summary<Contiguous>),
}

impl SummaryEngine {
    pub fn new(dfa: Arc<Dfa>, policy: Policy, cfg: Config, limits: &Limits) -> Result<Self, Error> {
        check_config(&dfa, &cfg)?;
        limits.check_summary(&dfa, cfg.size, policy)?;
        Ok(match policy {
            Policy::Any => SummaryEngine::Any(Summary::new(dfa, cfg)),
            Policy::Next => SummaryEngine::Next(Summary::new(dfa, cfg)),
            Policy::Contiguous => SummaryEngine::Contiguous(Summary::new(dfa, cfg)),
        })
    }

    /// Whether an event of character `byte` can change this summary: its letters and negated
    /// characters, and every character where a set that skips an event dies (contiguity).
    pub fn reads(&self, byte: u8) -> bool {
        let dfa = self.dfa();
        self.policy().skip() == Skip::Kill || dfa.lookup[byte as usize] != UNKNOWN || dfa.neg_lookup[byte as usize] != UNKNOWN
    }

    pub fn policy(&self) -> Policy {
        match self {
            SummaryEngine::Any(_) => Policy::Any,
            SummaryEngine::Next(_) => Policy::Next,
            SummaryEngine::Contiguous(_) => Policy::Contiguous,
        }
    }

    pub fn observe(&mut self, ev: Ev) -> Result<(), Error> {
        with_policy!(self, SummaryEngine, |s| s.observe(ev))
    }

    /// Process one raw event: an element, or a gap event (a negated or unknown character).
    pub fn feed(&mut self, raw: Raw) -> Result<(), Error> {
        match raw {
            Raw::Element(ev) => self.observe(ev),
            Raw::Gap(bit) => {
                with_policy!(self, SummaryEngine, |s| s.gap_event(bit));
                Ok(())
            }
        }
    }

    pub fn readout(&self) -> Readout {
        with_policy!(self, SummaryEngine, |s| s.readout())
    }

    /// Process one raw event that may be late: an element goes in at its place in time.
    pub fn feed_late(&mut self, raw: Raw) -> Result<(), Error> {
        match raw {
            Raw::Element(ev) => with_policy!(self, SummaryEngine, |s| s.observe_late(ev)),
            Raw::Gap(_) => self.feed(raw),
        }
    }

    /// The sets over the retained elements up to time `t` (inclusive), recomputed; `detected`
    /// as it is now.
    pub fn readout_upto(&self, t: i64) -> Result<(Readout, &[Ev]), Error> {
        with_policy!(self, SummaryEngine, |s| s.readout_upto(t))
    }

    pub fn dfa(&self) -> &Arc<Dfa> {
        with_policy!(self, SummaryEngine, |s| &s.dfa)
    }

    pub fn config(&self) -> &Config {
        with_policy!(self, SummaryEngine, |s| &s.cfg)
    }

    pub fn elements(&self) -> &[Ev] {
        with_policy!(self, SummaryEngine, |s| &s.elems)
    }

    /// `(events, skipped, evictions)`.
    pub fn counts(&self) -> (u64, u64, u64) {
        with_policy!(self, SummaryEngine, |s| (s.events, s.skipped, s.evictions))
    }

    pub fn now(&self) -> Option<i64> {
        with_policy!(self, SummaryEngine, |s| s.now)
    }

    pub fn tier(&self) -> &'static str {
        with_policy!(self, SummaryEngine, |s| s.tier())
    }

    pub fn active_start(&self) -> usize {
        with_policy!(self, SummaryEngine, |s| s.active_start())
    }

    /// Whether the summary still defers its selection state (it has evicted nothing).
    pub fn is_deferred(&self) -> bool {
        with_policy!(self, SummaryEngine, |s| s.is_deferred())
    }

    /// Build the selection state a deferred summary has not kept ([`Summary::settle`]).
    pub fn settle(&mut self) -> Result<(), Error> {
        with_policy!(self, SummaryEngine, |s| s.settle())
    }

    /// Selection estimates as `f64` (infinite past 10^308; tests and inspection only; the sums
    /// are 0 unless the aggregate is SUM).
    pub fn estimates(&mut self) -> FloatEstimates {
        let (pres, al) = with_policy!(self, SummaryEngine, |s| s.estimates());
        let f = |d: &crate::numbers::dual::DualX| (d.c.to_f64(), d.s.to_f64());
        (pres.iter().map(f).collect(), al.iter().map(|r| r.iter().map(f).collect()).collect())
    }

    pub fn exact_locals(&self) -> Result<Vec<crate::numbers::dual::Dual<BigUint>>, Error> {
        with_policy!(self, SummaryEngine, |s| s.exact_locals())
    }

    pub fn active_check(&self) -> Result<crate::summary::KeptAndFresh, Error> {
        with_policy!(self, SummaryEngine, |s| s.active_check())
    }

    /// The sets over the retained elements, recounted from scratch.
    pub fn recount(&self) -> crate::numbers::num::R<Vec<crate::numbers::dual::Dual<BigUint>>> {
        use crate::exact::window::Window;
        match self {
            SummaryEngine::Any(x) => Window::<BigUint, AnyMatch>::run(x.dfa.clone(), x.cfg.tau, &x.elems).map(|w| w.totals),
            SummaryEngine::Next(x) => Window::<BigUint, NextMatch>::run(x.dfa.clone(), x.cfg.tau, &x.elems).map(|w| w.totals),
            SummaryEngine::Contiguous(x) => Window::<BigUint, Contiguous>::run(x.dfa.clone(), x.cfg.tau, &x.elems).map(|w| w.totals),
        }
    }

    pub fn validate(&self, limits: &Limits) -> Result<(), Error> {
        check_config(self.dfa(), self.config())?;
        limits.check_summary(self.dfa(), self.config().size, self.policy())?;
        with_policy!(self, SummaryEngine, |s| s.validate())
    }
}

fn check_config(dfa: &Dfa, cfg: &Config) -> Result<(), Error> {
    if cfg.tau < 0 {
        return Err(Error::input(format!("window must be non-negative, got {}", cfg.tau)));
    }
    if cfg.time_to_live.is_some_and(|t| t < 0) {
        return Err(Error::input("time_to_live must be non-negative"));
    }
    if cfg.size == 0 || cfg.size > crate::engine::limits::MAX_SIZE {
        return Err(Error::input(format!("size must be between 1 and {}, got {}", crate::engine::limits::MAX_SIZE, cfg.size)));
    }
    if let Some(p) = &cfg.probabilities {
        if p.len() != dfa.k() {
            return Err(Error::input(format!("{} probabilities for an alphabet of {} characters", p.len(), dfa.k())));
        }
        if p.iter().any(|x| !x.is_finite() || *x < 0.0) || (p.iter().sum::<f64>() - 1.0).abs() > 1e-6 {
            return Err(Error::input("probabilities must be finite, non-negative and sum to 1"));
        }
    }
    Ok(())
}
