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
use crate::automaton::dfa::{Dfa, NONE};
use crate::numbers::dual::{Dual, DualX};
use crate::automaton::semantics::Semantics;
use crate::numbers::xf::{Real, Xf, NARROW_LIMIT};
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

/// Per `(state, letter)`: the factor on the sets a loop's letter moves that makes the letters
/// of a loop, of total probability `p` from that state, grow the sets there by `2^(e·p)` per
/// step instead of `1 + p`: `(2^(e·p) − 1) / p`.
fn loop_weights(dfa: &Dfa, probabilities: &[f64], exponent: f64) -> Vec<f64> {
    let k = dfa.k();
    let looping = dfa.looping();
    let mut w = vec![1.0; dfa.n * k];
    for q in 0..dfa.n {
        let p: f64 = (0..k).filter(|&c| looping[q * k + c]).map(|c| probabilities[c]).sum();
        if p > 0.0 {
            for c in (0..k).filter(|&c| looping[q * k + c]) {
                w[q * k + c] = ((exponent * p).exp2() - 1.0) / p;
            }
        }
    }
    w
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
    /// The growth of sets in loops, if not the mean ([`Coefficients::set_loop_growth`]).
    #[serde(skip)]
    loop_growth: Option<f64>,
    /// Per `(state, letter)`: the factor on the sets the letter moves (empty: all 1).
    #[serde(skip)]
    weights: Vec<f64>,
}

impl Coefficients {
    pub fn new(probabilities: Vec<f64>, means: Vec<f64>) -> Self {
        Coefficients { probabilities, means, h: Vec::new(), h_narrow: Vec::new(), phi: Vec::new(), loop_growth: None, weights: Vec::new() }
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
        self.weights = self.loop_growth.map_or_else(Vec::new, |e| loop_weights(dfa, &self.probabilities, e));
        self.h = vec![vec![DualX::zero(); dfa.n]];
        self.h_narrow = vec![vec![Dual::zero(); dfa.n]];
    }

    /// Look ahead with the sets in a loop growing by `2^(exponent·p)` per step, `p` the loop's
    /// letters' probability, instead of their mean `1 + p` (`None`); the cache restarts if
    /// this changes. Under skip-till-any a letter of a loop doubles the sets there: over `n`
    /// steps the mean grows by `(1 + p)^n`, carried by rare futures rich in those letters, and
    /// the typical count by `2^(p·n)` (exponent 1) (docs/ENGINE.md, "Adaptive selection").
    pub fn set_loop_growth(&mut self, exponent: Option<f64>) {
        if exponent != self.loop_growth {
            self.loop_growth = exponent;
            self.h.clear();
            self.h_narrow.clear();
        }
    }

    /// Whether the cache is still empty (nothing looked ahead since it was made).
    pub fn is_fresh(&self) -> bool {
        self.h.is_empty()
    }

    /// `h_n` of a cache already grown to `n` (see [`Coefficients::h`]), in the plain float of
    /// type `F` (an `f64` table exists only while [`Coefficients::narrow_ok`]).
    pub fn cached<F: Real>(&self, n: usize) -> &[Dual<F::Plain>] {
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
                        let taken = prev[to as usize].times(&w);
                        match self.weights.get(q * dfa.k() + c) {
                            Some(&f) if f != 1.0 => P::expected_step(&prev[q], Some(&taken.scale(f))),
                            _ => P::expected_step(&prev[q], Some(&taken)),
                        }
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::automaton::dfa::DfaSpec;
    use crate::automaton::semantics::AnyMatch;

    /// `ab*c`: 0 -a-> 1, 1 -b-> 1, 1 -c-> 2 (final).
    fn ab_star_c() -> Dfa {
        let table = vec![1, -1, -1, -1, 1, 2, -1, -1, -1];
        Dfa::new(DfaSpec { n: 3, alphabet: b"abc".to_vec(), negated: Vec::new(), start: 0, finals: vec![false, false, true], table }).unwrap()
    }

    fn close(a: &[DualX], b: &[DualX]) -> bool {
        a.iter().zip(b).all(|(x, y)| {
            let (x, y) = (x.c.to_f64(), y.c.to_f64());
            (x - y).abs() <= 1e-9 * x.abs().max(y.abs())
        })
    }

    /// `ab*c` with `b` at probability `p`: a set after the `a` completes with each `c` and
    /// doubles with each `b`, so over `n` steps the mean look-ahead expects
    /// `p_c · ((1 + p)^n − 1) / p` matches and the one with exponent `e`
    /// `p_c · (2^(e·p·n) − 1) / (2^(e·p) − 1)`.
    /// An automaton without loops keeps its mean coefficients.
    #[test]
    fn a_loop_grows_at_its_typical_rate() {
        let dfa = ab_star_c();
        let (pb, pc) = (0.5, 0.2);
        let mut geometric = Coefficients::new(vec![0.3, pb, pc], vec![1.0; 3]);
        geometric.set_loop_growth(Some(1.0));
        let mut half = Coefficients::new(vec![0.3, pb, pc], vec![1.0; 3]);
        half.set_loop_growth(Some(0.5));
        let mut mean = Coefficients::new(vec![0.3, pb, pc], vec![1.0; 3]);
        for n in [1usize, 5, 40, 200] {
            let nf = n as f64;
            let g = geometric.h::<AnyMatch>(&dfa, n)[1].c.to_f64();
            let m = mean.h::<AnyMatch>(&dfa, n)[1].c.to_f64();
            let hf = half.h::<AnyMatch>(&dfa, n)[1].c.to_f64();
            let typical = |e: f64| pc * ((e * pb * nf).exp2() - 1.0) / ((e * pb).exp2() - 1.0);
            let want_m = pc * ((1.0 + pb).powf(nf) - 1.0) / pb;
            assert!((g - typical(1.0)).abs() <= 1e-9 * g, "{n} steps: {g} vs {}", typical(1.0));
            assert!((hf - typical(0.5)).abs() <= 1e-9 * hf, "{n} steps: {hf} vs {}", typical(0.5));
            assert!((m - want_m).abs() <= 1e-9 * want_m, "{n} steps: {m} vs {want_m}");
        }
        let trie = Dfa::from_regex_words("ab", &["ab", "ba"]);
        let mut off = Coefficients::new(vec![0.4, 0.6], vec![1.0; 2]);
        let mut on = off.clone();
        on.set_loop_growth(Some(0.5));
        assert!(close(on.h::<AnyMatch>(&trie, 30), off.h::<AnyMatch>(&trie, 30)));
    }

    /// Switching the rule restarts the cache: nothing grown under one rule is read under the
    /// other.
    #[test]
    fn switching_restarts_the_cache() {
        let dfa = ab_star_c();
        let mut c = Coefficients::new(vec![0.3, 0.5, 0.2], vec![1.0; 3]);
        let mean = c.h::<AnyMatch>(&dfa, 20).to_vec();
        assert!(!c.is_fresh());
        c.set_loop_growth(Some(0.5));
        assert!(c.is_fresh());
        assert!(!close(c.h::<AnyMatch>(&dfa, 20), &mean));
        c.set_loop_growth(None);
        assert!(close(c.h::<AnyMatch>(&dfa, 20), &mean));
    }
}
