//! An exact counter that lives on a machine word until it outgrows it: each number moves to a
//! big integer on its own, so no rebuild of the whole state is needed (the per-key counts of a
//! conditioned query are many and mostly small).
use crate::numbers::num::{Overflow, Scalar, R};
use num_bigint::BigUint;
use num_traits::{ToPrimitive, Zero};
use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Count {
    Small(u128),
    /// Always above `u128::MAX` (normalised), so equality is structural.
    Big(BigUint),
}

impl Count {
    fn big(&self) -> BigUint {
        match self {
            Count::Small(v) => BigUint::from(*v),
            Count::Big(b) => b.clone(),
        }
    }

    fn norm(b: BigUint) -> Count {
        match b.to_u128() {
            Some(v) => Count::Small(v),
            None => Count::Big(b),
        }
    }

    pub fn from_biguint(b: BigUint) -> Count {
        Count::norm(b)
    }

    pub fn to_biguint(&self) -> BigUint {
        self.big()
    }
}

impl Scalar for Count {
    fn zero() -> Self {
        Count::Small(0)
    }
    fn from_u64(v: u64) -> Self {
        Count::Small(v as u128)
    }
    fn is_zero(&self) -> bool {
        matches!(self, Count::Small(0))
    }
    fn add(&self, o: &Self) -> R<Self> {
        // one allocation for a big sum (a sum only grows: no normalising back)
        Ok(match (self, o) {
            (Count::Small(a), Count::Small(b)) => match a.checked_add(*b) {
                Some(v) => Count::Small(v),
                None => Count::Big(BigUint::from(*a) + *b),
            },
            (Count::Big(a), Count::Small(b)) | (Count::Small(b), Count::Big(a)) => Count::Big(a + BigUint::from(*b)),
            (Count::Big(a), Count::Big(b)) => Count::Big(a + b),
        })
    }
    /// Exact: a negative result is a logic error, reported as [`Overflow`].
    fn sub(&self, o: &Self) -> R<Self> {
        if let (Count::Small(a), Count::Small(b)) = (self, o) {
            return a.checked_sub(*b).map(Count::Small).ok_or(Overflow);
        }
        match (self, o) {
            (Count::Big(a), Count::Small(b)) => Ok(Count::norm(a - BigUint::from(*b))),
            (Count::Big(a), Count::Big(b)) if a >= b => Ok(Count::norm(a - b)),
            _ => Err(Overflow), // a small count minus a big one
        }
    }
    fn mul(&self, o: &Self) -> R<Self> {
        if let (Count::Small(a), Count::Small(b)) = (self, o) {
            if let Some(v) = a.checked_mul(*b) {
                return Ok(Count::Small(v));
            }
        }
        Ok(Count::norm(self.big() * o.big()))
    }
    fn mul_u64(&self, v: u64) -> R<Self> {
        self.mul(&Count::Small(v as u128))
    }
}

impl Zero for Count {
    fn zero() -> Self {
        Count::Small(0)
    }
    fn is_zero(&self) -> bool {
        matches!(self, Count::Small(0))
    }
}

impl std::ops::Add for Count {
    type Output = Count;
    fn add(self, o: Count) -> Count {
        Scalar::add(&self, &o).expect("addition cannot fail")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn count(b: &BigUint) -> Count {
        Count::norm(b.clone())
    }

    proptest! {
        /// Sums, differences and products equal big-integer arithmetic across the word's edge.
        #[test]
        fn arithmetic_equals_big_integers(a in any::<u128>(), b in any::<u128>(), shift in 0u32..3, k in any::<u64>()) {
            let (x, y) = (BigUint::from(a) << (64 * shift), BigUint::from(b));
            prop_assert_eq!(Scalar::add(&count(&x), &count(&y)).unwrap(), count(&(&x + &y)));
            prop_assert_eq!(Scalar::add(&count(&y), &count(&x)).unwrap(), count(&(&x + &y)));
            prop_assert_eq!(count(&x).mul_u64(k).unwrap(), count(&(&x * k)));
            if x >= y {
                prop_assert_eq!(count(&x).sub(&count(&y)).unwrap(), count(&(&x - &y)));
            } else {
                prop_assert_eq!(count(&x).sub(&count(&y)), Err(Overflow));
            }
        }
    }

    #[test]
    fn moves_to_big_integers_and_back() {
        let max = Count::Small(u128::MAX);
        let over = Scalar::add(&max, &Count::Small(1)).unwrap();
        assert!(matches!(over, Count::Big(_)));
        assert_eq!(over.sub(&Count::Small(1)).unwrap(), max);
        assert_eq!(Count::Small(1).sub(&Count::Small(2)), Err(Overflow));
        assert_eq!(over.mul_u64(2).unwrap().to_biguint(), BigUint::from(u128::MAX) * 2u32 + 2u32);
    }
}
