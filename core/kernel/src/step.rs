//! The one counter update of skip-till-any-match, for every layout and number type.
//!
//! Taking an element of symbol `c` and value `v` multiplies by the step operator
//! `M_c = I + (1+vε)·T_c`, where `T_c` has a 1 at `(q, δ(q,c))`. Every counting structure is
//! a vector or a matrix of [`Dual`]s indexed by automaton states, and multiplying it by `M_c`
//! (or `M_cᵀ`) on either side is the same sparse update: for each transition, one cell gains
//! `(1+vε)·` another. [`step`] is that update, written once; callers say which side and which
//! layout. It runs in place in a dependency-safe transition order when the automaton has one
//! (precomputed in [`Dfa`]), and from a copy otherwise.
use crate::dfa::Dfa;
use crate::dual::Dual;
use crate::num::{Scalar, R};

/// Which state of a transition `(q, q2 = δ(q,c))` gains.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dir {
    /// `q2` gains from `q`: a set moves along the transition (`x · M_c`).
    Forward,
    /// `q` gains from `q2`: what lies after is pulled back (`M_c · x`).
    Backward,
}

/// Where the state index sits in the structure being updated.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Layout {
    /// A vector over states.
    Vector,
    /// A row-major |Z|×|Z| matrix whose rows are the states being moved.
    Rows,
    /// A row-major |Z|×|Z| matrix whose columns are the states being moved.
    Cols,
}

/// Apply the step of an element (`sym`, value `v`) to `m`, reading old values only.
/// `scratch` is working space, used when the symbol's transitions form a cycle.
#[inline]
pub fn step<S: Scalar>(dfa: &Dfa, sym: u8, v: u64, m: &mut [Dual<S>], dir: Dir, layout: Layout, scratch: &mut Vec<Dual<S>>) -> R<()> {
    let c = sym as usize;
    let z = dfa.n;
    let (width, state_stride, k_stride) = match layout {
        Layout::Vector => (1, 1, 0),
        Layout::Rows => (z, z, 1),
        Layout::Cols => (z, 1, z),
    };
    let ends = |&(q, q2): &(u32, u32)| match dir {
        Dir::Forward => (q2 as usize * state_stride, q as usize * state_stride),
        Dir::Backward => (q as usize * state_stride, q2 as usize * state_stride),
    };
    let ordered = match dir {
        Dir::Forward => &dfa.col_order[c],
        Dir::Backward => &dfa.row_order[c],
    };
    match ordered {
        Some(order) => {
            for t in order {
                let (dst, src) = ends(t);
                for k in 0..width {
                    let from = &m[src + k * k_stride];
                    if from.is_zero() {
                        continue;
                    }
                    let add = from.take(v)?;
                    m[dst + k * k_stride].add_assign(&add)?;
                }
            }
        }
        None => {
            scratch.clear();
            scratch.extend_from_slice(m);
            for t in &dfa.by_sym[c] {
                let (dst, src) = ends(t);
                for k in 0..width {
                    let from = &scratch[src + k * k_stride];
                    if from.is_zero() {
                        continue;
                    }
                    m[dst + k * k_stride].add_assign(&from.take(v)?)?;
                }
            }
        }
    }
    Ok(())
}

/// The sets a vector `x` moves into final states when it takes an element (before [`step`]),
/// summed in the same transition order [`step`] uses, so estimates built either way agree.
pub fn gain_into_finals<S: Scalar>(dfa: &Dfa, sym: u8, v: u64, x: &[Dual<S>]) -> R<Dual<S>> {
    let c = sym as usize;
    let trans = dfa.col_order[c].as_deref().unwrap_or(&dfa.by_sym[c]);
    let mut gained = Dual::zero();
    for &(q, q2) in trans {
        if dfa.finals[q2 as usize] && !x[q as usize].is_zero() {
            gained.add_assign(&x[q as usize].take(v)?)?;
        }
    }
    Ok(gained)
}

/// The identity matrix over states.
pub fn identity<S: Scalar>(z: usize) -> Vec<Dual<S>> {
    let mut m = vec![Dual::zero(); z * z];
    for q in 0..z {
        m[q * z + q] = Dual::one();
    }
    m
}

/// `Σ_{q final} x[q]`.
pub fn final_sum<S: Scalar>(dfa: &Dfa, x: &[Dual<S>]) -> R<Dual<S>> {
    let mut acc = Dual::zero();
    for (q, d) in x.iter().enumerate() {
        if dfa.finals[q] && !d.is_zero() {
            acc.add_assign(d)?;
        }
    }
    Ok(acc)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dfa::tests::paper;
    use proptest::prelude::*;

    /// Dense `M_c` for checking the sparse update against a plain matrix product.
    fn dense(dfa: &Dfa, sym: u8, v: u64) -> Vec<Dual<u128>> {
        let z = dfa.n;
        let mut m = identity::<u128>(z);
        for &(q, q2) in &dfa.by_sym[sym as usize] {
            m[q as usize * z + q2 as usize].add_assign(&Dual::weight(v)).unwrap();
        }
        m
    }

    fn matmul(a: &[Dual<u128>], b: &[Dual<u128>], z: usize) -> Vec<Dual<u128>> {
        let mut out = vec![Dual::zero(); z * z];
        for i in 0..z {
            for k in 0..z {
                for j in 0..z {
                    let p = a[i * z + k].mul(&b[k * z + j]).unwrap();
                    out[i * z + j].add_assign(&p).unwrap();
                }
            }
        }
        out
    }

    fn transpose(a: &[Dual<u128>], z: usize) -> Vec<Dual<u128>> {
        (0..z * z).map(|i| a[(i % z) * z + i / z].clone()).collect()
    }

    /// A cyclic automaton: symbol 0 swaps states 0 and 1 (forces the copy path).
    fn cyclic() -> Dfa {
        use crate::dfa::DfaSpec;
        Dfa::new(DfaSpec { n: 3, alphabet: b"xy".to_vec(), start: 0, finals: vec![false, true, true], table: vec![1, 2, 0, -1, -1, 2] }).unwrap()
    }

    proptest! {
        #[test]
        fn every_layout_is_a_matrix_product(seed in proptest::collection::vec(0u128..5, 49), sym in 0u8..7, v in 0u64..9, which in 0usize..2) {
            let dfa = if which == 0 { paper() } else { cyclic() };
            let sym = sym % dfa.k() as u8;
            let z = dfa.n;
            let x: Vec<Dual<u128>> = seed.iter().take(z * z).enumerate().map(|(i, &c)| Dual { c, s: i as u128 % 3 }).collect();
            let m = dense(&dfa, sym, v);
            let mut scratch = Vec::new();
            let cases = [
                (Dir::Forward, Layout::Cols, matmul(&x, &m, z)),                                  // X · M
                (Dir::Backward, Layout::Rows, matmul(&m, &x, z)),                                 // M · X
                (Dir::Backward, Layout::Cols, matmul(&x, &transpose(&m, z), z)),                  // X · Mᵀ
                (Dir::Forward, Layout::Rows, matmul(&transpose(&m, z), &x, z)),                   // Mᵀ · X
            ];
            for (dir, layout, want) in cases {
                let mut got = x.clone();
                step(&dfa, sym, v, &mut got, dir, layout, &mut scratch).unwrap();
                prop_assert_eq!(got, want, "{:?} {:?}", dir, layout);
            }
            // A vector is one row of the Cols layout.
            let row: Vec<Dual<u128>> = x[..z].to_vec();
            let gained = gain_into_finals(&dfa, sym, v, &row).unwrap();
            let mut got = row.clone();
            step(&dfa, sym, v, &mut got, Dir::Forward, Layout::Vector, &mut scratch).unwrap();
            prop_assert_eq!(&got[..], &matmul(&x, &m, z)[..z]);
            let moved = final_sum(&dfa, &got).unwrap().sub(&final_sum(&dfa, &row).unwrap()).unwrap();
            prop_assert_eq!(gained, moved);
        }
    }
}
