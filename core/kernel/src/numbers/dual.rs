//! `c + s·ε` with `ε² = 0`: a count of sets and the sum of their values, in one number.
//!
//! Taking an element of value `v` multiplies by `1 + v·ε`, which adds `v` to the sum of every
//! set passing through it. Every counting formula is then the COUNT formula over this ring,
//! for any [`Scalar`]: exact counters use `Dual<u128 | U256 | BigUint>`, selection estimates
//! `Dual<Xf>`. Over a type whose `SUMS` is false the sum half is never computed and stays 0:
//! the count half never reads it (`c·c'`, `c + c'`), so every count keeps its bits.
use crate::numbers::num::{Num, Scalar, R};
use crate::numbers::xf::{Real, Xf};
use num_bigint::BigUint;
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Dual<S> {
    pub c: S,
    pub s: S,
}

/// Selection estimates.
pub type DualX = Dual<Xf>;

impl<S: Scalar> Dual<S> {
    #[inline(always)]
    pub fn zero() -> Self {
        Dual { c: S::zero(), s: S::zero() }
    }
    #[inline(always)]
    pub fn one() -> Self {
        Dual { c: S::from_u64(1), s: S::zero() }
    }
    /// The weight `1 + v·ε` of taking an element of value `v`.
    #[inline(always)]
    pub fn weight(v: u64) -> Self {
        Dual { c: S::from_u64(1), s: if S::SUMS { S::from_u64(v) } else { S::zero() } }
    }
    #[inline(always)]
    pub fn is_zero(&self) -> bool {
        self.c.is_zero() && (!S::SUMS || self.s.is_zero())
    }
    #[inline(always)]
    pub fn add(&self, o: &Self) -> R<Self> {
        Ok(Dual { c: self.c.add(&o.c)?, s: if S::SUMS { self.s.add(&o.s)? } else { S::zero() } })
    }
    #[inline(always)]
    pub fn add_assign(&mut self, o: &Self) -> R<()> {
        // Only the halves kept are written: a count-only dual's zero sum is left as it is.
        let c = self.c.add(&o.c)?;
        if S::SUMS {
            self.s = self.s.add(&o.s)?;
        }
        self.c = c;
        Ok(())
    }
    /// `self = v`, writing only the halves kept (both have a zero sum where none is kept):
    /// storing the zero too costs an instruction per cell in the hot sweeps.
    #[inline(always)]
    pub fn set(&mut self, v: &Self) {
        self.c = v.c.clone();
        if S::SUMS {
            self.s = v.s.clone();
        }
    }
    #[inline(always)]
    pub fn sub(&self, o: &Self) -> R<Self> {
        Ok(Dual { c: self.c.sub(&o.c)?, s: if S::SUMS { self.s.sub(&o.s)? } else { S::zero() } })
    }
    #[inline(always)]
    pub fn sub_assign(&mut self, o: &Self) -> R<()> {
        // As `add_assign`: both halves computed before either is stored, only the kept written.
        let c = self.c.sub(&o.c)?;
        if S::SUMS {
            self.s = self.s.sub(&o.s)?;
        }
        self.c = c;
        Ok(())
    }
    #[inline(always)]
    pub fn mul(&self, o: &Self) -> R<Self> {
        let s = if S::SUMS { self.c.mul(&o.s)?.add(&self.s.mul(&o.c)?)? } else { S::zero() };
        Ok(Dual { c: self.c.mul(&o.c)?, s })
    }
    /// `self · (1 + v·ε)`: pass through an element of value `v`.
    #[inline(always)]
    pub fn take(&self, v: u64) -> R<Self> {
        if !S::SUMS {
            return Ok(Dual { c: self.c.clone(), s: S::zero() });
        }
        // Value 1 (every COUNT element) needs no multiply: `c·1` is `c` in every number type.
        let moved = if v == 1 { self.c.clone() } else { self.c.mul_u64(v)? };
        Ok(Dual { c: self.c.clone(), s: self.s.add(&moved)? })
    }
}

impl<S: Scalar> Default for Dual<S> {
    fn default() -> Self {
        Dual::zero()
    }
}

impl<N: Num> Dual<N> {
    pub fn to_big(&self) -> Dual<BigUint> {
        Dual { c: self.c.to_big(), s: self.s.to_big() }
    }
    pub fn from_big(d: &Dual<BigUint>) -> R<Self> {
        Ok(Dual { c: N::from_big(&d.c)?, s: N::from_big(&d.s)? })
    }
    pub fn to_xf(&self) -> DualX {
        Dual { c: self.c.to_xf(), s: self.s.to_xf() }
    }
    /// The estimate of this exact value in float type `F`.
    pub fn to_real<F: Real>(&self) -> Dual<F> {
        Dual { c: F::from_xf(self.c.to_xf()), s: if F::SUMS { F::from_xf(self.s.to_xf()) } else { F::zero() } }
    }
}

impl<F: Real> Dual<F> {
    /// Infallible arithmetic for estimates (their [`Scalar`] operations never fail).
    #[inline(always)]
    pub fn plus(&self, o: &Self) -> Self {
        Dual { c: self.c.add(&o.c).unwrap_or_default(), s: if F::SUMS { self.s.add(&o.s).unwrap_or_default() } else { F::zero() } }
    }
    /// `self = self + o`, writing only the halves kept (a count-only dual's sum stays zero).
    #[inline(always)]
    pub fn plus_assign(&mut self, o: &Self) {
        self.c = self.c.add(&o.c).unwrap_or_default();
        if F::SUMS {
            self.s = self.s.add(&o.s).unwrap_or_default();
        }
    }
    #[inline(always)]
    pub fn minus(&self, o: &Self) -> Self {
        Dual { c: self.c.sub(&o.c).unwrap_or_default(), s: if F::SUMS { self.s.sub(&o.s).unwrap_or_default() } else { F::zero() } }
    }
    #[inline(always)]
    pub fn times(&self, o: &Self) -> Self {
        self.mul(o).unwrap_or_else(|_| Dual::zero())
    }
    #[inline(always)]
    pub fn scale(&self, p: f64) -> Self {
        Dual { c: self.c.mul_f64(p), s: if F::SUMS { self.s.mul_f64(p) } else { F::zero() } }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn weight_adds_value_to_every_set() {
        // Two sets through an element of value 5: the count stays, the sum grows by 2·5.
        let sets = Dual::<u128> { c: 2, s: 7 };
        assert_eq!(sets.take(5).unwrap(), Dual { c: 2, s: 17 });
        assert_eq!(sets.mul(&Dual::weight(5)).unwrap(), sets.take(5).unwrap());
        assert!(Dual::<u128> { c: u128::MAX, s: 0 }.take(2).is_err());
    }

    #[test]
    fn exact_tiers_agree() {
        let d = Dual::<u128> { c: 1 << 100, s: 12345 };
        let big = d.to_big();
        let back = Dual::<crate::numbers::num::U256>::from_big(&big).unwrap();
        assert_eq!(back.to_big(), big);
        assert_eq!(back.to_xf(), d.to_xf());
    }
}
