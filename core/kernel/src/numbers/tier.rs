//! Overflow promotion, once for every exact structure: u64 → u128 → 256 bits → big integers.
//!
//! An exact structure is written once, generic over [`Num`], and named as a [`Family`] (the
//! same structure at every number type). A [`Ladder`] holds it at the narrowest type that
//! has fitted so far. An operation runs through [`promoting!`]: on [`Overflow`] the ladder
//! [`widens`](Family::widen) the structure from what it keeps raw (its committed state: an
//! operation must leave that intact when it fails) and runs the operation again.
//! Overflow at the last tier can only be a logic error (a subtraction below zero), and is
//! reported as an internal error instead of a panic.
use crate::engine::error::Error;
use crate::numbers::num::{Num, U256};
use num_bigint::BigUint;
use serde::{Deserialize, Serialize};

pub trait Family: 'static {
    type At<N: Num>: Clone + Send + Sync;
    /// What a rebuild needs beside the structure itself.
    type Ctx<'a>;
    /// The structure over `M`, rebuilt from the committed state of `part`.
    fn widen<N: Num, M: Num>(ctx: &Self::Ctx<'_>, part: &Self::At<N>) -> crate::numbers::num::R<Self::At<M>>;
}

#[derive(Serialize, Deserialize)]
#[serde(bound(
    serialize = "F::At<u64>: Serialize, F::At<u128>: Serialize, F::At<U256>: Serialize, F::At<BigUint>: Serialize",
    deserialize = "F::At<u64>: Deserialize<'de>, F::At<u128>: Deserialize<'de>, F::At<U256>: Deserialize<'de>, F::At<BigUint>: Deserialize<'de>"
))]
pub enum Ladder<F: Family> {
    U128(F::At<u128>),
    U256(F::At<U256>),
    Big(F::At<BigUint>),
    /// The first tier, declared last so that states saved before it existed keep their encoding.
    U64(F::At<u64>),
}

impl<F: Family> Clone for Ladder<F> {
    fn clone(&self) -> Self {
        match self {
            Ladder::U64(p) => Ladder::U64(p.clone()),
            Ladder::U128(p) => Ladder::U128(p.clone()),
            Ladder::U256(p) => Ladder::U256(p.clone()),
            Ladder::Big(p) => Ladder::Big(p.clone()),
        }
    }
}

/// Run `$body` (an expression in `$p`, the structure at its current tier, returning
/// `R<T>`) on `$ladder`, widening and retrying on overflow. Evaluates to `Result<T, Error>`.
#[macro_export]
macro_rules! promoting {
    ($ladder:expr, $ctx:expr, |$p:ident| $body:expr) => {{
        loop {
            let r = $crate::on_tier!($ladder, |$p| $body);
            match r {
                Ok(v) => break Ok(v),
                Err($crate::numbers::num::Overflow) => {
                    if let Err(e) = $ladder.widen($ctx) {
                        break Err(e);
                    }
                }
            }
        }
    }};
}

/// `$body` on the structure at whatever tier it is (no promotion).
#[macro_export]
macro_rules! on_tier {
    ($ladder:expr, |$p:ident| $body:expr) => {
        match $ladder {
            $crate::numbers::tier::Ladder::U64($p) => $body,
            $crate::numbers::tier::Ladder::U128($p) => $body,
            $crate::numbers::tier::Ladder::U256($p) => $body,
            $crate::numbers::tier::Ladder::Big($p) => $body,
        }
    };
}

impl<F: Family> Ladder<F> {
    pub fn tier(&self) -> &'static str {
        match self {
            Ladder::U64(_) => u64::NAME,
            Ladder::U128(_) => u128::NAME,
            Ladder::U256(_) => U256::NAME,
            Ladder::Big(_) => BigUint::NAME,
        }
    }

    /// The width in bits every counter is below, `None` once they are unbounded integers.
    pub fn bits(&self) -> Option<u32> {
        match self {
            Ladder::U64(_) => Some(64),
            Ladder::U128(_) => Some(128),
            Ladder::U256(_) => Some(256),
            Ladder::Big(_) => None,
        }
    }

    /// Move one tier up (further if the next ones do not fit either).
    pub fn widen(&mut self, ctx: &F::Ctx<'_>) -> Result<(), Error> {
        *self = match self {
            Ladder::U64(p) => Self::above(ctx, p, 64)?,
            Ladder::U128(p) => Self::above(ctx, p, 128)?,
            Ladder::U256(p) => Self::above(ctx, p, 256)?,
            Ladder::Big(_) => return Err(Error::internal("an exact counter went below zero")),
        };
        Ok(())
    }

    /// The structure rebuilt from `part` (held in `bits`-bit integers) at the narrowest wider
    /// tier that holds it.
    fn above<N: Num>(ctx: &F::Ctx<'_>, part: &F::At<N>, bits: u32) -> Result<Self, Error> {
        if bits < 128 {
            if let Ok(w) = F::widen::<N, u128>(ctx, part) {
                return Ok(Ladder::U128(w));
            }
        }
        if bits < 256 {
            if let Ok(w) = F::widen::<N, U256>(ctx, part) {
                return Ok(Ladder::U256(w));
            }
        }
        F::widen::<N, BigUint>(ctx, part).map(Ladder::Big).map_err(|_| Error::internal("a rebuild over big integers failed"))
    }
}

/// Build a ladder at the narrowest tier whose build succeeds: `$make` is an expression in the
/// type alias `$n`, returning `R<F::At<$n>>`.
#[macro_export]
macro_rules! narrowest {
    ($n:ident => $make:expr) => {{
        let word = { type $n = u64; $make };
        match word {
            Ok(p) => $crate::numbers::tier::Ladder::U64(p),
            Err(_) => match { type $n = u128; $make } {
                Ok(p) => $crate::numbers::tier::Ladder::U128(p),
                Err(_) => match { type $n = $crate::numbers::num::U256; $make } {
                    Ok(p) => $crate::numbers::tier::Ladder::U256(p),
                    Err(_) => $crate::numbers::tier::Ladder::Big({ type $n = num_bigint::BigUint; $make }.map_err(|_| $crate::engine::error::Error::internal("a build over big integers failed"))?),
                },
            },
        }
    }};
}
