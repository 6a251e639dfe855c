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
use crate::automaton::dfa::{Dfa, Skip, GAP_BREAK, NONE};
use crate::numbers::dual::Dual;
use crate::numbers::num::{Scalar, R};
use crate::automaton::semantics::{expired, Ev};
use crate::automaton::step::{final_sum, step_sized, takes, width, Dir, Layout};

/// Whether sets can leave the product before the window ends (a negation filter or
/// contiguity kills them), so matches must be counted at the element they end at. Without
/// kills the products keep every set, which gives the shorter formulas (and the estimates of
/// earlier releases bit for bit).
fn counts_at_ends(dfa: &Dfa, skip: Skip) -> bool {
    skip == Skip::Kill || !dfa.negated.is_empty()
}

/// `w_y · [δ(q) final]` per state: the matches that taking `ev` completes, from each state.
fn completes<S: Scalar>(dfa: &Dfa, ev: &Ev, skip: Skip) -> Vec<Dual<S>> {
    let mut out = vec![Dual::<S>::zero(); dfa.n];
    for &(q, t) in takes(dfa, ev, skip).iter() {
        if dfa.finals[t as usize] {
            out[q as usize] = Dual::weight(ev.v);
        }
    }
    out
}

/// The first element within the window before `p` and the last one after it (the retained
/// elements are in time order: binary searches, as `p` may lie deep in a large summary).
/// Under contiguity no set spans a break either, so the span stops at the breaks around `p`.
fn span(elems: &[Ev], p: usize, tau: i64, skip: Skip) -> (usize, usize) {
    let x = elems[p];
    debug_assert!(elems.windows(2).all(|w| w[0].t <= w[1].t), "retained elements out of time order");
    let mut lo = elems[..p].partition_point(|e| expired(e.t, x.t, tau));
    let mut hi = p + elems[p + 1..].partition_point(|e| !expired(x.t, e.t, tau));
    if skip == Skip::Kill {
        lo = lo.max(super::segment_start(elems, p));
        hi = hi.min(p + elems[p + 1..].iter().take_while(|e| e.gap & GAP_BREAK == 0).count());
    }
    (lo, hi)
}

/// The row of sums for end `k` in [`local_sets_and_tail_in`]'s table of ends, a new (zero) one
/// if `k` is not the last end in it.
fn end_row<'a, S: Scalar>(end_at: &mut Vec<usize>, end_sets: &'a mut Vec<Dual<S>>, k: usize, z: usize) -> &'a mut [Dual<S>] {
    if end_at.last() != Some(&k) {
        end_at.push(k);
        end_sets.resize(end_sets.len() + z, Dual::zero());
    }
    let at = end_sets.len() - z;
    &mut end_sets[at..]
}

/// `L_x` for `x = elems[p]`: the windowed sets containing it, per end state.
pub fn local_sets<S: Scalar>(dfa: &Dfa, tau: i64, skip: Skip, elems: &[Ev], p: usize) -> R<Vec<Dual<S>>> {
    let mut work = LocalWork::default();
    local_sets_and_tail_in::<S, 0>(&mut work, dfa, tau, skip, elems, p, false)?;
    Ok(work.local)
}

/// The states a set can be in right after it takes `x`, rising: where the symbol's transitions
/// lead, and where a set that starts at `x` begins. Every set through `x` is in one of them
/// there (for most symbols there is one), so the sweeps that carry such sets across the
/// window keep one vector over states per state after `x`, not a |Z|×|Z| matrix: the same
/// cells, each computed as before, without the rows (or columns) that can only hold zeros.
fn after_states(dfa: &Dfa, x: &Ev, skip: Skip, out: &mut Vec<u32>) {
    out.clear();
    out.extend(takes(dfa, x, skip).iter().map(|&(_, q2)| q2));
    let q0 = dfa.init[x.sym as usize];
    if q0 != NONE {
        out.push(q0);
    }
    out.sort_unstable();
    out.dedup();
}

/// The position of state `q` in `after` (rising, and holding it).
#[inline(always)]
fn slot(after: &[u32], q: u32) -> usize {
    after.partition_point(|&a| a < q)
}

/// `m` as the rows of the identity for the states in `rows` (one row per state, in order).
fn identity_rows<S: Scalar>(m: &mut Vec<Dual<S>>, rows: &[u32], z: usize) {
    zeroed(m, rows.len() * z);
    for (j, &a) in rows.iter().enumerate() {
        m[j * z + a as usize] = Dual::one();
    }
}

/// The buffers of [`local_sets_and_tail_in`], kept between calls (it runs at every eviction).
/// Every call sets each buffer's length and contents before reading it.
#[derive(Debug, Clone)]
pub struct LocalWork<S> {
    /// The result: `L_x` per end state.
    pub local: Vec<Dual<S>>,
    /// The product `P(p+1..n−1)`, when the call says it built it.
    pub tail: Vec<Dual<S>>,
    end_at: Vec<usize>,
    end_sets: Vec<Dual<S>>,
    cur: Vec<Dual<S>>,
    ends: Vec<Dual<S>>,
    row: Vec<Dual<S>>,
    scratch: Vec<Dual<S>>,
    after: Vec<u32>,
    all: Vec<u32>,
}

impl<S> Default for LocalWork<S> {
    fn default() -> Self {
        let none = Vec::new;
        LocalWork { local: none(), tail: none(), end_at: Vec::new(), end_sets: none(), cur: none(), ends: none(), row: none(), scratch: none(), after: Vec::new(), all: Vec::new() }
    }
}

/// [`local_sets`] into `work.local`, and with `want_tail`, the product `P(p+1..n−1)` over
/// every element after `x` into `work.tail` where its forward sweep can build it on the way
/// (no kills, and every later element within the window of `x`; returns whether it did):
/// what recomputing the active rows after `x` leaves would sweep again. Without it the sweep
/// carries only the rows of the states after `x`. No allocation once the buffers have grown.
pub fn local_sets_and_tail_in<S: Scalar, const Z: usize>(work: &mut LocalWork<S>, dfa: &Dfa, tau: i64, skip: Skip, elems: &[Ev], p: usize, want_tail: bool) -> R<bool> {
    let z = width::<Z>(dfa);
    let x = elems[p];
    let (lo, hi) = span(elems, p, tau, skip);
    let LocalWork { local, tail: c_mat, end_at, end_sets, cur, ends, row, scratch, after, all } = work;
    after_states(dfa, &x, skip, after);
    let w = after.len();
    // Σ_{K(i)=K} β_i for the ends K some initiator has, in falling K (the sweep meets them so):
    // few next to the span, which a dense table would clear and scan whole.
    end_at.clear();
    end_sets.clear();
    let mut k = hi;
    // Backward from x: `cur` = P(y+1..x-1) · (taking x), by its columns (the states after x),
    // each a vector over states.
    zeroed(cur, w * z);
    for &(q, q2) in takes(dfa, &x, skip).iter() {
        cur[slot(after, q2) * z + q as usize] = Dual::weight(x.v);
    }
    let xq = dfa.init[x.sym as usize];
    if xq != NONE {
        while expired(x.t, elems[k].t, tau) {
            k -= 1;
        }
        end_row(end_at, end_sets, k, z)[xq as usize].add_assign(&Dual::weight(x.v))?;
    }
    for y in (lo..p).rev() {
        let ev = &elems[y];
        let q = dfa.init[ev.sym as usize];
        if q != NONE {
            while expired(ev.t, elems[k].t, tau) {
                k -= 1;
            }
            let row = end_row(end_at, end_sets, k, z);
            for (j, &a) in after.iter().enumerate() {
                let c = &cur[j * z + q as usize];
                if !c.is_zero() {
                    row[a as usize].add_assign(&c.take(ev.v)?)?;
                }
            }
        }
        if y > lo {
            step_sized::<_, Z>(dfa, ev, skip, cur, Dir::Backward, Layout::Cols, scratch)?; // (the product from `lo` is never read)
        }
    }
    zeroed(local, z);
    if counts_at_ends(dfa, skip) {
        identity_rows(c_mat, after, z);
        zeroed(ends, (hi - p + 1) * z); // indexed K-p
        for (k, sets) in end_at.iter().zip(end_sets.chunks_exact(z)) {
            ends[(k - p) * z..(k - p + 1) * z].clone_from_slice(sets);
        }
        // Σ_i Σ_{y ≤ K(i)} (the sets from i through x that end at y): every initiator still in
        // reach of y contributes β_i · P(x+1..y−1) · (taking y).
        for k in (p..hi).rev() {
            let (now, later) = ends.split_at_mut((k + 1 - p) * z);
            for a in 0..z {
                now[(k - p) * z + a].add_assign(&later[a])?;
            }
        }
        local.clone_from_slice(&ends[..z]);
        zeroed(row, z);
        for k in p + 1..=hi {
            row.iter_mut().for_each(|r| *r = Dual::zero());
            for (&a, m_row) in after.iter().zip(c_mat.chunks_exact(z)) {
                let b = &ends[(k - p) * z + a as usize];
                if b.is_zero() {
                    continue;
                }
                for (r, m) in row.iter_mut().zip(m_row) {
                    if !m.is_zero() {
                        r.add_assign(&b.mul(m)?)?;
                    }
                }
            }
            for &(q, t) in takes(dfa, &elems[k], skip).iter() {
                if !row[q as usize].is_zero() {
                    local[t as usize].add_assign(&row[q as usize].take(elems[k].v)?)?;
                }
            }
            step_sized::<_, Z>(dfa, &elems[k], skip, c_mat, Dir::Forward, Layout::Cols, scratch)?;
        }
        return Ok(false);
    }
    // Without kills every set stays in the product: `L_x = Σ_i β_i · P(x+1..K(i))`. The
    // product's rows are those of the states after x, or every row where it becomes the tail.
    let tail = want_tail && hi + 1 == elems.len();
    let rows: &[u32] = if tail {
        all.clear();
        all.extend(0..z as u32);
        all
    } else {
        after
    };
    identity_rows(c_mat, rows, z);
    let mut next = end_at.len(); // the ends in rising K, from the back
    for k in p..=hi {
        if k > p {
            step_sized::<_, Z>(dfa, &elems[k], skip, c_mat, Dir::Forward, Layout::Cols, scratch)?;
        }
        if next == 0 || end_at[next - 1] != k {
            continue;
        }
        next -= 1;
        for (j, &a) in rows.iter().enumerate() {
            let b = &end_sets[next * z + a as usize];
            if b.is_zero() {
                continue;
            }
            for (l, m) in local.iter_mut().zip(&c_mat[j * z..(j + 1) * z]) {
                if !m.is_zero() {
                    l.add_assign(&b.mul(m)?)?;
                }
            }
        }
    }
    Ok(tail)
}

/// The buffers of [`joint_matches_in`], kept between calls (it runs at most evictions).
/// Every call writes what it reads of each buffer before reading it (some only grow).
#[derive(Debug, Clone)]
pub struct JointWork<S: Scalar> {
    /// The result: `joint[y - lo]`.
    pub joint: Vec<Dual<S>>,
    k_of: Vec<usize>,
    reads: Vec<usize>,
    e_mats: Vec<Dual<S>>,
    cur: Vec<Dual<S>>,
    psi: Vec<Dual<S>>,
    c_mat: Vec<Dual<S>>,
    inject: Vec<Dual<S>>,
    gammas: Vec<Dual<S>>,
    gamma: Vec<Dual<S>>,
    d: Vec<Dual<S>>,
    phi: Vec<Dual<S>>,
    scratch: Vec<Dual<S>>,
    after: Vec<u32>,
}

impl<S: Scalar> Default for JointWork<S> {
    fn default() -> Self {
        let none = Vec::new;
        JointWork { joint: none(), k_of: Vec::new(), reads: Vec::new(), e_mats: none(), cur: none(), psi: none(), c_mat: none(), inject: none(), gammas: none(), gamma: none(), d: none(), phi: none(), scratch: none(), after: Vec::new() }
    }
}

/// `buf` as `len` zeros, reusing its allocation.
fn zeroed<S: Scalar>(buf: &mut Vec<Dual<S>>, len: usize) {
    buf.clear();
    buf.resize(len, Dual::zero());
}

/// `buf` at least `len` long (what it held before is overwritten before it is read).
pub(super) fn at_least<S: Scalar>(buf: &mut Vec<Dual<S>>, len: usize) {
    if buf.len() < len {
        buf.resize(len, Dual::zero());
    }
}

/// ψ's entries at `k` (`row`, one per row of `product`), the matches that `product`'s rows
/// of `P(p+1..k)` complete, if `k` is the next of the `ends` still to be read (`next` moves
/// past it).
fn read_psi<S: Scalar>(dfa: &Dfa, product: &[Dual<S>], z: usize, ends: &[usize], next: &mut usize, k: usize, row: &mut [Dual<S>]) -> R<()> {
    if ends.get(*next) != Some(&k) {
        return Ok(());
    }
    *next += 1;
    for (r, out) in product.chunks_exact(z).zip(row.iter_mut()) {
        out.set(&final_sum(dfa, r)?);
    }
    Ok(())
}

/// For every element `y` within the window of `x = elems[p]`, the complete matches that
/// contain both (count and value sum); `(lo, joint)` with `joint[y - lo]`, zero at `x`.
pub fn joint_matches<S: Scalar>(dfa: &Dfa, tau: i64, skip: Skip, elems: &[Ev], p: usize) -> R<(usize, Vec<Dual<S>>)> {
    let mut work = JointWork::default();
    let lo = joint_matches_in::<S, 0>(&mut work, dfa, tau, skip, elems, p)?;
    Ok((lo, work.joint))
}

/// [`joint_matches`] into `work.joint`, returning `lo`, with no allocation once the buffers
/// have grown. Every matrix of the module's formulas has the state after `x` as one of its
/// indices; each is kept as one vector over the other index per state after `x` (see
/// [`after_states`]): `E_y`, `Φ'_y` by their columns, `D_y`, `Γ_y` and ψ's product by their rows.
pub fn joint_matches_in<S: Scalar, const Z: usize>(work: &mut JointWork<S>, dfa: &Dfa, tau: i64, skip: Skip, elems: &[Ev], p: usize) -> R<usize> {
    let z = width::<Z>(dfa);
    let el = elems;
    let x = el[p];
    let (lo, hi) = span(elems, p, tau, skip);
    let JointWork { joint: joint_out, k_of, reads, e_mats, cur, psi, c_mat, inject, gammas, gamma, d, phi, scratch, after } = work;
    after_states(dfa, &x, skip, after);
    let after = &after[..];
    let w = after.len();
    let wz = w * z; // one structure: a vector over states per state after x
    // Every entry but x's own is written below.
    joint_out.resize(hi - lo + 1, Dual::zero());
    joint_out[p - lo] = Dual::zero();
    let is_init = |i: usize| dfa.init[el[i].sym as usize] != NONE;
    let ends_mode = counts_at_ends(dfa, skip);
    // K(i) for i in lo..=p: the last element within the window of i (monotone in i). Without
    // kills, `reads` lists the ends of the initiators before x, rising, each once (ψ below).
    k_of.clear();
    k_of.resize(p - lo + 1, p);
    reads.clear();
    let mut k = p;
    for i in lo..=p {
        while k < hi && !expired(el[i].t, el[k + 1].t, tau) {
            k += 1;
        }
        k_of[i - lo] = k;
        if i < p && !ends_mode && is_init(i) && reads.last() != Some(&k) {
            reads.push(k);
        }
    }
    let wx = Dual::<S>::weight(x.v);

    // E_y = P(y+1..p-1) · w_x T_x for y in lo..p, built right to left, by its columns.
    // Stored right to left: E_y at (p-1-y)·wz. Every cell is written, so nothing is zeroed.
    let e_of = |y: usize| (p - 1 - y) * wz;
    at_least(e_mats, (p - lo) * wz);
    zeroed(cur, wz);
    for &(q, q2) in takes(dfa, &x, skip).iter() {
        cur[slot(after, q2) * z + q as usize] = wx.clone();
    }
    for y in (lo..p).rev() {
        S::copy_duals(&mut e_mats[e_of(y)..e_of(y) + wz], cur);
        step_sized::<_, Z>(dfa, &el[y], skip, cur, Dir::Backward, Layout::Cols, scratch)?;
    }
    // ψ(K) = the matches a set through x (in each state after x) completes by K:
    // P(p+1..K) · 1_F without kills, 1_F + Σ_{y=p+1..K} P(p+1..y−1)·(taking y)·1_F with them.
    // Without kills ψ is read only at the ends K(i) of the initiators before x (rising with i),
    // and `P(p+1..K)` is the product the forward sweep of `D` below builds (the same steps in
    // the same order, so the same bits): ψ is taken from it there, at those ends, and no other
    // row is read (so none is cleared).
    if ends_mode {
        zeroed(psi, (hi - p + 1) * w);
    } else {
        at_least(psi, (hi - p + 1) * w);
    }
    let mut next_read = 0;
    identity_rows(d, after, z);
    read_psi(dfa, &d[..], z, reads, &mut next_read, p, &mut psi[..w])?;
    if ends_mode {
        identity_rows(c_mat, after, z);
        for k in p..=hi {
            if k == p {
                for (ps, &a) in psi.iter_mut().zip(after) {
                    if dfa.finals[a as usize] {
                        *ps = Dual::one();
                    }
                }
                continue;
            }
            let done = completes::<S>(dfa, &el[k], skip);
            for (j, m_row) in c_mat.chunks_exact(z).enumerate() {
                let mut acc = psi[(k - p - 1) * w + j].clone();
                for (m, dn) in m_row.iter().zip(&done) {
                    if !dn.is_zero() && !m.is_zero() {
                        acc.add_assign(&m.mul(dn)?)?;
                    }
                }
                psi[(k - p) * w + j] = acc;
            }
            step_sized::<_, Z>(dfa, &el[k], skip, c_mat, Dir::Forward, Layout::Cols, scratch)?;
        }
    }

    // Neighbours after x: backward sweep of Γ_y, then forward sweep of D_y = P(p+1..y-1).
    if hi > p {
        // Σ_{K(i)=K} β_i, indexed K-p; β_i: sets from initiator i through x, state after x
        // (one entry per state after x).
        zeroed(inject, (hi - p + 1) * w);
        for i in lo..=p {
            if !is_init(i) {
                continue;
            }
            let q0 = dfa.init[el[i].sym as usize] as usize;
            let row = &mut inject[(k_of[i - lo] - p) * w..(k_of[i - lo] - p + 1) * w];
            if i == p {
                row[slot(after, q0 as u32)].add_assign(&wx)?;
            } else {
                let wi = Dual::<S>::weight(el[i].v);
                let e = &e_mats[e_of(i)..e_of(i) + wz];
                for (r, col) in row.iter_mut().zip(e.chunks_exact(z)) {
                    r.add_assign(&col[q0].mul(&wi)?)?;
                }
            }
        }
        // Γ_y for y = hi down to p+1, stored in that order (each written whole).
        at_least(gammas, (hi - p) * wz);
        let g_of = |y: usize| (hi - y) * wz;
        zeroed(gamma, wz);
        if ends_mode {
            // act(y) = Σ_{K(i) ≥ y} β_i. Γ'_y = Γ'_{y+1}·M_{y+1}ᵀ + act(y+1) ⊗ (taking y+1)·1_F
            // counts the matches ending after y, Γ_y = Γ'_y + act(y) ⊗ 1_F those ending at y too.
            for y in (p..hi).rev() {
                let (now, later) = inject.split_at_mut((y + 1 - p) * w);
                for j in 0..w {
                    now[(y - p) * w + j].add_assign(&later[j])?;
                }
            }
            for y in (p + 1..=hi).rev() {
                if y < hi {
                    step_sized::<_, Z>(dfa, &el[y + 1], skip, gamma, Dir::Backward, Layout::Cols, scratch)?;
                    let done = completes::<S>(dfa, &el[y + 1], skip);
                    for (act, g_row) in inject[(y + 1 - p) * w..(y + 2 - p) * w].iter().zip(gamma.chunks_exact_mut(z)) {
                        if act.is_zero() {
                            continue;
                        }
                        for (g, dn) in g_row.iter_mut().zip(&done).filter(|(_, dn)| !dn.is_zero()) {
                            g.add_assign(&act.mul(dn)?)?;
                        }
                    }
                }
                let g = &mut gammas[g_of(y)..g_of(y) + wz];
                S::copy_duals(g, gamma);
                for (act, g_row) in inject[(y - p) * w..(y + 1 - p) * w].iter().zip(g.chunks_exact_mut(z)) {
                    if !act.is_zero() {
                        for b in (0..z).filter(|&b| dfa.finals[b]) {
                            g_row[b].add_assign(act)?;
                        }
                    }
                }
            }
        } else {
            for y in (p + 1..=hi).rev() {
                if y < hi {
                    step_sized::<_, Z>(dfa, &el[y + 1], skip, gamma, Dir::Backward, Layout::Cols, scratch)?;
                }
                for (add, g_row) in inject[(y - p) * w..(y + 1 - p) * w].iter().zip(gamma.chunks_exact_mut(z)) {
                    if !add.is_zero() {
                        for b in (0..z).filter(|&b| dfa.finals[b]) {
                            g_row[b].add_assign(add)?;
                        }
                    }
                }
                S::copy_duals(&mut gammas[g_of(y)..g_of(y) + wz], gamma);
            }
        }
        for y in p + 1..=hi {
            let wy = Dual::<S>::weight(el[y].v);
            let g = &gammas[g_of(y)..g_of(y) + wz];
            let mut joint = Dual::<S>::zero();
            let pairs = if dfa.plain(el[y].sym, el[y].gap, skip) { std::borrow::Cow::Borrowed(&dfa.by_sym[el[y].sym as usize][..]) } else { takes(dfa, &el[y], skip) };
            for &(q, q2) in pairs.iter() {
                for j in 0..w {
                    joint.add_assign(&d[j * z + q as usize].mul(&g[j * z + q2 as usize])?)?;
                }
            }
            joint_out[y - lo].set(&joint.mul(&wy)?);
            step_sized::<_, Z>(dfa, &el[y], skip, d, Dir::Forward, Layout::Cols, scratch)?;
            read_psi(dfa, &d[..], z, reads, &mut next_read, y, &mut psi[(y - p) * w..(y - p + 1) * w])?;
        }
    }

    // Neighbours before x: forward sweep of Φ'_y = Σ_{initiators i<y} φ_i(y) ⊗ ψ(K(i)), by its
    // columns (the states after x).
    let start = dfa.start as usize;
    zeroed(phi, wz);
    for y in lo..p {
        let ey = &e_mats[e_of(y)..e_of(y) + wz];
        let wy = Dual::<S>::weight(el[y].v);
        let own = if is_init(y) { Some(&psi[(k_of[y - lo] - p) * w..(k_of[y - lo] - p + 1) * w]) } else { None };
        let mut joint = Dual::<S>::zero();
        if dfa.plain(el[y].sym, el[y].gap, skip) {
            for &(a, q2) in &dfa.by_sym[el[y].sym as usize] {
                let (a, q2) = (a as usize, q2 as usize);
                for j in 0..w {
                    let mut left = phi[j * z + a].clone();
                    if a == start {
                        if let Some(ps) = own {
                            left.add_assign(&ps[j])?; // the sets that start at y itself
                        }
                    }
                    joint.add_assign(&ey[j * z + q2].mul(&left)?)?;
                }
            }
        } else {
            // The sets before y pass its gap first; the sets that start at y do not.
            for &(a, q2) in takes(dfa, &el[y], skip).iter() {
                for (e_col, phi_col) in ey.chunks_exact(z).zip(phi.chunks_exact(z)) {
                    joint.add_assign(&e_col[q2 as usize].mul(&phi_col[a as usize])?)?;
                }
            }
            if let Some(ps) = own {
                let q0 = dfa.init[el[y].sym as usize] as usize;
                for (e_col, ps) in ey.chunks_exact(z).zip(ps) {
                    joint.add_assign(&e_col[q0].mul(ps)?)?;
                }
            }
        }
        joint_out[y - lo].set(&joint.mul(&wy)?);
        // Φ'_{y+1} = M_yᵀ Φ'_y + [y initiator] (w_y e_{δ(q0,c_y)}) ⊗ ψ(K(y)).
        step_sized::<_, Z>(dfa, &el[y], skip, phi, Dir::Forward, Layout::Cols, scratch)?;
        if let Some(ps) = own {
            let q0 = dfa.init[el[y].sym as usize] as usize;
            for (phi_col, ps) in phi.chunks_exact_mut(z).zip(ps) {
                phi_col[q0].add_assign(&wy.mul(ps)?)?;
            }
        }
    }
    Ok(lo)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::automaton::semantics::{AnyMatch, Contiguous, Semantics};
    use crate::summary::without;
    use crate::exact::window::{split_totals, tests::case, tests::elements, Window};
    use num_bigint::BigUint;
    use proptest::prelude::*;
    use std::sync::Arc;

    fn totals<P: Semantics>(dfa: &Arc<Dfa>, tau: i64, evs: &[Ev]) -> Vec<Dual<BigUint>> {
        Window::<BigUint, P>::run(dfa.clone(), tau, evs).unwrap().totals
    }

    fn drop_all(dfa: &Dfa, evs: &[Ev], drop: &[usize]) -> Vec<Ev> {
        let mut sorted = drop.to_vec();
        sorted.sort_unstable_by(|a, b| b.cmp(a));
        sorted.into_iter().fold(evs.to_vec(), |acc, i| without(dfa, &acc, i))
    }

    fn check<P: Semantics>(dfa: &Arc<Dfa>, tau: i64, evs: &[Ev], p: usize) -> Result<(), TestCaseError> {
        // L_x equals the sets of the stream minus the sets of the stream without x.
        let all = totals::<P>(dfa, tau, evs);
        let rest = totals::<P>(dfa, tau, &without(dfa, evs, p));
        let local = local_sets::<BigUint>(dfa, tau, P::SKIP, evs, p).unwrap();
        for q in 0..dfa.n {
            prop_assert_eq!(&local[q], &all[q].sub(&rest[q]).unwrap(), "local state {} p {} skip {:?} evs {:?}", q, p, P::SKIP, evs);
        }
        // Joint matches by inclusion–exclusion: M(all) − M(−x) − M(−y) + M(−x−y).
        let m = |drop: &[usize]| {
            let (c, s, _) = split_totals(dfa, &totals::<P>(dfa, tau, &drop_all(dfa, evs, drop)));
            Dual { c, s }
        };
        let (lo, joint) = joint_matches::<BigUint>(dfa, tau, P::SKIP, evs, p).unwrap();
        for (j, got) in joint.iter().enumerate() {
            let y = lo + j;
            let want = if y == p { Dual::zero() } else { m(&[]).add(&m(&[p, y])).unwrap().sub(&m(&[p]).add(&m(&[y])).unwrap()).unwrap() };
            prop_assert_eq!(got, &want, "x = {}, y = {}", p, y);
        }
        Ok(())
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 300, ..ProptestConfig::default() })]

        #[test]
        fn neighbourhood_algebra_is_leave_one_out((dfa, raw) in case(), tau in 0i64..12, pick in 0usize..100) {
            let evs = elements(&dfa, &raw);
            prop_assume!(!evs.is_empty());
            let p = pick % evs.len();
            check::<AnyMatch>(&dfa, tau, &evs, p)?;
            check::<Contiguous>(&dfa, tau, &evs, p)?;
        }

        /// One workspace reused for every element, in both orders, gives what fresh buffers give.
        #[test]
        fn joint_matches_reusing_buffers_are_fresh_ones((dfa, raw) in case(), tau in 0i64..12) {
            let evs = elements(&dfa, &raw);
            for skip in [AnyMatch::SKIP, Contiguous::SKIP] {
                let mut work = JointWork::<u128>::default();
                for p in (0..evs.len()).chain((0..evs.len()).rev()) {
                    let lo = joint_matches_in::<_, 0>(&mut work, &dfa, tau, skip, &evs, p).unwrap();
                    prop_assert_eq!((lo, work.joint.clone()), joint_matches::<u128>(&dfa, tau, skip, &evs, p).unwrap());
                }
            }
        }
    }
}
