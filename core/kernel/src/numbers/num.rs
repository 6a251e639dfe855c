//! The number types every counter is generic over.
//!
//! [`Scalar`] is what a counting kernel needs: a commutative semiring with a checked add and
//! multiply, and a subtraction used only to take back what was added. [`Num`] adds what exact
//! counters need on top: conversion to big integers and back. Exact counters run on checked
//! `u64` first, then `u128`, then on 256-bit integers, then on [`BigUint`]; an [`Overflow`] makes the owner
//! rebuild itself one tier up (see `tier.rs`), so results are exact at any size and the common
//! case stays on machine words. Selection estimates use [`crate::numbers::xf::Xf`], a float whose
//! exponent does not run out.
use num_bigint::BigUint;
use num_traits::ToPrimitive;
use serde::{de::DeserializeOwned, Serialize};
use std::fmt::Debug;

/// A counter left its number type (or, for exact types, a subtraction went below zero,
/// which only a logic error can cause and which the tier ladder reports as such).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Overflow;
pub type R<T> = Result<T, Overflow>;

pub type U256 = ruint::aliases::U256;

pub trait Scalar: Clone + Debug + PartialEq + Serialize + DeserializeOwned + Send + Sync + 'static {
    /// Whether a [`crate::numbers::dual::Dual`] over this type keeps its sum half. Only the
    /// count-only estimates ([`crate::numbers::xf::Counts`]) say no: nothing reads their sums.
    const SUMS: bool = true;
    fn zero() -> Self;
    fn from_u64(v: u64) -> Self;
    fn is_zero(&self) -> bool;
    fn add(&self, o: &Self) -> R<Self>;
    /// `self - o`. Exact types report a negative result as [`Overflow`]; estimates clamp at 0.
    fn sub(&self, o: &Self) -> R<Self>;
    fn mul(&self, o: &Self) -> R<Self>;
    fn mul_u64(&self, v: u64) -> R<Self>;
    /// `dst` set to `src` (same length). A machine type copies the bytes: the derived clone
    /// of a generic [`Dual`](crate::numbers::dual::Dual) stays an element-by-element loop,
    /// which the library copy beats for a whole matrix.
    #[inline(always)]
    fn copy_duals(dst: &mut [crate::numbers::dual::Dual<Self>], src: &[crate::numbers::dual::Dual<Self>]) {
        dst.clone_from_slice(src);
    }
}

/// [`Scalar::copy_duals`] for a `Copy` type.
macro_rules! copy_duals_bytes {
    () => {
        #[inline(always)]
        fn copy_duals(dst: &mut [$crate::numbers::dual::Dual<Self>], src: &[$crate::numbers::dual::Dual<Self>]) {
            dst.copy_from_slice(src);
        }
    };
}
pub(crate) use copy_duals_bytes;

/// An exact counter type.
pub trait Num: Scalar {
    /// Short name for messages and tests.
    const NAME: &'static str;
    fn to_big(&self) -> BigUint;
    /// The value in this type, or [`Overflow`] if it does not fit.
    fn from_big(b: &BigUint) -> R<Self>;
    /// Correctly rounded conversion to the selection estimates' float.
    fn to_xf(&self) -> crate::numbers::xf::Xf;
}

/// The operations machine integers share: checked add and subtract, zero tests.
macro_rules! checked_common {
    ($zero:expr) => {
        #[inline]
        fn zero() -> Self {
            $zero
        }
        #[inline]
        fn from_u64(v: u64) -> Self {
            Self::from(v)
        }
        #[inline]
        fn is_zero(&self) -> bool {
            *self == $zero
        }
        #[inline]
        fn add(&self, o: &Self) -> R<Self> {
            self.checked_add(*o).ok_or(Overflow)
        }
        #[inline]
        fn sub(&self, o: &Self) -> R<Self> {
            self.checked_sub(*o).ok_or(Overflow)
        }
    };
}

impl Scalar for u64 {
    checked_common!(0);
    copy_duals_bytes!();
    #[inline]
    fn mul(&self, o: &Self) -> R<Self> {
        self.checked_mul(*o).ok_or(Overflow)
    }
    #[inline]
    fn mul_u64(&self, v: u64) -> R<Self> {
        self.checked_mul(v).ok_or(Overflow)
    }
}

impl Num for u64 {
    const NAME: &'static str = "u64";
    fn to_big(&self) -> BigUint {
        BigUint::from(*self)
    }
    fn from_big(b: &BigUint) -> R<Self> {
        b.to_u64().ok_or(Overflow)
    }
    #[inline]
    fn to_xf(&self) -> crate::numbers::xf::Xf {
        // Rounds to nearest like the wider tiers' conversions (the selection must not see the tier).
        crate::numbers::xf::Xf::from_f64(*self as f64)
    }
}

impl Scalar for u128 {
    checked_common!(0);
    copy_duals_bytes!();
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
}

impl Num for u128 {
    const NAME: &'static str = "u128";
    fn to_big(&self) -> BigUint {
        BigUint::from(*self)
    }
    fn from_big(b: &BigUint) -> R<Self> {
        b.to_u128().ok_or(Overflow)
    }
    #[inline]
    fn to_xf(&self) -> crate::numbers::xf::Xf {
        crate::numbers::xf::Xf::from_f64(*self as f64)
    }
}

impl Scalar for U256 {
    checked_common!(U256::ZERO);
    #[inline]
    fn mul(&self, o: &Self) -> R<Self> {
        self.checked_mul(*o).ok_or(Overflow)
    }
    #[inline]
    fn mul_u64(&self, v: u64) -> R<Self> {
        self.checked_mul(U256::from(v)).ok_or(Overflow)
    }
}

impl Num for U256 {
    const NAME: &'static str = "u256";
    fn to_big(&self) -> BigUint {
        BigUint::from_bytes_le(&self.to_le_bytes::<32>())
    }
    fn from_big(b: &BigUint) -> R<Self> {
        if b.bits() > 256 {
            return Err(Overflow);
        }
        let bytes = b.to_bytes_le();
        U256::try_from_le_slice(&bytes).ok_or(Overflow)
    }
    fn to_xf(&self) -> crate::numbers::xf::Xf {
        let bits = self.bit_len();
        if bits <= 128 {
            let limbs = self.as_limbs();
            return ((limbs[1] as u128) << 64 | limbs[0] as u128).to_xf();
        }
        // The top 64 bits with a sticky bit for the rest round correctly to 53 bits.
        let shift = bits - 64;
        let top = (*self >> shift).as_limbs()[0];
        let sticky = (*self & ((U256::from(1u8) << shift) - U256::from(1u8))) != U256::ZERO;
        crate::numbers::xf::Xf::from_parts((top | sticky as u64) as f64, shift as i64)
    }
}

impl Scalar for BigUint {
    fn zero() -> Self {
        num_traits::Zero::zero()
    }
    fn from_u64(v: u64) -> Self {
        BigUint::from(v)
    }
    fn is_zero(&self) -> bool {
        num_traits::Zero::is_zero(self)
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
}

impl Num for BigUint {
    const NAME: &'static str = "big";
    fn to_big(&self) -> BigUint {
        self.clone()
    }
    fn from_big(b: &BigUint) -> R<Self> {
        Ok(b.clone())
    }
    fn to_xf(&self) -> crate::numbers::xf::Xf {
        let bits = self.bits();
        if bits <= 1000 {
            return crate::numbers::xf::Xf::from_f64(ToPrimitive::to_f64(self).unwrap_or(0.0));
        }
        let shift = bits - 64;
        let top = (self >> shift).to_u64().unwrap_or(u64::MAX);
        let sticky = self.trailing_zeros().is_some_and(|z| z < shift);
        crate::numbers::xf::Xf::from_parts((top | sticky as u64) as f64, shift as i64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn u64_checks_overflow() {
        assert_eq!(u64::MAX.add(&1), Err(Overflow));
        assert_eq!((1u64 << 32).mul(&(1u64 << 32)), Err(Overflow));
        assert_eq!((1u64 << 31).mul(&(1u64 << 32)), Ok(1u64 << 63));
        assert_eq!(3u64.sub(&4), Err(Overflow));
        assert_eq!((u64::MAX >> 1).mul_u64(3), Err(Overflow));
        assert_eq!(u64::from_big(&(BigUint::from(1u8) << 64)), Err(Overflow));
    }

    #[test]
    fn u128_checks_overflow() {
        assert_eq!(u128::MAX.add(&1), Err(Overflow));
        assert_eq!((1u128 << 64).mul(&(1u128 << 64)), Err(Overflow));
        assert_eq!((1u128 << 63).mul(&2), Ok(1u128 << 64));
        assert_eq!(3u128.sub(&4), Err(Overflow));
        assert_eq!((u128::MAX >> 1).mul_u64(3), Err(Overflow));
    }

    #[test]
    fn u256_round_trips_through_big() {
        let big = BigUint::from(3u8).pow(150); // 238 bits
        let x = U256::from_big(&big).unwrap();
        assert_eq!(x.to_big(), big);
        assert_eq!(U256::from_big(&BigUint::from(2u8).pow(256)), Err(Overflow));
        assert_eq!(U256::MAX.add(&U256::from(1u8)), Err(Overflow));
        assert_eq!(u128::from_big(&(BigUint::from(1u8) << 128)), Err(Overflow));
    }

    #[test]
    fn conversions_to_float_round_like_big_integers() {
        // Every tier converts a value to the same float: the selection must not depend on it.
        for k in [1u32, 20, 22, 60, 100, 127, 200, 255] {
            for delta in [0u64, 1, 12345] {
                let big: BigUint = (BigUint::from(7u8).pow(k) >> 1) + delta;
                if big.bits() > 256 {
                    continue;
                }
                let want = big.to_xf();
                assert_eq!(U256::from_big(&big).unwrap().to_xf(), want, "7^{k}/2+{delta}");
                if let Ok(small) = u128::from_big(&big) {
                    assert_eq!(small.to_xf(), want);
                }
                if let Ok(word) = u64::from_big(&big) {
                    assert_eq!(word.to_xf(), want);
                }
            }
        }
    }
}
