//! Exact counters that never wrap.
//!
//! Every counting structure is generic over [`Num`]. It runs on checked `u128` first; an
//! [`Overflow`] makes the owner rebuild itself over `BigUint` from the raw elements it keeps
//! (see `promote` in exact.rs and summary.rs), so results are exact at any size.
//! Counts and sums travel together as a [`Dual`] number `c + s·ε` with `ε² = 0`: taking an
//! element of value `v` multiplies by `1 + v·ε`, which adds `v` to the sum of every match
//! passing through it. All counting formulas are then the COUNT formulas over this ring.
use num_bigint::BigUint;
use num_traits::{ToPrimitive, Zero};
use serde::{de::DeserializeOwned, Deserialize, Serialize};
use std::fmt::Debug;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Overflow;
pub type R<T> = Result<T, Overflow>;

pub trait Num: Clone + Debug + PartialEq + Serialize + DeserializeOwned + Send + Sync + 'static {
    fn zero() -> Self;
    fn from_u64(v: u64) -> Self;
    fn is_zero(&self) -> bool;
    fn add(&self, o: &Self) -> R<Self>;
    /// `self - o`; a negative result is a logic error and reported as [`Overflow`].
    fn sub(&self, o: &Self) -> R<Self>;
    fn mul(&self, o: &Self) -> R<Self>;
    fn mul_u64(&self, v: u64) -> R<Self>;
    fn to_f64(&self) -> f64;
    fn to_big(&self) -> BigUint;
}

impl Num for u128 {
    #[inline]
    fn zero() -> Self {
        0
    }
    #[inline]
    fn from_u64(v: u64) -> Self {
        v as u128
    }
    #[inline]
    fn is_zero(&self) -> bool {
        *self == 0
    }
    #[inline]
    fn add(&self, o: &Self) -> R<Self> {
        self.checked_add(*o).ok_or(Overflow)
    }
    #[inline]
    fn sub(&self, o: &Self) -> R<Self> {
        self.checked_sub(*o).ok_or(Overflow)
    }
    #[inline]
    fn mul(&self, o: &Self) -> R<Self> {
        // Two factors below 2^64 cannot overflow: skip the (slow, software) checked multiply.
        if (*self | *o) >> 64 == 0 {
            return Ok(self * o);
        }
        self.checked_mul(*o).ok_or(Overflow)
    }
    #[inline]
    fn mul_u64(&self, v: u64) -> R<Self> {
        if *self >> 64 == 0 {
            return Ok(self * v as u128);
        }
        self.checked_mul(v as u128).ok_or(Overflow)
    }
    #[inline]
    fn to_f64(&self) -> f64 {
        *self as f64
    }
    fn to_big(&self) -> BigUint {
        BigUint::from(*self)
    }
}

impl Num for BigUint {
    fn zero() -> Self {
        Zero::zero()
    }
    fn from_u64(v: u64) -> Self {
        BigUint::from(v)
    }
    fn is_zero(&self) -> bool {
        Zero::is_zero(self)
    }
    fn add(&self, o: &Self) -> R<Self> {
        Ok(self + o)
    }
    fn sub(&self, o: &Self) -> R<Self> {
        if o > self {
            Err(Overflow)
        } else {
            Ok(self - o)
        }
    }
    fn mul(&self, o: &Self) -> R<Self> {
        Ok(self * o)
    }
    fn mul_u64(&self, v: u64) -> R<Self> {
        Ok(self * v)
    }
    fn to_f64(&self) -> f64 {
        ToPrimitive::to_f64(self).unwrap_or(f64::INFINITY)
    }
    fn to_big(&self) -> BigUint {
        self.clone()
    }
}

/// `c + s·ε`: a count of matches and the sum of their values.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Dual<N> {
    pub c: N,
    pub s: N,
}

impl<N: Num> Dual<N> {
    #[inline]
    pub fn zero() -> Self {
        Dual { c: N::zero(), s: N::zero() }
    }
    #[inline]
    pub fn one() -> Self {
        Dual { c: N::from_u64(1), s: N::zero() }
    }
    /// The weight `1 + v·ε` of taking an element of value `v`.
    #[inline]
    pub fn weight(v: u64) -> Self {
        Dual { c: N::from_u64(1), s: N::from_u64(v) }
    }
    #[inline]
    pub fn is_zero(&self) -> bool {
        self.c.is_zero() && self.s.is_zero()
    }
    #[inline]
    pub fn add(&self, o: &Self) -> R<Self> {
        Ok(Dual { c: self.c.add(&o.c)?, s: self.s.add(&o.s)? })
    }
    #[inline]
    pub fn add_assign(&mut self, o: &Self) -> R<()> {
        *self = self.add(o)?;
        Ok(())
    }
    #[inline]
    pub fn sub_assign(&mut self, o: &Self) -> R<()> {
        *self = Dual { c: self.c.sub(&o.c)?, s: self.s.sub(&o.s)? };
        Ok(())
    }
    #[inline]
    pub fn mul(&self, o: &Self) -> R<Self> {
        Ok(Dual { c: self.c.mul(&o.c)?, s: self.c.mul(&o.s)?.add(&self.s.mul(&o.c)?)? })
    }
    /// `self · (1 + v·ε)`: pass through an element of value `v`.
    #[inline]
    pub fn take(&self, v: u64) -> R<Self> {
        Ok(Dual { c: self.c.clone(), s: self.s.add(&self.c.mul_u64(v)?)? })
    }
    pub fn to_big(&self) -> Dual<BigUint> {
        Dual { c: self.c.to_big(), s: self.s.to_big() }
    }
    pub fn to_f64(&self) -> DualF {
        DualF { c: self.c.to_f64(), s: self.s.to_f64() }
    }
}

/// Floating-point twin of [`Dual`], used only to rank elements during selection.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
pub struct DualF {
    pub c: f64,
    pub s: f64,
}

impl DualF {
    pub const ZERO: DualF = DualF { c: 0.0, s: 0.0 };
    pub const ONE: DualF = DualF { c: 1.0, s: 0.0 };
    #[inline]
    pub fn weight(v: u64) -> Self {
        DualF { c: 1.0, s: v as f64 }
    }
    #[inline]
    pub fn add(self, o: Self) -> Self {
        DualF { c: self.c + o.c, s: self.s + o.s }
    }
    #[inline]
    pub fn sub(self, o: Self) -> Self {
        DualF { c: self.c - o.c, s: self.s - o.s }
    }
    #[inline]
    pub fn mul(self, o: Self) -> Self {
        DualF { c: self.c * o.c, s: self.c * o.s + self.s * o.c }
    }
    #[inline]
    pub fn is_zero(self) -> bool {
        self.c == 0.0 && self.s == 0.0
    }
    /// Clamp tiny negative drift from cancellation back to zero.
    #[inline]
    pub fn clamp_nonneg(self) -> Self {
        DualF { c: self.c.max(0.0), s: self.s.max(0.0) }
    }
}
