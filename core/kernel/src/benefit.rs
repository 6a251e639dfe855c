//! Expected-benefit coefficients (paper §6.1) and the online alphabet estimator.
//!
//! `h_n[q]` is the expected number (and value sum) of matches that one set, now in state `q`,
//! forms during the next `n` elements, when each element is drawn independently from the
//! alphabet probabilities. With `Q = Σ_c p_c · step_c` and `φ[q]` the expected matches formed by
//! one step, `h_0 = 0` and `h_{n+1} = φ + Q·h_n`. The expected benefit of an element is then a
//! dot product of its active local counters with `h_n`: O(|Z|) per element, the cache being
//! grown lazily, O(|Z|) memory per step instead of the paper's O(|Z|²).
//! Values enter through the dual numbers: a step with character `c` weighs `1 + v̄_c·ε`, so the
//! sum part of `h_n` is the expected value of the matches formed (the SUM variant, §6.3).
use crate::dfa::{Dfa, NONE};
use crate::dual::{Dual, DualX};
use crate::semantics::Semantics;
use crate::xf::{Real, Xf, NARROW_LIMIT};
use serde::{Deserialize, Serialize};

/// Largest number of future steps the cache looks ahead.
pub const MAX_STEPS: usize = 1 << 16;

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Estimator {
    /// Probabilities given by the user (normalised), or `None` to estimate them.
    pub given: Option<Vec<f64>>,
    pub counts: Vec<u64>,
    pub value_sums: Vec<f64>,
    pub total: u64,
    pub t_first: Option<i64>,
    pub t_last: Option<i64>,
    next_refresh: u64,
}

impl Estimator {
    pub fn new(k: usize, given: Option<Vec<f64>>) -> Self {
        Estimator { given, counts: vec![0; k], value_sums: vec![0.0; k], total: 0, t_first: None, t_last: None, next_refresh: 16 }
    }

    /// Record an element; returns true when the coefficients should be recomputed.
    pub fn observe(&mut self, sym: u8, t: i64, v: u64) -> bool {
        self.counts[sym as usize] += 1;
        self.value_sums[sym as usize] += v as f64;
        self.total += 1;
        // The span of time seen (a late element, inserted at its place, may be the earliest).
        self.t_first = Some(self.t_first.map_or(t, |a| a.min(t)));
        self.t_last = Some(self.t_last.map_or(t, |b| b.max(t)));
        if self.total >= self.next_refresh {
            // Geometric refresh: estimates settle quickly, so recompute at 16, 32, 64, ...
            // and then at least every 65,536 elements.
            self.next_refresh = (self.total * 2).min(self.total + 65_536);
            return true;
        }
        false
    }

    /// Add-one (Laplace) smoothed frequencies, so unseen characters keep a small probability.
    pub fn probabilities(&self) -> Vec<f64> {
        if let Some(p) = &self.given {
            return p.clone();
        }
        let k = self.counts.len() as f64;
        self.counts.iter().map(|&c| (c as f64 + 1.0) / (self.total as f64 + k)).collect()
    }

    pub fn mean_values(&self) -> Vec<f64> {
        self.counts.iter().zip(&self.value_sums).map(|(&c, &s)| if c == 0 { 1.0 } else { s / c as f64 }).collect()
    }

    /// Elements per time unit, to turn a remaining time span into a number of future steps.
    pub fn rate(&self) -> f64 {
        match (self.t_first, self.t_last) {
            (Some(a), Some(b)) if b > a && self.total > 1 => (self.total - 1) as f64 / (b as i128 - a as i128) as f64,
            _ => 1.0,
        }
    }
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Coefficients {
    pub probabilities: Vec<f64>,
    pub means: Vec<f64>,
    #[serde(skip)]
    h: Vec<Vec<DualX>>,
    /// `h` in `f64`, while every coefficient is below [`NARROW_LIMIT`].
    #[serde(skip)]
    h_narrow: Vec<Vec<Dual<f64>>>,
    #[serde(skip)]
    phi: Vec<DualX>,
}

impl Coefficients {
    pub fn new(probabilities: Vec<f64>, means: Vec<f64>) -> Self {
        Coefficients { probabilities, means, h: Vec::new(), h_narrow: Vec::new(), phi: Vec::new() }
    }

    fn init(&mut self, dfa: &Dfa) {
        let mut phi = vec![DualX::zero(); dfa.n];
        for (c, trans) in dfa.by_sym.iter().enumerate() {
            let w = Dual { c: Xf::from_f64(self.probabilities[c]), s: Xf::from_f64(self.probabilities[c] * self.means[c]) };
            for &(q, to) in trans {
                if dfa.finals[to as usize] {
                    phi[q as usize] = phi[q as usize].plus(&w);
                }
            }
        }
        self.phi = phi;
        self.h = vec![vec![DualX::zero(); dfa.n]];
        self.h_narrow = vec![vec![Dual::zero(); dfa.n]];
    }

    /// `h_n` of a cache already grown to `n` (see [`Coefficients::h`]), in float type `F`
    /// (an `f64` table exists only while [`Coefficients::narrow_ok`]).
    pub fn cached<F: Real>(&self, n: usize) -> &[Dual<F>] {
        let table = F::pick(&self.h_narrow, &self.h);
        &table[n.min(MAX_STEPS).min(table.len() - 1)]
    }

    /// Whether every coefficient computed so far has an `f64` copy.
    pub fn narrow_ok(&self) -> bool {
        self.h_narrow.len() == self.h.len()
    }

    /// `h_n`, growing the cache as needed (n is capped at [`MAX_STEPS`]).
    pub fn h<P: Semantics>(&mut self, dfa: &Dfa, n: usize) -> &[DualX] {
        if self.h.is_empty() {
            self.init(dfa);
        }
        let n = n.min(MAX_STEPS);
        while self.h.len() <= n {
            let prev = self.h.last().expect("h_0 exists");
            let mut next = self.phi.clone();
            for q in 0..dfa.n {
                let mut acc = DualX::zero();
                for c in 0..dfa.k() {
                    let p = self.probabilities[c];
                    if p == 0.0 {
                        continue;
                    }
                    let to = dfa.step(q as u32, c as u8);
                    let moved = if to == NONE {
                        P::expected_step(&prev[q], None) // no transition for this letter
                    } else {
                        let w = Dual { c: Xf::ONE, s: Xf::from_f64(self.means[c]) };
                        P::expected_step(&prev[q], Some(&prev[to as usize].times(&w)))
                    };
                    acc = acc.plus(&moved.scale(p));
                }
                next[q] = next[q].plus(&acc);
            }
            if self.narrow_ok() && next.iter().all(|d| d.c.to_f64() < NARROW_LIMIT && d.s.to_f64() < NARROW_LIMIT) {
                self.h_narrow.push(next.iter().map(|d| Dual { c: d.c.to_f64(), s: d.s.to_f64() }).collect());
            }
            self.h.push(next);
        }
        &self.h[n]
    }
}
