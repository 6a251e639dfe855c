//! The expected part of a retained element's benefit in a summary with conditions or with a
//! negation at the end of the pattern (docs/ENGINE.md, "Summaries with conditions"): `suse`
//! and `adaptive` over [`Retained`].
//!
//! benefit(e) = present(e) + expected(e), as the base summary's `suse` ranks: present(e) is
//! [`Retained::through`]'s exact count of the matches through e, expected(e) = Σ_q
//! partial_e[q] · h_n[q] with partial_e[q] the partial matches through e in state q (exact,
//! with the conditions) and h_n the base summary's recurrence ([`Coefficients::h`]) over the
//! automaton of those states ([`Recount::outlook_dfa`]), with the base's estimator of the
//! letters' probabilities and rate. The recurrence knows nothing of the conditions (nor of a
//! negation at the end): the expected part over-estimates the future matches; the counters
//! stay exact. Scores are floats, never reported.
use num_bigint::BigInt;
use num_traits::ToPrimitive;
use serde::{Deserialize, Serialize};

use super::retained::{Element, Recount, Retained, Through};
use crate::automaton::dfa::Dfa;
use crate::automaton::semantics::AnyMatch;
use crate::numbers::num::Scalar;
use crate::numbers::xf::Xf;
use crate::summary::benefit::{Coefficients, Estimator, MAX_STEPS};
use crate::summary::selection::{decide, horizon, loop_growth, rounded_steps};
use crate::Error;

/// What the ranking reads of the matches: their number, or (with aggregate "sum") the sum of
/// their values.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Part {
    Count,
    Sum,
}

/// The estimator and the expected-matches coefficients of one summary.
#[derive(Clone)]
pub struct Outlook {
    dfa: Dfa,
    estimator: Estimator,
    coeffs: Coefficients,
    size: usize,
    window: i64,
    /// `adaptive`: the log ranking, its look-ahead and loop growth; else `suse`.
    adaptive: bool,
    /// How to take back the last observation (the estimator before it, and the coefficients
    /// it replaced).
    undo: Option<(Estimator, Option<Coefficients>)>,
}

/// What a saved [`Outlook`] holds: the estimator and the probabilities and means of the
/// coefficients (their cache is recomputed).
#[derive(Serialize, Deserialize)]
struct Saved {
    estimator: Estimator,
    coeffs: Coefficients,
}

impl Outlook {
    /// Over `dfa` (the engine's [`Recount::outlook_dfa`]); `given`: one probability per letter
    /// (normalised), or `None` to estimate them as the base summary does.
    pub fn new(dfa: Dfa, given: Option<Vec<f64>>, size: usize, window: i64, adaptive: bool) -> Result<Outlook, Error> {
        if let Some(p) = &given {
            if p.len() != dfa.k() || p.iter().any(|x| !x.is_finite() || *x < 0.0) {
                return Err(Error::input(format!("give {} non-negative probabilities, one per letter", dfa.k())));
            }
        }
        let estimator = Estimator::new(dfa.k(), given);
        let coeffs = Coefficients::new(estimator.probabilities(), estimator.mean_values());
        Ok(Outlook { dfa, estimator, coeffs, size, window, adaptive, undo: None })
    }

    /// Every arriving element of a letter, before the decision on it (as the base summary
    /// learns): the letters' counts, mean values and rate; the coefficients are recomputed at
    /// the base's refresh points.
    pub fn observe(&mut self, letter: usize, t: i64, v: u64) -> Result<(), Error> {
        if letter >= self.dfa.k() {
            return Err(Error::input(format!("letter {letter} outside the query")));
        }
        let before = self.estimator.clone();
        let replaced = self.estimator.observe(letter as u8, t, v).then(|| {
            std::mem::replace(&mut self.coeffs, Coefficients::new(self.estimator.probabilities(), self.estimator.mean_values()))
        });
        self.undo = Some((before, replaced));
        Ok(())
    }

    /// Take back the last [`Outlook::observe`] (its element changed nothing after all).
    pub fn unobserve(&mut self) {
        if let Some((estimator, coeffs)) = self.undo.take() {
            self.estimator = estimator;
            if let Some(coeffs) = coeffs {
                self.coeffs = coeffs;
            }
        }
    }

    pub fn saved(&self) -> Vec<u8> {
        bincode::serialize(&Saved { estimator: self.estimator.clone(), coeffs: self.coeffs.clone() }).expect("serialisable")
    }

    pub fn restore(&mut self, bytes: &[u8]) -> Result<(), Error> {
        let saved: Saved = bincode::deserialize(bytes).map_err(|e| Error::State(format!("a saved expectation is unreadable: {e}")))?;
        let k = self.dfa.k();
        let fits = saved.estimator.counts.len() == k && saved.estimator.value_sums.len() == k && saved.coeffs.probabilities.len() == k && saved.coeffs.means.len() == k;
        if !fits || saved.estimator.given != self.estimator.given {
            return Err(Error::State("a saved expectation does not fit the query".into()));
        }
        (self.estimator, self.coeffs, self.undo) = (saved.estimator, saved.coeffs, None);
        Ok(())
    }

    /// A window in elements, at the observed rate.
    fn window_elements(&self) -> f64 {
        (self.window.max(0) as f64) * self.estimator.rate()
    }

    /// How many future elements an element at `t` looks ahead at `now`: its remaining window
    /// time at the observed rate (its own time bounds the first element of its partial
    /// matches from above, so this bounds their remaining time from above), capped at |S|
    /// (`adaptive`: at its shorter look-ahead), as the base summary caps it.
    fn steps(&self, t: i64, now: i64) -> usize {
        let size = self.size.min(MAX_STEPS) as f64;
        let cap = if self.adaptive { horizon(size, self.window_elements()) } else { size };
        let remaining = (self.window as f64) - (now.saturating_sub(t) as f64);
        rounded_steps(remaining.max(0.0) * self.estimator.rate(), cap)
    }

    /// Σ_q partial[q] · h_n[q] for an element at `t` at time `now` (the count part, or with
    /// [`Part::Sum`] the sum part of the dual product).
    pub fn expected(&mut self, partial: &[(BigInt, BigInt)], t: i64, now: i64, part: Part) -> f64 {
        if self.adaptive && self.coeffs.is_fresh() {
            // As the base decides it: once per set of coefficients, at the current rate.
            self.coeffs.set_loop_growth(loop_growth(self.size.min(MAX_STEPS) as f64, self.window_elements()));
        }
        let n = self.steps(t, now);
        let h = self.coeffs.h::<AnyMatch>(&self.dfa, n);
        let f = |x: &BigInt| x.to_f64().unwrap_or(0.0);
        partial
            .iter()
            .zip(h)
            .map(|((c, s), h)| match part {
                Part::Count => f(c) * h.c.to_f64(),
                Part::Sum => f(c) * h.s.to_f64() + f(s) * h.c.to_f64(),
            })
            .sum()
    }

    /// (present, expected) of one element at `t`, from what [`Retained::through`] gives.
    fn score(&mut self, through: &Through, t: i64, now: i64, part: Part) -> (f64, f64) {
        let present = match part {
            Part::Count => &through.matches.0,
            Part::Sum => &through.matches.1,
        };
        (present.to_f64().unwrap_or(0.0), self.expected(&through.partial, t, now, part))
    }

    /// Per retained element, (present, expected) at time `now` (no earlier than the last).
    pub fn benefits<E: Recount>(&mut self, kept: &Retained<E>, now: i64, part: Part) -> Result<Vec<(f64, f64)>, Error> {
        let through = kept.through(Some(now))?;
        Ok(through.iter().zip(kept.elements()).map(|(th, e)| self.score(th, e.1, now, part)).collect())
    }

    /// The retained element `e` replaces, if any: `suse`: the lowest benefit (ties: the
    /// oldest), if e's is strictly higher; `adaptive`: the base's log ranking
    /// ([`decide`]). `may_block`: some retained element may have a benefit below 0 (a negated
    /// element); else an `e` worth nothing is dropped without a ranking.
    pub fn choose<E: Recount>(&mut self, kept: &Retained<E>, e: &Element, may_block: bool, part: Part) -> Result<Option<usize>, Error> {
        let now = e.1;
        let (present, expected) = self.score(&kept.gain(e, now)?, e.1, now, part);
        let candidate = present + expected;
        if candidate <= 0.0 && !may_block {
            return Ok(None);
        }
        let victims = self.benefits(kept, now, part)?;
        let lowest = lowest(&victims);
        if !self.adaptive || victims.iter().any(|(p, x)| p + x < 0.0) {
            // (adaptive too when an element blocks matches: its removal gains, which a log
            // of a loss cannot say)
            return Ok(lowest.filter(|&(_, b)| candidate > b).map(|(i, _)| i));
        }
        let totals = kept.totals_at(None)?.matches;
        let retained = match part {
            Part::Count => totals.c.to_biguint(),
            Part::Sum => totals.s.to_biguint(),
        };
        let x = |v: f64| Xf::from_f64(v.max(0.0));
        // (exact counts past f64's range keep their magnitude)
        let shift = retained.bits().saturating_sub(64);
        let c1 = Xf::from_parts((&retained >> shift).to_f64().unwrap_or(0.0), shift as i64).add(&Xf::ONE).unwrap_or(Xf::ONE);
        Ok(decide(c1, x(candidate), victims.iter().map(|&(p, e)| (x(p), x(e)))))
    }
}

/// The position and benefit of the lowest `present + expected` (ties: the first).
fn lowest(victims: &[(f64, f64)]) -> Option<(usize, f64)> {
    victims.iter().map(|(p, e)| p + e).enumerate().fold(None, |best, (i, b)| match best {
        Some((_, bb)) if bb <= b => best,
        _ => Some((i, b)),
    })
}
