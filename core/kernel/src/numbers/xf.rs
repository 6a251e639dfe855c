//! `Xf`: a non-negative float with an exponent that does not run out.
//!
//! Selection ranks elements by estimated match counts that outgrow `f64` (10^308) long before
//! exact counters stop: a summary of a few thousand elements holds 2^1000+ matches, and in
//! `f64` every such score becomes infinity and selection can no longer tell them apart. `Xf`
//! keeps a mantissa `m` in [2^-256, 2^256) (or 0) and a chunk exponent `e`, value
//! `m · 2^(512·e)`. Scaling by powers of two is exact, so below 2^256 every operation gives
//! bit for bit what plain `f64` gives (the selection of earlier releases is kept exactly), and
//! the common case (e equal) costs one compare per operation beyond the float arithmetic.
//! Values are estimates of non-negative quantities: subtraction clamps at zero.
use crate::numbers::dual::Dual;
use crate::numbers::num::{Scalar, R};
use serde::{Deserialize, Serialize};
use std::cmp::Ordering;

const HI: f64 = 1.157_920_892_373_162e77; // 2^256
const LO: f64 = 1.0 / HI; // 2^-256
const DOWN: f64 = LO * LO; // 2^-512
const UP: f64 = HI * HI; // 2^512
const CHUNK: i64 = 512;

#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
pub struct Xf {
    m: f64,
    e: i32,
}

impl Xf {
    pub const ZERO: Xf = Xf { m: 0.0, e: 0 };
    pub const ONE: Xf = Xf { m: 1.0, e: 0 };

    #[inline(always)]
    fn norm(m: f64, e: i32) -> Xf {
        if (LO..HI).contains(&m) {
            return Xf { m, e }; // the common case: one range check
        }
        if m == 0.0 {
            return Xf::ZERO; // common too: sparse matrices are mostly zeros
        }
        Xf::renorm(m, e)
    }

    #[cold]
    #[inline(never)]
    fn renorm(mut m: f64, mut e: i32) -> Xf {
        if m >= HI {
            while m >= HI {
                m *= DOWN;
                e += 1;
            }
        } else {
            if m <= 0.0 || m.is_nan() {
                return Xf::ZERO;
            }
            while m < LO {
                m *= UP;
                e -= 1;
            }
        }
        Xf { m, e }
    }

    /// A finite, non-negative float (negative and NaN become 0, infinity the largest value).
    #[inline(always)]
    pub fn from_f64(x: f64) -> Xf {
        if x.is_infinite() {
            return Xf { m: HI / 2.0, e: i32::MAX / 2 };
        }
        Xf::norm(x, 0)
    }

    /// `m · 2^shift` for a mantissa `m` in [1, 2^64] and any non-negative shift.
    pub fn from_parts(m: f64, shift: i64) -> Xf {
        let chunks = shift / CHUNK;
        let rest = (shift % CHUNK) as i32;
        let mut x = Xf::norm(m * 2f64.powi(rest), 0);
        x.e = x.e.saturating_add(chunks.min(i32::MAX as i64 / 2) as i32);
        x
    }

    /// Whether the value is one [`Xf::norm`] can produce: zero, or a finite mantissa in
    /// [2^-256, 2^256) (what a loaded saved state must hold; others make `renorm` loop).
    pub fn is_well_formed(self) -> bool {
        (self.m == 0.0 && self.e == 0) || ((LO..HI).contains(&self.m) && self.e.unsigned_abs() <= i32::MAX as u32 / 2)
    }

    /// The nearest `f64` (infinity past 10^308): for display and tests only.
    pub fn to_f64(self) -> f64 {
        let (mut m, mut e) = (self.m, self.e);
        while e > 0 && m.is_finite() {
            m *= UP;
            e -= 1;
        }
        while e < 0 && m != 0.0 {
            m *= DOWN;
            e += 1;
        }
        m
    }

    /// `log2` of the value (−∞ for 0), for reports of scores past `f64`.
    pub fn log2(self) -> f64 {
        self.m.log2() + (CHUNK * self.e as i64) as f64
    }

    #[inline(always)]
    pub fn mul_f64(self, p: f64) -> Xf {
        Xf::norm(self.m * p, self.e)
    }

    #[inline(always)]
    pub fn half(self) -> Xf {
        Xf::norm(self.m * 0.5, self.e)
    }

    #[inline(always)]
    fn plus(self, o: Xf) -> Xf {
        if self.e == o.e {
            return Xf::norm(self.m + o.m, self.e);
        }
        if self.m == 0.0 {
            return o;
        }
        if o.m == 0.0 {
            return self;
        }
        let (big, small) = if self.e > o.e { (self, o) } else { (o, self) };
        if big.e - small.e == 1 {
            Xf::norm(big.m + small.m * DOWN, big.e)
        } else {
            big // the smaller is below 2^-512 of the larger: under the mantissa's precision
        }
    }

    #[inline(always)]
    fn minus(self, o: Xf) -> Xf {
        if o.m == 0.0 {
            return self;
        }
        match self.e.cmp(&o.e) {
            Ordering::Equal => Xf::norm(self.m - o.m, self.e),
            Ordering::Less => Xf::ZERO,
            Ordering::Greater if self.e - o.e == 1 => Xf::norm(self.m - o.m * DOWN, self.e),
            Ordering::Greater => self,
        }
    }

    #[inline(always)]
    fn times(self, o: Xf) -> Xf {
        // A zero factor gives m = 0, which `norm` turns into the canonical zero.
        Xf::norm(self.m * o.m, self.e + o.e)
    }
}

impl PartialOrd for Xf {
    fn partial_cmp(&self, o: &Self) -> Option<Ordering> {
        // Canonical form: zero is (0, 0); otherwise a larger chunk means a larger value.
        match (self.m == 0.0, o.m == 0.0) {
            (true, true) => Some(Ordering::Equal),
            (true, false) => Some(Ordering::Less),
            (false, true) => Some(Ordering::Greater),
            _ => match self.e.cmp(&o.e) {
                Ordering::Equal => self.m.partial_cmp(&o.m),
                ord => Some(ord),
            },
        }
    }
}

impl Scalar for Xf {
    crate::numbers::num::copy_duals_bytes!();
    #[inline(always)]
    fn zero() -> Self {
        Xf::ZERO
    }
    #[inline(always)]
    fn from_u64(v: u64) -> Self {
        Xf::from_f64(v as f64)
    }
    #[inline(always)]
    fn is_zero(&self) -> bool {
        self.m == 0.0
    }
    #[inline(always)]
    fn add(&self, o: &Self) -> R<Self> {
        Ok(self.plus(*o))
    }
    #[inline(always)]
    fn sub(&self, o: &Self) -> R<Self> {
        Ok(self.minus(*o))
    }
    #[inline(always)]
    fn mul(&self, o: &Self) -> R<Self> {
        Ok(self.times(*o))
    }
    #[inline(always)]
    fn mul_u64(&self, v: u64) -> R<Self> {
        Ok(self.mul_f64(v as f64))
    }
}


/// The float type of the selection estimates: plain `f64` while every estimate is known to
/// stay far inside its range ([`narrow_fits`] and the expected-future coefficients below
/// [`NARROW_LIMIT`]), [`Xf`] after that. The two agree exactly where both apply, so a
/// summary switches (once, see `Summary::fit_estimates`) without changing any decision.
pub trait Real: Scalar + Copy + PartialOrd + Default {
    const ONE: Self;
    fn from_f64(x: f64) -> Self;
    fn from_xf(x: Xf) -> Self;
    fn to_xf(self) -> Xf;
    fn mul_f64(self, p: f64) -> Self;
    fn half(self) -> Self;
    /// The float this one computes in: itself, or the one a [`Counts`] wraps (tables shared by
    /// both, like the expected-future coefficients, are kept in the plain floats only).
    type Plain: Real;
    fn plain(self) -> Self::Plain;
    fn from_plain(x: Self::Plain) -> Self;
    /// This type's copy of a table kept in both.
    fn pick<'a>(narrow: &'a [Vec<Dual<f64>>], wide: &'a [Vec<Dual<Xf>>]) -> &'a [Vec<Dual<Self::Plain>>];
}

/// Estimates stay `f64` while the coefficients are below this: with counts below 2^256
/// ([`narrow_fits`]) and values below 2^64, every product of a count (or sum) and a
/// coefficient, and their sums over the states and elements, stay under 2^900.
pub const NARROW_LIMIT: f64 = 1.0e180; // ~2^598

/// The largest summary whose estimates stay `f64` once the exact counters are on `U256`.
/// Besides counts of real sets (below the counters' width), the sweeps multiply products of
/// the step matrices over up to |S| elements: their entries count subsets of those elements,
/// at most 2^|S| (sums at most 2^|S|·|S|·2^64), which stays under 2^860 up to here.
pub const NARROW_SPAN: usize = 768;

/// Whether the selection estimates of a summary of `size` elements whose exact counters are
/// below 2^`count_bits` (`None`: unbounded) stay inside `f64`'s normal range, where `f64` and
/// [`Xf`] give the same bits. On `u64` and `u128` every count is far below it; on `U256` the
/// counts are too (2^256 times a coefficient below [`NARROW_LIMIT`] is about 2^854), and the
/// step products over the summary's elements are while it holds at most [`NARROW_SPAN`].
pub fn narrow_fits(count_bits: Option<u32>, size: usize) -> bool {
    match count_bits {
        Some(bits) if bits <= 128 => true,
        Some(256) => size <= NARROW_SPAN,
        _ => false,
    }
}

impl Scalar for f64 {
    crate::numbers::num::copy_duals_bytes!();
    #[inline(always)]
    fn zero() -> Self {
        0.0
    }
    #[inline(always)]
    fn from_u64(v: u64) -> Self {
        v as f64
    }
    #[inline(always)]
    fn is_zero(&self) -> bool {
        *self == 0.0
    }
    #[inline(always)]
    fn add(&self, o: &Self) -> R<Self> {
        Ok(self + o)
    }
    #[inline(always)]
    fn sub(&self, o: &Self) -> R<Self> {
        Ok((self - o).max(0.0)) // like Xf: estimates clamp at zero
    }
    #[inline(always)]
    fn mul(&self, o: &Self) -> R<Self> {
        Ok(self * o)
    }
    #[inline(always)]
    fn mul_u64(&self, v: u64) -> R<Self> {
        Ok(self * v as f64)
    }
}

impl Real for f64 {
    const ONE: f64 = 1.0;
    #[inline(always)]
    fn from_f64(x: f64) -> Self {
        x
    }
    #[inline(always)]
    fn from_xf(x: Xf) -> Self {
        x.to_f64()
    }
    #[inline(always)]
    fn to_xf(self) -> Xf {
        Xf::from_f64(self)
    }
    #[inline(always)]
    fn mul_f64(self, p: f64) -> Self {
        self * p
    }
    #[inline(always)]
    fn half(self) -> Self {
        self * 0.5
    }
    type Plain = f64;
    #[inline(always)]
    fn plain(self) -> f64 {
        self
    }
    #[inline(always)]
    fn from_plain(x: f64) -> Self {
        x
    }
    fn pick<'a>(narrow: &'a [Vec<Dual<f64>>], _wide: &'a [Vec<Dual<Xf>>]) -> &'a [Vec<Dual<f64>>] {
        narrow
    }
}

impl Real for Xf {
    const ONE: Xf = Xf::ONE;
    #[inline(always)]
    fn from_f64(x: f64) -> Self {
        Xf::from_f64(x)
    }
    #[inline(always)]
    fn from_xf(x: Xf) -> Self {
        x
    }
    #[inline(always)]
    fn to_xf(self) -> Xf {
        self
    }
    #[inline(always)]
    fn mul_f64(self, p: f64) -> Self {
        Xf::mul_f64(self, p)
    }
    #[inline(always)]
    fn half(self) -> Self {
        Xf::half(self)
    }
    type Plain = Xf;
    #[inline(always)]
    fn plain(self) -> Xf {
        self
    }
    #[inline(always)]
    fn from_plain(x: Xf) -> Self {
        x
    }
    fn pick<'a>(_narrow: &'a [Vec<Dual<f64>>], wide: &'a [Vec<Dual<Xf>>]) -> &'a [Vec<Dual<Xf>>] {
        wide
    }
}

/// A selection float (`f64` or [`Xf`]) whose duals carry no sum (`SUMS` is false): the
/// estimates of a summary whose aggregate is not SUM, which reads only counts. Every
/// operation is `F`'s, so the counts are bit for bit those of `Dual<F>`.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Counts<F>(pub F);

/// `F`'s comparisons themselves: a derived `<` would go through `partial_cmp` (for `f64` a few
/// branches where `<` is one instruction, in selection's hottest loop).
impl<F: PartialOrd> PartialOrd for Counts<F> {
    #[inline(always)]
    fn partial_cmp(&self, o: &Self) -> Option<Ordering> {
        self.0.partial_cmp(&o.0)
    }
    #[inline(always)]
    fn lt(&self, o: &Self) -> bool {
        self.0 < o.0
    }
    #[inline(always)]
    fn le(&self, o: &Self) -> bool {
        self.0 <= o.0
    }
    #[inline(always)]
    fn gt(&self, o: &Self) -> bool {
        self.0 > o.0
    }
    #[inline(always)]
    fn ge(&self, o: &Self) -> bool {
        self.0 >= o.0
    }
}

impl<F: Real> Scalar for Counts<F> {
    const SUMS: bool = false;
    crate::numbers::num::copy_duals_bytes!();
    #[inline(always)]
    fn zero() -> Self {
        Counts(F::zero())
    }
    #[inline(always)]
    fn from_u64(v: u64) -> Self {
        Counts(F::from_u64(v))
    }
    #[inline(always)]
    fn is_zero(&self) -> bool {
        self.0.is_zero()
    }
    #[inline(always)]
    fn add(&self, o: &Self) -> R<Self> {
        self.0.add(&o.0).map(Counts)
    }
    #[inline(always)]
    fn sub(&self, o: &Self) -> R<Self> {
        self.0.sub(&o.0).map(Counts)
    }
    #[inline(always)]
    fn mul(&self, o: &Self) -> R<Self> {
        self.0.mul(&o.0).map(Counts)
    }
    #[inline(always)]
    fn mul_u64(&self, v: u64) -> R<Self> {
        self.0.mul_u64(v).map(Counts)
    }
}

impl<F: Real<Plain = F>> Real for Counts<F> {
    const ONE: Self = Counts(F::ONE);
    #[inline(always)]
    fn from_f64(x: f64) -> Self {
        Counts(F::from_f64(x))
    }
    #[inline(always)]
    fn from_xf(x: Xf) -> Self {
        Counts(F::from_xf(x))
    }
    #[inline(always)]
    fn to_xf(self) -> Xf {
        self.0.to_xf()
    }
    #[inline(always)]
    fn mul_f64(self, p: f64) -> Self {
        Counts(self.0.mul_f64(p))
    }
    #[inline(always)]
    fn half(self) -> Self {
        Counts(self.0.half())
    }
    type Plain = F;
    #[inline(always)]
    fn plain(self) -> F {
        self.0
    }
    #[inline(always)]
    fn from_plain(x: F) -> Self {
        Counts(x)
    }
    fn pick<'a>(narrow: &'a [Vec<Dual<f64>>], wide: &'a [Vec<Dual<Xf>>]) -> &'a [Vec<Dual<F>>] {
        F::pick(narrow, wide)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn equals_f64_in_f64_range() {
        let vals = [0.0, 1e-300, 3.5e-80, 0.25, 1.0, 7.0, 1e20, 3.3e76, 1.2e77, 9e150, 1e300];
        for &a in &vals {
            for &b in &vals {
                let (xa, xb) = (Xf::from_f64(a), Xf::from_f64(b));
                assert_eq!(xa.plus(xb).to_f64(), a + b, "{a} + {b}");
                if a * b < 1e300 && a * b > 1e-300 {
                    assert_eq!(xa.times(xb).to_f64(), a * b, "{a} * {b}");
                }
                assert_eq!(xa.minus(xb).to_f64(), (a - b).max(0.0), "{a} - {b}");
                assert_eq!(xa.partial_cmp(&xb), a.partial_cmp(&b), "{a} vs {b}");
            }
        }
    }

    #[test]
    fn stays_comparable_past_f64() {
        let two = Xf::from_f64(2.0);
        let mut x = Xf::ONE;
        for _ in 0..1100 {
            x = x.times(two);
        }
        let y = x.plus(x); // 2^1101
        assert!(y > x && x > Xf::from_f64(1e308));
        assert!((x.log2() - 1100.0).abs() < 1e-9);
        assert!((y.minus(x).log2() - 1100.0).abs() < 1e-9);
        let z = x.times(x); // 2^2200
        assert!(z > y && (z.log2() - 2200.0).abs() < 1e-9);
    }

    proptest! {
        #[test]
        fn ordering_matches_logarithms(a in 0.0f64..1e6, b in 0.0f64..1e6, ka in 0u32..6, kb in 0u32..6) {
            // Raise to large powers by repeated squaring; compare with log2 computed directly.
            let (mut xa, mut xb) = (Xf::from_f64(a + 1.0), Xf::from_f64(b + 1.0));
            let (mut la, mut lb) = ((a + 1.0).log2(), (b + 1.0).log2());
            for _ in 0..ka { xa = xa.times(xa); la *= 2.0; }
            for _ in 0..kb { xb = xb.times(xb); lb *= 2.0; }
            prop_assert!((xa.log2() - la).abs() <= 1e-9 * la.max(1.0));
            if (la - lb).abs() > 1e-6 * la.max(lb).max(1.0) {
                prop_assert_eq!(xa < xb, la < lb);
            }
        }
    }
}
