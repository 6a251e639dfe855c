//! The one counter update of skip-till-any-match, for every layout and number type.
//!
//! Taking an element of symbol `c` and value `v` multiplies by the step operator
//! `M_c = I + (1+vε)·T_c`, where `T_c` has a 1 at `(q, δ(q,c))`. Every counting structure is
//! a vector or a matrix of [`Dual`]s indexed by automaton states, and multiplying it by `M_c`
//! (or `M_cᵀ`) on either side is the same sparse update: for each transition, one cell gains
//! `(1+vε)·` another. [`step`] is that update, written once; callers say which side and which
//! layout. It runs in place in a dependency-safe transition order when the automaton has one
//! (precomputed in [`Dfa`]), and from a copy otherwise.
use crate::automaton::dfa::{Dfa, Skip, NONE};
use crate::numbers::dual::Dual;
use crate::numbers::num::{Scalar, R};
use crate::automaton::semantics::Ev;
use std::borrow::Cow;

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
    /// A row-major matrix of |Z| columns, the states being moved, and any number of rows:
    /// a stack of vectors over states, each stepped alone.
    Cols,
}

/// Apply the step of element `ev` to `m`, reading old values only. `scratch` is working
/// space, used when the symbol's transitions form a cycle and for the general operator.
///
/// The plain operator is `I + (1+vε)·T_c`. In general (a gap with negated characters, an
/// element whose letter is also negated, or contiguity) each state `q` has a place it goes
/// when the set skips the element ([`Dfa::pass`]) and one when it takes it ([`Dfa::take`]),
/// either possibly "nowhere": the operator is still linear, one entry per state and side.
#[inline]
pub fn step<S: Scalar>(dfa: &Dfa, ev: &Ev, skip: Skip, m: &mut [Dual<S>], dir: Dir, layout: Layout, scratch: &mut Vec<Dual<S>>) -> R<()> {
    step_sized::<S, 0>(dfa, ev, skip, m, dir, layout, scratch)
}

/// [`step`] for an automaton of `Z` states (see [`width`]). Always inlined: every caller
/// names its layout and direction, so only that copy's loops remain (left to the optimiser,
/// the joint matches' four sweeps shared one out-of-line copy that tested both at run time).
#[inline(always)]
pub fn step_sized<S: Scalar, const Z: usize>(dfa: &Dfa, ev: &Ev, skip: Skip, m: &mut [Dual<S>], dir: Dir, layout: Layout, scratch: &mut Vec<Dual<S>>) -> R<()> {
    // One copy per layout, so that each has its strides as constants (the hot loops).
    match layout {
        Layout::Vector => step_in::<S, VECTOR, Z>(dfa, ev, skip, m, dir, scratch),
        Layout::Rows => step_in::<S, ROWS, Z>(dfa, ev, skip, m, dir, scratch),
        // A stack of one vector (the sweeps through one element mostly carry one) needs no
        // loop over rows, and a square one has its row count as a constant.
        Layout::Cols if m.len() == width::<Z>(dfa) => step_in::<S, VECTOR, Z>(dfa, ev, skip, m, dir, scratch),
        Layout::Cols if m.len() == width::<Z>(dfa) * width::<Z>(dfa) => step_in::<S, COLS, Z>(dfa, ev, skip, m, dir, scratch),
        Layout::Cols => step_in::<S, STACK, Z>(dfa, ev, skip, m, dir, scratch),
    }
}

/// The number of states of `dfa`: `Z` when it is not 0. A kernel compiled for a known `Z`
/// has every row length and stride as a constant, so its per-state loops unroll and lose
/// their bounds checks; with |Z| ≈ 5 that machinery was about a sixth of the summary's
/// instructions. [`with_width!`](crate::with_width) picks the copy.
#[inline(always)]
pub fn width<const Z: usize>(dfa: &Dfa) -> usize {
    if Z == 0 {
        dfa.n
    } else {
        debug_assert_eq!(dfa.n, Z, "a kernel compiled for another automaton size");
        Z
    }
}

/// Run `$body` with `$z` a constant: `$n` for the automaton sizes most patterns have (2 to 8
/// states), else 0 (read the size at run time; see [`width`]).
#[macro_export]
macro_rules! with_width {
    ($n:expr, $z:ident => $body:expr) => {
        match $n {
            2 => { const $z: usize = 2; $body }
            3 => { const $z: usize = 3; $body }
            4 => { const $z: usize = 4; $body }
            5 => { const $z: usize = 5; $body }
            6 => { const $z: usize = 6; $body }
            7 => { const $z: usize = 7; $body }
            8 => { const $z: usize = 8; $body }
            _ => { const $z: usize = 0; $body }
        }
    };
}

const VECTOR: u8 = 0;
const ROWS: u8 = 1;
/// [`Layout::Cols`] with |Z| rows.
const COLS: u8 = 2;
/// [`Layout::Cols`] with any number of rows.
const STACK: u8 = 3;

#[inline(always)]
fn step_in<S: Scalar, const LAYOUT: u8, const Z: usize>(dfa: &Dfa, ev: &Ev, skip: Skip, m: &mut [Dual<S>], dir: Dir, scratch: &mut Vec<Dual<S>>) -> R<()> {
    let (sym, v) = (ev.sym, ev.v);
    let c = sym as usize;
    let z = width::<Z>(dfa);
    let (width, state_stride, k_stride) = match LAYOUT {
        VECTOR => (1, 1, 0),
        ROWS => (z, z, 1),
        COLS => (z, 1, z),
        _ => (m.len() / z, 1, z),
    };
    if !dfa.plain(sym, ev.gap, skip) {
        scratch.clear();
        scratch.extend_from_slice(m);
        let cell = |q: u32, k: usize| q as usize * state_stride + k * k_stride;
        match dir {
            Dir::Forward => {
                m.iter_mut().for_each(|x| *x = Dual::zero());
                for q in 0..z as u32 {
                    let (to_pass, to_take) = (dfa.pass(q, sym, ev.gap, skip), dfa.take(q, sym, ev.gap, skip));
                    for k in 0..width {
                        let from = &scratch[cell(q, k)];
                        if from.is_zero() {
                            continue;
                        }
                        if to_pass != NONE {
                            m[cell(to_pass, k)].add_assign(from)?;
                        }
                        if to_take != NONE {
                            m[cell(to_take, k)].add_assign(&from.take(v)?)?;
                        }
                    }
                }
            }
            Dir::Backward => {
                for q in 0..z as u32 {
                    let (to_pass, to_take) = (dfa.pass(q, sym, ev.gap, skip), dfa.take(q, sym, ev.gap, skip));
                    for k in 0..width {
                        let mut x = if to_pass != NONE { scratch[cell(to_pass, k)].clone() } else { Dual::zero() };
                        if to_take != NONE && !scratch[cell(to_take, k)].is_zero() {
                            x.add_assign(&scratch[cell(to_take, k)].take(v)?)?;
                        }
                        m[cell(q, k)] = x;
                    }
                }
            }
        }
        return Ok(());
    }
    // Per transition, the state each side stands for (`dst` gains from `src`).
    let ends = |&(q, q2): &(u32, u32)| match dir {
        Dir::Forward => (q2 as usize, q as usize),
        Dir::Backward => (q as usize, q2 as usize),
    };
    let ordered = match dir {
        Dir::Forward => &dfa.col_order[c],
        Dir::Backward => &dfa.row_order[c],
    };
    match ordered {
        Some(order) => {
            for t in order {
                let (dst, src) = ends(t);
                gain_in_place::<S, LAYOUT>(m, dst, src, z, v)?;
            }
        }
        None => {
            scratch.clear();
            scratch.extend_from_slice(m);
            for t in &dfa.by_sym[c] {
                let (dst, src) = ends(t);
                gain_from::<S, LAYOUT>(m, scratch, dst, src, z, v)?;
            }
        }
    }
    Ok(())
}

/// `to += from·(1+vε)` unless `from` is zero (then adding would change nothing).
#[inline(always)]
fn gain<S: Scalar>(to: &mut Dual<S>, from: &Dual<S>, v: u64) -> R<()> {
    if from.is_zero() {
        return Ok(());
    }
    let add = from.take(v)?;
    to.add_assign(&add)
}

/// State `dst` of `m` gains from state `src` of the same `m` (old values: in the
/// dependency-safe order no cell is read after it gained, and a self-loop's cell reads itself
/// first). Slices instead of index arithmetic, so the hot loops carry no bounds checks.
#[inline(always)]
fn gain_in_place<S: Scalar, const LAYOUT: u8>(m: &mut [Dual<S>], dst: usize, src: usize, z: usize, v: u64) -> R<()> {
    match LAYOUT {
        VECTOR => {
            let from = m[src].clone();
            gain(&mut m[dst], &from, v)
        }
        ROWS => {
            if dst == src {
                for cell in &mut m[dst * z..(dst + 1) * z] {
                    let from = cell.clone();
                    gain(cell, &from, v)?;
                }
                return Ok(());
            }
            let (to, from) = if dst < src {
                let (a, b) = m.split_at_mut(src * z);
                (&mut a[dst * z..(dst + 1) * z], &b[..z])
            } else {
                let (a, b) = m.split_at_mut(dst * z);
                (&mut b[..z], &a[src * z..(src + 1) * z])
            };
            for (t, f) in to.iter_mut().zip(from) {
                gain(t, f, v)?;
            }
            Ok(())
        }
        _ => {
            if dst >= z || src >= z {
                return Ok(()); // no such state (never: transitions stay inside the automaton)
            }
            let rows = if LAYOUT == COLS { &mut m[..z * z] } else { m };
            for row in rows.chunks_exact_mut(z) {
                let from = row[src].clone();
                gain(&mut row[dst], &from, v)?;
            }
            Ok(())
        }
    }
}

/// State `dst` of `m` gains from state `src` of `old` (a copy of `m` before the step).
#[inline(always)]
fn gain_from<S: Scalar, const LAYOUT: u8>(m: &mut [Dual<S>], old: &[Dual<S>], dst: usize, src: usize, z: usize, v: u64) -> R<()> {
    match LAYOUT {
        VECTOR => gain(&mut m[dst], &old[src], v),
        ROWS => {
            for (t, f) in m[dst * z..(dst + 1) * z].iter_mut().zip(&old[src * z..(src + 1) * z]) {
                gain(t, f, v)?;
            }
            Ok(())
        }
        _ => {
            if dst >= z || src >= z {
                return Ok(()); // never, as above
            }
            let rows = if LAYOUT == COLS { &mut m[..z * z] } else { m };
            for (row, old_row) in rows.chunks_exact_mut(z).zip(old.chunks_exact(z)) {
                gain(&mut row[dst], &old_row[src], v)?;
            }
            Ok(())
        }
    }
}

/// The `(from, to)` state pairs of taking element `ev`: the symbol's transitions for a plain
/// element (in the dependency-safe order when there is one), else [`Dfa::take`] per state.
/// (Inlined: the plain case is a lookup on every hot loop's path.)
#[inline(always)]
pub fn takes<'a>(dfa: &'a Dfa, ev: &Ev, skip: Skip) -> Cow<'a, [(u32, u32)]> {
    let c = ev.sym as usize;
    if dfa.plain(ev.sym, ev.gap, skip) {
        return Cow::Borrowed(dfa.col_order[c].as_deref().unwrap_or(&dfa.by_sym[c]));
    }
    Cow::Owned(general_takes(dfa, ev, skip))
}

#[inline(never)]
fn general_takes(dfa: &Dfa, ev: &Ev, skip: Skip) -> Vec<(u32, u32)> {
    (0..dfa.n as u32).filter_map(|q| Some((q, dfa.take(q, ev.sym, ev.gap, skip))).filter(|p| p.1 != NONE)).collect()
}

/// The sets a vector `x` moves into final states when it takes an element (before [`step`]),
/// summed in the same transition order [`step`] uses, so estimates built either way agree.
/// (Inlined: called per active row, its transition lookup then leaves the loop. Out of line,
/// as the extension built it, the summary ran 1.4 % more instructions at (100, 100).)
#[inline(always)]
pub fn gain_into_finals<S: Scalar>(dfa: &Dfa, ev: &Ev, skip: Skip, x: &[Dual<S>]) -> R<Dual<S>> {
    let mut gained = Dual::zero();
    for &(q, q2) in takes(dfa, ev, skip).iter() {
        if dfa.finals[q2 as usize] && !x[q as usize].is_zero() {
            gained.add_assign(&x[q as usize].take(ev.v)?)?;
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
    use crate::automaton::dfa::tests::{letter_negated, negation, paper};
    use crate::automaton::dfa::GAP_BREAK;
    use proptest::prelude::*;

    /// The dense operator of an element by definition: row q has 1 where skipping sends the
    /// set and `1+vε` where taking it does.
    fn dense(dfa: &Dfa, ev: &Ev, skip: Skip) -> Vec<Dual<u128>> {
        let z = dfa.n;
        let mut m = vec![Dual::zero(); z * z];
        for q in 0..z as u32 {
            let (p, t) = (dfa.pass(q, ev.sym, ev.gap, skip), dfa.take(q, ev.sym, ev.gap, skip));
            if p != NONE {
                m[q as usize * z + p as usize].add_assign(&Dual::one()).unwrap();
            }
            if t != NONE {
                m[q as usize * z + t as usize].add_assign(&Dual::weight(ev.v)).unwrap();
            }
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
        use crate::automaton::dfa::DfaSpec;
        Dfa::new(DfaSpec { n: 3, alphabet: b"xy".to_vec(), negated: Vec::new(), start: 0, finals: vec![false, true, true], table: vec![1, 2, 0, -1, -1, 2] }).unwrap()
    }

    proptest! {
        #[test]
        fn every_layout_is_a_matrix_product(seed in proptest::collection::vec(0u128..5, 49), sym in 0u8..7, v in 0u64..9,
                                           which in 0usize..4, gap in 0u32..4, brk in any::<bool>(), kill in any::<bool>(), rows in 1usize..8) {
            let dfa = [paper(), cyclic(), negation(), letter_negated()][which].clone();
            let sym = sym % dfa.k() as u8;
            let gap = (gap & ((1u32 << dfa.negated.len()) - 1)) | if brk { GAP_BREAK } else { 0 };
            let skip = if kill { Skip::Kill } else { Skip::Keep };
            let ev = Ev { sym, t: 0, v, gap };
            let z = dfa.n;
            let x: Vec<Dual<u128>> = seed.iter().take(z * z).enumerate().map(|(i, &c)| Dual { c, s: i as u128 % 3 }).collect();
            let m = dense(&dfa, &ev, skip);
            let mut scratch = Vec::new();
            let cases = [
                (Dir::Forward, Layout::Cols, matmul(&x, &m, z)),                                  // X · M
                (Dir::Backward, Layout::Rows, matmul(&m, &x, z)),                                 // M · X
                (Dir::Backward, Layout::Cols, matmul(&x, &transpose(&m, z), z)),                  // X · Mᵀ
                (Dir::Forward, Layout::Rows, matmul(&transpose(&m, z), &x, z)),                   // Mᵀ · X
            ];
            for (dir, layout, want) in cases {
                let mut got = x.clone();
                step(&dfa, &ev, skip, &mut got, dir, layout, &mut scratch).unwrap();
                prop_assert_eq!(got, want, "{:?} {:?}", dir, layout);
            }
            // A stack of any number of rows (one, |Z| or another) steps each row alone.
            let stack: Vec<Dual<u128>> = (0..rows).flat_map(|r| x[(r % z) * z..(r % z + 1) * z].to_vec()).collect();
            for (dir, square) in [(Dir::Forward, matmul(&x, &m, z)), (Dir::Backward, matmul(&x, &transpose(&m, z), z))] {
                let mut got = stack.clone();
                step(&dfa, &ev, skip, &mut got, dir, Layout::Cols, &mut scratch).unwrap();
                let want: Vec<Dual<u128>> = (0..rows).flat_map(|r| square[(r % z) * z..(r % z + 1) * z].to_vec()).collect();
                prop_assert_eq!(got, want, "{:?}, {} rows", dir, rows);
            }
            // A vector is one row of the Cols layout; what it moves into finals by taking.
            let row: Vec<Dual<u128>> = x[..z].to_vec();
            let mut got = row.clone();
            step(&dfa, &ev, skip, &mut got, Dir::Forward, Layout::Vector, &mut scratch).unwrap();
            prop_assert_eq!(&got[..], &matmul(&x, &m, z)[..z]);
            let mut taken = vec![Dual::zero(); z];
            for &(q, q2) in takes(&dfa, &ev, skip).iter() {
                taken[q2 as usize].add_assign(&row[q as usize].take(v).unwrap()).unwrap();
            }
            prop_assert_eq!(gain_into_finals(&dfa, &ev, skip, &row).unwrap(), final_sum(&dfa, &taken).unwrap());
        }
    }
}
