//! What one element shares with the others: the algebra behind removing an element (and,
//! read the other way, inserting one at a position).
//!
//! * [`local_sets`]: `L_x`, the windowed sets (per end state) that contain element `x`.
//!   A set through `x` starts at an initiator `i` no earlier than `t_x − τ` and ends at or
//!   before `K(i)`, the last element within the window of `i`. Summing over its end,
//!   `L_x = Σ_i β_i · P(x+1..K(i))` with `β_i = w_i e_{δ(q0,c_i)} · P(i+1..x−1) · w_x T_x`:
//!   one backward sweep gives the `β_i`, one forward sweep the products. O(τ·|Z|·transitions).
//! * [`joint_matches`]: for every neighbour `y`, the complete matches containing both `x` and
//!   `y`. For `y` after `x` it is `Σ_i β_i · P(x+1..y−1) · w_y T_y · P(y+1..K(i)) · 1_F`; the
//!   sum over `i` folds into one |Z|×|Z| matrix `Γ_y = Σ_i β_i ⊗ P(y+1..K(i))·1_F` with
//!   `Γ_y = Γ_{y+1}·M_{y+1}ᵀ + (Σ_{K(i)=y} β_i) ⊗ 1_F`, so one backward and one forward sweep
//!   give every joint count: O(τ·|Z|²) instead of the paper's O(τ²·|Z|²). Neighbours before
//!   `x` are the mirror image with `Φ_y = Σ_i φ_i(y) ⊗ P(x+1..K(i))·1_F`.
//!
//! Both are generic over the number type: exact counters use the first, selection estimates
//! the second, and the tests check each against recomputation from scratch.
use crate::dfa::{Dfa, NONE};
use crate::dual::Dual;
use crate::num::{Scalar, R};
use crate::semantics::{expired, Ev};
use crate::step::{final_sum, identity, step, Dir, Layout};

/// The first element within the window before `p` and the last one after it.
fn span(elems: &[Ev], p: usize, tau: i64) -> (usize, usize) {
    let x = elems[p];
    let lo = elems[..p].iter().position(|e| !expired(e.t, x.t, tau)).unwrap_or(p);
    let hi = p + elems[p + 1..].iter().take_while(|e| !expired(x.t, e.t, tau)).count();
    (lo, hi)
}

/// `L_x` for `x = elems[p]`: the windowed sets containing it, per end state.
pub fn local_sets<S: Scalar>(dfa: &Dfa, tau: i64, elems: &[Ev], p: usize) -> R<Vec<Dual<S>>> {
    let z = dfa.n;
    let x = elems[p];
    let (lo, hi) = span(elems, p, tau);
    let mut ends = vec![Dual::<S>::zero(); (hi - p + 1) * z]; // Σ_{K(i)=K} β_i, indexed K-p
    let mut k = hi;
    let mut scratch = Vec::new();
    // Backward from x: `cur` = P(y+1..x-1) · w_x T_x.
    let mut cur = vec![Dual::<S>::zero(); z * z];
    for &(q, q2) in &dfa.by_sym[x.sym as usize] {
        cur[q as usize * z + q2 as usize] = Dual::weight(x.v);
    }
    let xq = dfa.init[x.sym as usize];
    if xq != NONE {
        while expired(x.t, elems[k].t, tau) {
            k -= 1;
        }
        ends[(k - p) * z + xq as usize].add_assign(&Dual::weight(x.v))?;
    }
    for y in (lo..p).rev() {
        let ev = &elems[y];
        let q = dfa.init[ev.sym as usize];
        if q != NONE {
            while expired(ev.t, elems[k].t, tau) {
                k -= 1;
            }
            for j in 0..z {
                let c = &cur[q as usize * z + j];
                if !c.is_zero() {
                    ends[(k - p) * z + j].add_assign(&c.take(ev.v)?)?;
                }
            }
        }
        step(dfa, ev.sym, ev.v, &mut cur, Dir::Backward, Layout::Rows, &mut scratch)?;
    }
    // Forward from x: `c_mat` = P(x+1..K).
    let mut local = vec![Dual::<S>::zero(); z];
    let mut c_mat = identity::<S>(z);
    for k in p..=hi {
        if k > p {
            step(dfa, elems[k].sym, elems[k].v, &mut c_mat, Dir::Forward, Layout::Cols, &mut scratch)?;
        }
        for a in 0..z {
            let b = &ends[(k - p) * z + a];
            if b.is_zero() {
                continue;
            }
            for j in 0..z {
                let m = &c_mat[a * z + j];
                if !m.is_zero() {
                    local[j].add_assign(&b.mul(m)?)?;
                }
            }
        }
    }
    Ok(local)
}

/// For every element `y` within the window of `x = elems[p]`, the complete matches that
/// contain both (count and value sum); `(lo, joint)` with `joint[y - lo]`, zero at `x`.
pub fn joint_matches<S: Scalar>(dfa: &Dfa, tau: i64, elems: &[Ev], p: usize) -> R<(usize, Vec<Dual<S>>)> {
    let z = dfa.n;
    let zz = z * z;
    let el = elems;
    let x = el[p];
    let (lo, hi) = span(elems, p, tau);
    let mut joint_out = vec![Dual::<S>::zero(); hi - lo + 1];
    let is_init = |i: usize| dfa.init[el[i].sym as usize] != NONE;
    let mut scratch = Vec::new();
    // K(i) for i in lo..=p: the last element within the window of i (monotone in i).
    let mut k_of = vec![p; p - lo + 1];
    let mut k = p;
    for i in lo..=p {
        while k < hi && !expired(el[i].t, el[k + 1].t, tau) {
            k += 1;
        }
        k_of[i - lo] = k;
    }
    let wx = Dual::<S>::weight(x.v);

    // E_y = P(y+1..p-1) · w_x T_x for y in lo..p, built right to left (flat, |Z|² each).
    let mut e_mats = vec![Dual::<S>::zero(); (p - lo) * zz];
    let mut cur = vec![Dual::<S>::zero(); zz];
    for &(q, q2) in &dfa.by_sym[x.sym as usize] {
        cur[q as usize * z + q2 as usize] = wx.clone();
    }
    for y in (lo..p).rev() {
        e_mats[(y - lo) * zz..(y - lo + 1) * zz].clone_from_slice(&cur);
        step(dfa, el[y].sym, el[y].v, &mut cur, Dir::Backward, Layout::Rows, &mut scratch)?;
    }
    // ψ(K) = P(p+1..K) · 1_F for K in p..=hi.
    let mut psi = vec![Dual::<S>::zero(); (hi - p + 1) * z];
    let mut c_mat = identity::<S>(z);
    for k in p..=hi {
        if k > p {
            step(dfa, el[k].sym, el[k].v, &mut c_mat, Dir::Forward, Layout::Cols, &mut scratch)?;
        }
        for r in 0..z {
            psi[(k - p) * z + r] = final_sum(dfa, &c_mat[r * z..(r + 1) * z])?;
        }
    }

    // Neighbours after x: backward sweep of Γ_y, then forward sweep of D_y = P(p+1..y-1).
    if hi > p {
        // Σ_{K(i)=K} β_i, indexed K-p; β_i: sets from initiator i through x, state after x.
        let mut inject = vec![Dual::<S>::zero(); (hi - p + 1) * z];
        for i in lo..=p {
            if !is_init(i) {
                continue;
            }
            let q0 = dfa.init[el[i].sym as usize] as usize;
            let row = &mut inject[(k_of[i - lo] - p) * z..(k_of[i - lo] - p + 1) * z];
            if i == p {
                row[q0].add_assign(&wx)?;
            } else {
                let wi = Dual::<S>::weight(el[i].v);
                let m = &e_mats[(i - lo) * zz + q0 * z..(i - lo) * zz + (q0 + 1) * z];
                for (r, mm) in row.iter_mut().zip(m) {
                    r.add_assign(&mm.mul(&wi)?)?;
                }
            }
        }
        let mut gammas = vec![Dual::<S>::zero(); (hi - p + 1) * zz];
        let mut gamma = vec![Dual::<S>::zero(); zz];
        for y in (p + 1..=hi).rev() {
            if y < hi {
                step(dfa, el[y + 1].sym, el[y + 1].v, &mut gamma, Dir::Backward, Layout::Cols, &mut scratch)?;
            }
            for a in 0..z {
                let add = &inject[(y - p) * z + a];
                if !add.is_zero() {
                    for b in (0..z).filter(|&b| dfa.finals[b]) {
                        gamma[a * z + b].add_assign(add)?;
                    }
                }
            }
            gammas[(y - p) * zz..(y - p + 1) * zz].clone_from_slice(&gamma);
        }
        let mut d = identity::<S>(z);
        for y in p + 1..=hi {
            let wy = Dual::<S>::weight(el[y].v);
            let g = &gammas[(y - p) * zz..(y - p + 1) * zz];
            let mut joint = Dual::<S>::zero();
            for &(q, q2) in &dfa.by_sym[el[y].sym as usize] {
                for a in 0..z {
                    joint.add_assign(&d[a * z + q as usize].mul(&g[a * z + q2 as usize])?)?;
                }
            }
            joint_out[y - lo] = joint.mul(&wy)?;
            step(dfa, el[y].sym, el[y].v, &mut d, Dir::Forward, Layout::Cols, &mut scratch)?;
        }
    }

    // Neighbours before x: forward sweep of Φ'_y = Σ_{initiators i<y} φ_i(y) ⊗ ψ(K(i)).
    let start = dfa.start as usize;
    let mut phi = vec![Dual::<S>::zero(); zz];
    for y in lo..p {
        let ey = &e_mats[(y - lo) * zz..(y - lo + 1) * zz];
        let wy = Dual::<S>::weight(el[y].v);
        let own = if is_init(y) { Some(&psi[(k_of[y - lo] - p) * z..(k_of[y - lo] - p + 1) * z]) } else { None };
        let mut joint = Dual::<S>::zero();
        for &(a, q2) in &dfa.by_sym[el[y].sym as usize] {
            let (a, q2) = (a as usize, q2 as usize);
            for b in 0..z {
                let mut left = phi[a * z + b].clone();
                if a == start {
                    if let Some(ps) = own {
                        left.add_assign(&ps[b])?; // the sets that start at y itself
                    }
                }
                joint.add_assign(&ey[q2 * z + b].mul(&left)?)?;
            }
        }
        joint_out[y - lo] = joint.mul(&wy)?;
        // Φ'_{y+1} = M_yᵀ Φ'_y + [y initiator] (w_y e_{δ(q0,c_y)}) ⊗ ψ(K(y)).
        step(dfa, el[y].sym, el[y].v, &mut phi, Dir::Forward, Layout::Rows, &mut scratch)?;
        if let Some(ps) = own {
            let q0 = dfa.init[el[y].sym as usize] as usize;
            for b in 0..z {
                phi[q0 * z + b].add_assign(&wy.mul(&ps[b])?)?;
            }
        }
    }
    Ok((lo, joint_out))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dfa::tests::paper;
    use crate::semantics::AnyMatch;
    use crate::window::{split_totals, tests::stream, Window};
    use num_bigint::BigUint;
    use proptest::prelude::*;

    fn totals(dfa: &std::sync::Arc<Dfa>, tau: i64, evs: &[Ev]) -> Vec<Dual<BigUint>> {
        Window::<BigUint, AnyMatch>::run(dfa.clone(), tau, evs).unwrap().totals
    }

    fn without(evs: &[Ev], drop: &[usize]) -> Vec<Ev> {
        evs.iter().enumerate().filter(|(i, _)| !drop.contains(i)).map(|(_, e)| *e).collect()
    }

    proptest! {
        /// `L_x` equals the sets of the stream minus the sets of the stream without `x`.
        #[test]
        fn local_sets_are_leave_one_out(evs in stream(), tau in 0i64..12, pick in 0usize..100) {
            prop_assume!(!evs.is_empty());
            let dfa = std::sync::Arc::new(paper());
            let p = pick % evs.len();
            let all = totals(&dfa, tau, &evs);
            let rest = totals(&dfa, tau, &without(&evs, &[p]));
            let local = local_sets::<BigUint>(&dfa, tau, &evs, p).unwrap();
            for q in 0..dfa.n {
                prop_assert_eq!(&local[q], &all[q].sub(&rest[q]).unwrap());
            }
        }

        /// Joint matches by inclusion–exclusion: M(all) − M(−x) − M(−y) + M(−x−y).
        #[test]
        fn joint_matches_are_inclusion_exclusion(evs in stream(), tau in 0i64..12, pick in 0usize..100) {
            prop_assume!(!evs.is_empty());
            let dfa = std::sync::Arc::new(paper());
            let p = pick % evs.len();
            let m = |drop: &[usize]| {
                let (c, s, _) = split_totals(&dfa, &totals(&dfa, tau, &without(&evs, drop)));
                Dual { c, s }
            };
            let (lo, joint) = joint_matches::<BigUint>(&dfa, tau, &evs, p).unwrap();
            for (j, got) in joint.iter().enumerate() {
                let y = lo + j;
                let want = if y == p { Dual::zero() } else {
                    m(&[]).add(&m(&[p, y])).unwrap().sub(&m(&[p]).add(&m(&[y])).unwrap()).unwrap()
                };
                prop_assert_eq!(got, &want, "x = {}, y = {}", p, y);
            }
        }
    }
}
