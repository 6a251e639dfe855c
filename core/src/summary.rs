//! The state summary (paper §5) and summary selection (§6).
//!
//! The summary keeps at most `size` elements in time order. Two kinds of state sit beside them:
//!
//! * **Exact counters** (generic over [`Num`], never wrapping): the global counters `g` (every
//!   windowed set over the retained elements, per automaton state), the active global counters
//!   `a` (sets whose first element can still be extended), per-initiator contributions `v` and
//!   the detected totals. They are what `result()` reports.
//! * **Selection estimates** (`f64` duals): per element the complete matches it is part of
//!   (the present benefit) and its active local counters. They only rank elements for eviction,
//!   so they may carry rounding; they are kept incrementally and never feed a reported number.
//!
//! REMOVE differs from the paper's Alg. 2, which replays the 2τ neighbourhood twice with an
//! O(τ)-per-insert engine, O(τ²·|Z|²) per removal. Here:
//! * the exact counters lose `L_x`, the sets containing `x`, found as the difference of two
//!   runs of the two-stacks window engine over the neighbourhood (one with `x`, one without,
//!   sharing the prefix before `x`): O(τ·|Z|·transitions);
//! * each neighbour `y` loses its joint matches with `x`. For `y` after `x` the joint count is
//!   `Σ_i β_i · P(x+1..y-1) · T_y · P(y+1..K(i)) · 1_F` over the initiators `i` of sets through
//!   `x` (`β_i`: those sets up to `x`; `K(i)`: the last element within the window of `i`).
//!   The sum over `i` is folded into one |Z|×|Z| matrix `Γ_y = Σ_i β_i ⊗ P(y+1..K(i))·1_F`
//!   that obeys `Γ_y = Γ_{y+1}·M_{y+1}ᵀ + (Σ_{K(i)=y} β_i) ⊗ 1_F`, so one backward and one
//!   forward sweep give every joint count: O(τ·|Z|²) instead of O(τ²·|Z|²). Neighbours before
//!   `x` are the mirror image with `Φ_y = Σ_i φ_i(y) ⊗ P(x+1..K(i))·1_F`.
//! * the active local counters are recomputed by one forward/backward sweep over the active
//!   window, O(|A|·|Z|²), when an active element leaves.
//!
//! Skip-till-next-match summaries recompute their counters from the retained elements after
//! every change (O(|S|·|Z|) exact, O(|S|·|A|) for the estimates): correct and simple, slower.
use crate::benefit::{Coefficients, Estimator, Policy};
use crate::dfa::{Dfa, NONE};
use crate::num::{Dual, DualF, Num, R};
use crate::window::{expired, Algebra, AnyMatch, Ev, NextMatch, Window};
use num_bigint::BigUint;
use rand::Rng;
use rand::SeedableRng;
use rand_pcg::Pcg64;
use serde::{Deserialize, Serialize};
use std::sync::Arc;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Strategy {
    Suse,
    Present,
    Fifo,
    Random,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Aggregate {
    Count,
    Sum,
    Avg,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Config {
    pub size: usize,
    pub tau: i64,
    pub strategy: Strategy,
    pub aggregate: Aggregate,
    pub policy: Policy,
    pub time_to_live: Option<i64>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
struct ExactPart<N> {
    g: Vec<Dual<N>>,
    a: Vec<Dual<N>>,
    /// Per retained element (flat, |Z| each), its contribution to `a`: non-zero only for
    /// active initiators.
    v: Vec<Dual<N>>,
    detected: Dual<N>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
enum Exact {
    Small(ExactPart<u128>),
    Big(ExactPart<BigUint>),
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Summary {
    pub cfg: Config,
    pub dfa: Arc<Dfa>,
    pub elems: Vec<Ev>,
    exact: Exact,
    /// Present benefit per element: complete matches containing it (count, sum).
    pres: Vec<DualF>,
    /// Active local counters per element, flat |Z| each (zero outside the active window).
    al: Vec<DualF>,
    al_dirty: bool,
    active_start: usize,
    pub now: Option<i64>,
    estimator: Estimator,
    coeffs: Coefficients,
    rng: Pcg64,
    pub events: u64,
    pub skipped: u64,
    /// Elements evicted to make room for a new one.
    pub evictions: u64,
}

pub struct Readout {
    pub g: Vec<Dual<BigUint>>,
    pub detected: Dual<BigUint>,
}

fn zeros<N: Num>(z: usize) -> Vec<Dual<N>> {
    vec![Dual::zero(); z]
}

type Any = AnyMatch;

impl<N: Num> ExactPart<N> {
    fn empty(z: usize) -> Self {
        ExactPart { g: zeros(z), a: zeros(z), v: Vec::new(), detected: Dual::zero() }
    }

    /// Recompute everything but `detected` from the retained elements at clock `now`.
    fn rebuild(dfa: &Arc<Dfa>, cfg: &Config, elems: &[Ev], active_start: usize, detected: Dual<N>) -> R<Self> {
        let z = dfa.n;
        let g = match cfg.policy {
            Policy::Any => {
                let mut w = Window::<N, AnyMatch>::new(dfa.clone(), cfg.tau);
                for e in elems {
                    w.push(*e)?;
                }
                w.totals
            }
            Policy::Next => {
                let mut w = Window::<N, NextMatch>::new(dfa.clone(), cfg.tau);
                for e in elems {
                    w.push(*e)?;
                }
                w.totals
            }
        };
        let mut part = ExactPart { g, a: zeros(z), v: zeros(elems.len() * z), detected };
        match cfg.policy {
            Policy::Any => part.rebuild_active(dfa, elems, active_start)?,
            Policy::Next => part.a = next_active(dfa, cfg, elems, active_start)?,
        }
        Ok(part)
    }

    /// `v_i = (1+v_iε)·e_{δ(q0,c_i)} · P(i+1..n-1)` for active initiators, `a = Σ v_i`.
    fn rebuild_active(&mut self, dfa: &Dfa, elems: &[Ev], active_start: usize) -> R<()> {
        let z = dfa.n;
        let mut after = <Any as Algebra<N>>::identity(dfa);
        let mut scratch = after.clone();
        self.a.iter_mut().for_each(|x| *x = Dual::zero());
        self.v.iter_mut().for_each(|x| *x = Dual::zero());
        for i in (active_start..elems.len()).rev() {
            let ev = &elems[i];
            let q = dfa.init[ev.sym as usize];
            if q != NONE {
                for j in 0..z {
                    let d = after[q as usize * z + j].take(ev.v)?;
                    self.a[j].add_assign(&d)?;
                    self.v[i * z + j] = d;
                }
            }
            <Any as Algebra<N>>::prepend(dfa, ev, &mut after, &mut scratch)?;
        }
        Ok(())
    }

    fn readout(&self) -> Readout {
        Readout { g: self.g.iter().map(|d| d.to_big()).collect(), detected: self.detected.to_big() }
    }

    /// STAM insert of `ev` (already expired to `ev.t`): extend every active set.
    /// Only `detected` is committed last: everything else is rebuilt after an overflow.
    fn insert_any(&mut self, dfa: &Dfa, ev: &Ev, active_start: usize) -> R<()> {
        let z = dfa.n;
        let mut formed = zeros::<N>(z);
        <Any as Algebra<N>>::formed(dfa, &self.a, ev, &mut formed)?;
        let mut found = Dual::zero();
        for (q, f) in formed.iter().enumerate() {
            self.g[q].add_assign(f)?;
            if dfa.finals[q] {
                found.add_assign(f)?;
            }
        }
        <Any as Algebra<N>>::advance(dfa, &mut self.a, ev, &formed)?;
        let trans = &dfa.by_sym[ev.sym as usize];
        let n = self.v.len() / z;
        let mut row = zeros::<N>(z);
        for i in active_start..n {
            let v = &mut self.v[i * z..(i + 1) * z];
            if let Some(order) = &dfa.col_order[ev.sym as usize] {
                for &(q, q2) in order {
                    if !v[q as usize].is_zero() {
                        let add = v[q as usize].take(ev.v)?;
                        v[q2 as usize].add_assign(&add)?;
                    }
                }
                continue;
            }
            row.clone_from_slice(v);
            for &(q, q2) in trans {
                v[q2 as usize].add_assign(&row[q as usize].take(ev.v)?)?;
            }
        }
        let init = dfa.init[ev.sym as usize];
        self.v.extend(zeros::<N>(z));
        if init != NONE {
            self.v[n * z + init as usize] = Dual::weight(ev.v);
        }
        self.detected = self.detected.add(&found)?;
        Ok(())
    }

    /// STAM removal of element `p`: subtract the sets containing it.
    fn remove_any(&mut self, dfa: &Arc<Dfa>, tau: i64, elems: &[Ev], p: usize, active_start: usize, touches_active: bool) -> R<()> {
        let z = dfa.n;
        let local = local_sets::<N>(dfa, tau, elems, p)?;
        for (g, l) in self.g.iter_mut().zip(&local) {
            g.sub_assign(l)?;
        }
        self.v.drain(p * z..(p + 1) * z);
        if touches_active {
            let mut rest = elems.to_vec();
            rest.remove(p);
            self.rebuild_active(dfa, &rest, active_start)?;
        }
        Ok(())
    }
}

/// `L_x`: the windowed sets (per end state) that contain element `p`.
///
/// A set through `x` starts at an initiator `i` no earlier than `t_x - τ` and ends at or before
/// `K(i)`, the last element within the window of `i`. Summing over its end,
/// `L_x = Σ_i β_i · P(x+1..K(i))` with `β_i = w_i e_{δ(q0,c_i)} · P(i+1..x-1) · w_x T_x`.
/// The `β_i` come from one backward sweep, the products `P(x+1..K)` from one forward sweep.
fn local_sets<N: Num>(dfa: &Dfa, tau: i64, elems: &[Ev], p: usize) -> R<Vec<Dual<N>>> {
    let z = dfa.n;
    let x = elems[p];
    let lo = elems[..p].iter().position(|e| !expired(e.t, x.t, tau)).unwrap_or(p);
    let hi = p + elems[p + 1..].iter().take_while(|e| !expired(x.t, e.t, tau)).count();
    let mut ends = vec![Dual::<N>::zero(); (hi - p + 1) * z]; // Σ_{K(i)=K} β_i, indexed K-p
    let mut k = hi;
    let mut scratch = <Any as Algebra<N>>::identity(dfa);
    // Backward from x: `cur` = P(y+1..x-1) · w_x T_x.
    let mut cur = zeros::<N>(z * z);
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
        <Any as Algebra<N>>::prepend(dfa, ev, &mut cur, &mut scratch)?;
    }
    // Forward from x: `c_mat` = P(x+1..K).
    let mut local = zeros::<N>(z);
    let mut c_mat = <Any as Algebra<N>>::identity(dfa);
    for k in p..=hi {
        if k > p {
            <Any as Algebra<N>>::append(dfa, &mut c_mat, &elems[k], &mut scratch)?;
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

/// Active runs (skip-till-next-match) per state at the clock of the last element.
fn next_active<N: Num>(dfa: &Arc<Dfa>, cfg: &Config, elems: &[Ev], active_start: usize) -> R<Vec<Dual<N>>> {
    let mut w = Window::<N, NextMatch>::new(dfa.clone(), cfg.tau);
    for e in &elems[active_start.min(elems.len())..] {
        w.push(*e)?;
    }
    Ok(w.a)
}

thread_local! {
    /// Working copy for in-place float updates whose transitions form a cycle.
    static OLD: std::cell::RefCell<Vec<DualF>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// Apply `m[dst(q,q2)] += w · m[src(q,q2)]` for every transition of `ev`'s symbol, reading old
/// values: in a dependency-safe order when the automaton allows it, else from a copy.
fn update_f(
    m: &mut [DualF],
    ordered: &Option<Vec<(u32, u32)>>,
    all: &[(u32, u32)],
    w: DualF,
    width: usize,
    cells: impl Fn(u32, u32, usize) -> (usize, usize),
) {
    match ordered {
        Some(order) => {
            for &(q, q2) in order {
                for k in 0..width {
                    let (dst, src) = cells(q, q2, k);
                    m[dst] = m[dst].add(m[src].mul(w));
                }
            }
        }
        None => OLD.with(|cell| {
            let mut old = cell.borrow_mut();
            old.clear();
            old.extend_from_slice(m);
            for &(q, q2) in all {
                for k in 0..width {
                    let (dst, src) = cells(q, q2, k);
                    m[dst] = m[dst].add(old[src].mul(w));
                }
            }
        }),
    }
}

/// `row ← row · (I + w·T_c)`.
fn step_row(dfa: &Dfa, row: &mut [DualF], ev: &Ev) {
    let c = ev.sym as usize;
    update_f(row, &dfa.col_order[c], &dfa.by_sym[c], DualF::weight(ev.v), 1, |q, q2, _| (q2 as usize, q as usize));
}

/// Float matrix helpers (row-major |Z|×|Z|).
fn identity_f(z: usize) -> Vec<DualF> {
    let mut m = vec![DualF::ZERO; z * z];
    for q in 0..z {
        m[q * z + q] = DualF::ONE;
    }
    m
}

/// `m ← (I + w·T_c) · m`: row q gains `w ·` row δ(q,c).
fn prepend_f(dfa: &Dfa, ev: &Ev, m: &mut [DualF]) {
    let (z, c) = (dfa.n, ev.sym as usize);
    update_f(m, &dfa.row_order[c], &dfa.by_sym[c], DualF::weight(ev.v), z, |q, q2, k| (q as usize * z + k, q2 as usize * z + k));
}

/// `m ← m · (I + w·T_c)`: column δ(q,c) gains `w ·` column q.
fn append_f(dfa: &Dfa, m: &mut [DualF], ev: &Ev) {
    let (z, c) = (dfa.n, ev.sym as usize);
    update_f(m, &dfa.col_order[c], &dfa.by_sym[c], DualF::weight(ev.v), z, |q, q2, k| (k * z + q2 as usize, k * z + q as usize));
}

/// `Γ ← Γ · Mᵀ` with `M = I + w·T_c`: column q gains `w ·` column δ(q,c).
fn append_f_transposed(dfa: &Dfa, m: &mut [DualF], ev: &Ev) {
    let (z, c) = (dfa.n, ev.sym as usize);
    update_f(m, &dfa.row_order[c], &dfa.by_sym[c], DualF::weight(ev.v), z, |q, q2, k| (k * z + q as usize, k * z + q2 as usize));
}

/// `Φ ← Mᵀ · Φ` with `M = I + w·T_c`: row δ(q,c) gains `w ·` row q.
fn prepend_f_transposed(dfa: &Dfa, ev: &Ev, m: &mut [DualF]) {
    let (z, c) = (dfa.n, ev.sym as usize);
    update_f(m, &dfa.col_order[c], &dfa.by_sym[c], DualF::weight(ev.v), z, |q, q2, k| (q2 as usize * z + k, q as usize * z + k));
}

fn final_sum(dfa: &Dfa, v: &[DualF]) -> DualF {
    v.iter().enumerate().filter(|(q, _)| dfa.finals[*q]).fold(DualF::ZERO, |acc, (_, d)| acc.add(*d))
}

impl Summary {
    pub fn new(dfa: Arc<Dfa>, cfg: Config, probabilities: Option<Vec<f64>>, seed: u64) -> Summary {
        let k = dfa.k();
        let estimator = Estimator::new(k, probabilities);
        let coeffs = Coefficients::new(estimator.probabilities(), estimator.mean_values(), cfg.policy);
        let z = dfa.n;
        Summary {
            cfg,
            dfa,
            elems: Vec::new(),
            exact: Exact::Small(ExactPart::empty(z)),
            pres: Vec::new(),
            al: Vec::new(),
            al_dirty: false,
            active_start: 0,
            now: None,
            estimator,
            coeffs,
            rng: Pcg64::seed_from_u64(seed),
            events: 0,
            skipped: 0,
            evictions: 0,
        }
    }

    pub fn readout(&self) -> Readout {
        match &self.exact {
            Exact::Small(p) => p.readout(),
            Exact::Big(p) => p.readout(),
        }
    }

    pub fn is_big(&self) -> bool {
        matches!(self.exact, Exact::Big(_))
    }

    /// Run an exact operation on u128; on overflow rebuild over big integers and run it again.
    fn exact_op(
        &mut self,
        small: impl FnOnce(&mut ExactPart<u128>, &Summary) -> R<()>,
        big: impl FnOnce(&mut ExactPart<BigUint>, &Summary) -> R<()>,
    ) {
        let mut exact = std::mem::replace(&mut self.exact, Exact::Small(ExactPart::empty(0)));
        if let Exact::Small(part) = &mut exact {
            let detected = part.detected.to_big();
            if small(part, self).is_ok() {
                self.exact = exact;
                return;
            }
            let rebuilt = ExactPart::<BigUint>::rebuild(&self.dfa, &self.cfg, &self.elems, self.active_start, detected)
                .expect("big integers do not overflow");
            exact = Exact::Big(rebuilt);
        }
        if let Exact::Big(part) = &mut exact {
            big(part, self).expect("big integers do not overflow");
        }
        self.exact = exact;
    }

    /// Process one element of the query's alphabet.
    pub fn observe(&mut self, ev: Ev) {
        self.events += 1;
        self.now = Some(ev.t);
        if let Some(ttl) = self.cfg.time_to_live {
            while !self.elems.is_empty() && expired(self.elems[0].t, ev.t, ttl) {
                self.remove(0);
            }
        }
        self.expire(ev.t);
        if self.estimator.observe(ev.sym, ev.t, ev.v) {
            self.coeffs = Coefficients::new(self.estimator.probabilities(), self.estimator.mean_values(), self.cfg.policy);
        }
        if self.cfg.size == 0 {
            return;
        }
        if self.elems.len() < self.cfg.size {
            self.insert(ev);
            return;
        }
        let victim = match self.cfg.strategy {
            Strategy::Fifo => Some(0),
            Strategy::Random => Some(self.rng.gen_range(0..self.elems.len())),
            Strategy::Suse | Strategy::Present => self.choose_victim(&ev),
        };
        if let Some(i) = victim {
            self.evictions += 1;
            self.remove(i);
            self.insert(ev);
        }
    }

    /// Move the active window to the elements a new element at `now` can still match with.
    fn expire(&mut self, now: i64) {
        let start = self.active_start;
        let mut end = start;
        while end < self.elems.len() && expired(self.elems[end].t, now, self.cfg.tau) {
            end += 1;
        }
        if end == start {
            return;
        }
        self.active_start = end;
        if self.cfg.policy == Policy::Next {
            self.refresh_next();
            return;
        }
        let leaving_initiator = (start..end).any(|i| self.dfa.init[self.elems[i].sym as usize] != NONE);
        let z = self.dfa.n;
        self.al[start * z..end * z].iter_mut().for_each(|d| *d = DualF::ZERO);
        if !leaving_initiator {
            return;
        }
        self.al_dirty = true;
        self.exact_op(
            |p, _| {
                for i in start..end {
                    for j in 0..z {
                        let d = std::mem::replace(&mut p.v[i * z + j], Dual::zero());
                        p.a[j].sub_assign(&d)?;
                    }
                }
                Ok(())
            },
            |p, s| p.rebuild_active(&s.dfa, &s.elems, s.active_start),
        );
    }

    fn insert(&mut self, ev: Ev) {
        let z = self.dfa.n;
        let formed_f = self.formed_estimate(&ev);
        if self.cfg.policy == Policy::Next {
            self.exact_op(|p, s| insert_next(p, &s.dfa, &ev), |p, s| insert_next(p, &s.dfa, &ev));
            self.elems.push(ev);
            self.pres.push(DualF::ZERO);
            self.al.extend(std::iter::repeat_n(DualF::ZERO, z));
            self.refresh_next();
            return;
        }
        if self.al_dirty {
            self.recompute_al();
        }
        let start = self.active_start;
        self.exact_op(|p, s| p.insert_any(&s.dfa, &ev, start), |p, s| p.insert_any(&s.dfa, &ev, start));
        let w = DualF::weight(ev.v);
        let mut old = vec![DualF::ZERO; z];
        let c = ev.sym as usize;
        for i in start..self.elems.len() {
            let row = &mut self.al[i * z..(i + 1) * z];
            // In dependency order the row can be read in place; otherwise from a copy.
            let (order, src): (&[(u32, u32)], Option<&[DualF]>) = match &self.dfa.col_order[c] {
                Some(order) => (order, None),
                None => {
                    old.copy_from_slice(row);
                    (&self.dfa.by_sym[c], Some(&old))
                }
            };
            let mut gained = DualF::ZERO;
            for &(q, q2) in order {
                let add = src.map_or(row[q as usize], |o| o[q as usize]).mul(w);
                row[q2 as usize] = row[q2 as usize].add(add);
                if self.dfa.finals[q2 as usize] {
                    gained = gained.add(add);
                }
            }
            self.pres[i] = self.pres[i].add(gained);
        }
        self.pres.push(final_sum(&self.dfa, &formed_f));
        self.al.extend_from_slice(&formed_f);
        self.elems.push(ev);
    }

    /// Skip-till-next-match: recompute the exact counters (keeping `detected`) and the estimates.
    fn refresh_next(&mut self) {
        let detected = self.detected_big();
        self.exact = match ExactPart::<u128>::rebuild(&self.dfa, &self.cfg, &self.elems, self.active_start, Dual::zero()) {
            Ok(mut part) if detected_fits(&detected) => {
                part.detected = Dual { c: to_u128(&detected.c), s: to_u128(&detected.s) };
                Exact::Small(part)
            }
            _ => Exact::Big(
                ExactPart::<BigUint>::rebuild(&self.dfa, &self.cfg, &self.elems, self.active_start, detected)
                    .expect("big integers do not overflow"),
            ),
        };
        self.recompute_next();
    }

    /// Float view of the sets a new element would form, from the exact active counters.
    fn formed_estimate(&self, ev: &Ev) -> Vec<DualF> {
        let a: Vec<DualF> = match &self.exact {
            Exact::Small(p) => p.a.iter().map(|d| d.to_f64()).collect(),
            Exact::Big(p) => p.a.iter().map(|d| d.to_f64()).collect(),
        };
        let mut formed = vec![DualF::ZERO; self.dfa.n];
        let w = DualF::weight(ev.v);
        for &(q, q2) in &self.dfa.by_sym[ev.sym as usize] {
            formed[q2 as usize] = formed[q2 as usize].add(a[q as usize].mul(w));
        }
        let init = self.dfa.init[ev.sym as usize];
        if init != NONE {
            formed[init as usize] = formed[init as usize].add(w);
        }
        formed
    }

    pub fn remove(&mut self, p: usize) {
        if self.cfg.policy == Policy::Next {
            self.drop_element(p);
            self.refresh_next();
            return;
        }
        let start = self.active_start;
        let z = self.dfa.n;
        // An active element that no active set contains leaves the active counters as they are
        // (the float counters only ever add non-negative terms, so zero is exact zero).
        if self.al_dirty {
            self.recompute_al();
        }
        let touches_active = p >= start && self.al[p * z..(p + 1) * z].iter().any(|d| d.c != 0.0);
        let (tau, dfa) = (self.cfg.tau, self.dfa.clone());
        self.exact_op(
            |part, s| part.remove_any(&dfa, tau, &s.elems, p, start, touches_active),
            |part, s| part.remove_any(&s.dfa, tau, &s.elems, p, start, touches_active),
        );
        // Joint matches are a subset of x's own: none to subtract when x completes none.
        if self.pres[p].c >= 0.5 {
            self.remove_joint_estimates(p);
        }
        self.drop_element(p);
        if touches_active {
            self.al_dirty = true;
        }
    }

    /// Take element `p` out of the element list and its per-element estimates.
    fn drop_element(&mut self, p: usize) {
        self.elems.remove(p);
        self.pres.remove(p);
        self.al.drain(p * self.dfa.n..(p + 1) * self.dfa.n);
        if p < self.active_start {
            self.active_start -= 1;
        }
    }

    fn detected_big(&self) -> Dual<BigUint> {
        self.readout().detected
    }

    /// Subtract from every neighbour's present benefit the complete matches it shares with `p`.
    fn remove_joint_estimates(&mut self, p: usize) {
        let dfa = self.dfa.clone();
        let z = dfa.n;
        let zz = z * z;
        let tau = self.cfg.tau;
        let el = &self.elems;
        let x = el[p];
        let lo = el[..p].iter().position(|e| !expired(e.t, x.t, tau)).unwrap_or(p);
        let hi = p + el[p + 1..].iter().take_while(|e| !expired(x.t, e.t, tau)).count();
        let is_init = |i: usize| dfa.init[el[i].sym as usize] != NONE;
        // K(i) for i in lo..=p: the last element within the window of i (monotone in i).
        let mut k_of = vec![p; p - lo + 1];
        let mut k = p;
        for i in lo..=p {
            while k < hi && !expired(el[i].t, el[k + 1].t, tau) {
                k += 1;
            }
            k_of[i - lo] = k;
        }
        let wx = DualF::weight(x.v);

        // E_y = P(y+1..p-1) · w_x T_x for y in lo..p, built right to left (flat, |Z|² each).
        let mut e_mats = vec![DualF::ZERO; (p - lo) * zz];
        let mut cur = vec![DualF::ZERO; zz];
        for &(q, q2) in &dfa.by_sym[x.sym as usize] {
            cur[q as usize * z + q2 as usize] = wx;
        }
        for y in (lo..p).rev() {
            e_mats[(y - lo) * zz..(y - lo + 1) * zz].copy_from_slice(&cur);
            prepend_f(&dfa, &el[y], &mut cur);
        }
        // ψ(K) = P(p+1..K) · 1_F for K in p..=hi.
        let mut psi = vec![DualF::ZERO; (hi - p + 1) * z];
        let mut c_mat = identity_f(z);
        for k in p..=hi {
            if k > p {
                append_f(&dfa, &mut c_mat, &el[k]);
            }
            for r in 0..z {
                psi[(k - p) * z + r] = final_sum(&dfa, &c_mat[r * z..(r + 1) * z]);
            }
        }

        // Neighbours after x: backward sweep of Γ_y, then forward sweep of D_y = P(p+1..y-1).
        if hi > p {
            // Σ_{K(i)=K} β_i, indexed K-p; β_i: sets from initiator i through x, state after x.
            let mut inject = vec![DualF::ZERO; (hi - p + 1) * z];
            for i in lo..=p {
                if !is_init(i) {
                    continue;
                }
                let q0 = dfa.init[el[i].sym as usize] as usize;
                let row = &mut inject[(k_of[i - lo] - p) * z..(k_of[i - lo] - p + 1) * z];
                if i == p {
                    row[q0] = row[q0].add(wx);
                } else {
                    let wi = DualF::weight(el[i].v);
                    let m = &e_mats[(i - lo) * zz + q0 * z..(i - lo) * zz + (q0 + 1) * z];
                    for (r, mm) in row.iter_mut().zip(m) {
                        *r = r.add(mm.mul(wi));
                    }
                }
            }
            let mut gammas = vec![DualF::ZERO; (hi - p + 1) * zz];
            let mut gamma = vec![DualF::ZERO; zz];
            for y in (p + 1..=hi).rev() {
                if y < hi {
                    append_f_transposed(&dfa, &mut gamma, &el[y + 1]);
                }
                for a in 0..z {
                    let add = inject[(y - p) * z + a];
                    if !add.is_zero() {
                        for b in (0..z).filter(|&b| dfa.finals[b]) {
                            gamma[a * z + b] = gamma[a * z + b].add(add);
                        }
                    }
                }
                gammas[(y - p) * zz..(y - p + 1) * zz].copy_from_slice(&gamma);
            }
            let mut d = identity_f(z);
            for y in p + 1..=hi {
                let wy = DualF::weight(el[y].v);
                let g = &gammas[(y - p) * zz..(y - p + 1) * zz];
                let mut joint = DualF::ZERO;
                for &(q, q2) in &dfa.by_sym[el[y].sym as usize] {
                    for a in 0..z {
                        joint = joint.add(d[a * z + q as usize].mul(g[a * z + q2 as usize]));
                    }
                }
                self.pres[y] = self.pres[y].sub(joint.mul(wy)).clamp_nonneg();
                append_f(&dfa, &mut d, &el[y]);
            }
        }

        // Neighbours before x: forward sweep of Φ'_y = Σ_{initiators i<y} φ_i(y) ⊗ ψ(K(i)).
        let mut phi = vec![DualF::ZERO; zz];
        for y in lo..p {
            let ey = &e_mats[(y - lo) * zz..(y - lo + 1) * zz];
            let wy = DualF::weight(el[y].v);
            let own = if is_init(y) { Some(&psi[(k_of[y - lo] - p) * z..(k_of[y - lo] - p + 1) * z]) } else { None };
            let mut joint = DualF::ZERO;
            for &(a, q2) in &dfa.by_sym[el[y].sym as usize] {
                let (a, q2) = (a as usize, q2 as usize);
                for b in 0..z {
                    let mut left = phi[a * z + b];
                    if a == 0 {
                        if let Some(ps) = own {
                            left = left.add(ps[b]); // the sets that start at y itself
                        }
                    }
                    joint = joint.add(ey[q2 * z + b].mul(left));
                }
            }
            self.pres[y] = self.pres[y].sub(joint.mul(wy)).clamp_nonneg();
            // Φ'_{y+1} = M_yᵀ Φ'_y + [y initiator] (w_y e_{δ(q0,c_y)}) ⊗ ψ(K(y)).
            prepend_f_transposed(&dfa, &el[y], &mut phi);
            if let Some(ps) = own {
                let q0 = dfa.init[el[y].sym as usize] as usize;
                for b in 0..z {
                    phi[q0 * z + b] = phi[q0 * z + b].add(wy.mul(ps[b]));
                }
            }
        }
    }

    /// Active local counters of every active element: sets inside the active window containing it.
    fn recompute_al(&mut self) {
        self.al_dirty = false;
        let dfa = self.dfa.clone();
        let z = dfa.n;
        let (s, n) = (self.active_start, self.elems.len());
        // Forward rows e_{q0}·P(s..y-1), flat.
        let mut fwd = vec![DualF::ZERO; (n - s + 1) * z];
        fwd[0] = DualF::ONE;
        for y in s..n {
            let (done, rest) = fwd.split_at_mut((y - s + 1) * z);
            rest[..z].copy_from_slice(&done[(y - s) * z..]);
            step_row(&dfa, &mut rest[..z], &self.elems[y]);
        }
        let mut b = identity_f(z);
        for y in (s..n).rev() {
            let ev = self.elems[y];
            let w = DualF::weight(ev.v);
            let row = &mut self.al[y * z..(y + 1) * z];
            row.iter_mut().for_each(|d| *d = DualF::ZERO);
            for &(q, q2) in &dfa.by_sym[ev.sym as usize] {
                let u = fwd[(y - s) * z + q as usize].mul(w);
                if u.is_zero() {
                    continue;
                }
                for j in 0..z {
                    row[j] = row[j].add(u.mul(b[q2 as usize * z + j]));
                }
            }
            prepend_f(&dfa, &ev, &mut b);
        }
    }

    /// Recompute the estimates of a skip-till-next-match summary by simulating every run.
    fn recompute_next(&mut self) {
        let z = self.dfa.n;
        let n = self.elems.len();
        let now = self.now.unwrap_or(i64::MIN);
        self.pres = vec![DualF::ZERO; n];
        self.al = vec![DualF::ZERO; n * z];
        for i in 0..n {
            let q0 = self.dfa.init[self.elems[i].sym as usize];
            if q0 == NONE {
                continue;
            }
            let mut state = q0;
            let mut taken = vec![i];
            let mut value = self.elems[i].v as f64;
            let mut entries: Vec<(usize, f64)> = Vec::new(); // (taken count, match value)
            if self.dfa.finals[q0 as usize] {
                entries.push((1, value));
            }
            for j in i + 1..n {
                if expired(self.elems[i].t, self.elems[j].t, self.cfg.tau) {
                    break;
                }
                let to = self.dfa.step(state, self.elems[j].sym);
                if to == NONE {
                    continue;
                }
                state = to;
                taken.push(j);
                value += self.elems[j].v as f64;
                if self.dfa.finals[to as usize] {
                    entries.push((taken.len(), value));
                }
            }
            // Element taken at position k is in every match yielded at or after k.
            let (mut cnt, mut sum) = (0.0, 0.0);
            let mut e = entries.len();
            for k in (0..taken.len()).rev() {
                while e > 0 && entries[e - 1].0 > k {
                    e -= 1;
                    cnt += 1.0;
                    sum += entries[e].1;
                }
                self.pres[taken[k]] = self.pres[taken[k]].add(DualF { c: cnt, s: sum });
            }
            if !expired(self.elems[i].t, now, self.cfg.tau) {
                for &k in &taken {
                    self.al[k * z + state as usize] = self.al[k * z + state as usize].add(DualF { c: 1.0, s: value });
                }
            }
        }
    }

    /// Selection (§6.2): the element with the lowest benefit, if the new one beats it.
    fn choose_victim(&mut self, ev: &Ev) -> Option<usize> {
        if self.cfg.policy == Policy::Any && self.al_dirty {
            self.recompute_al();
        }
        let dfa = self.dfa.clone();
        let t = ev.t;
        let tau = self.cfg.tau;
        let pick = |d: DualF, agg: Aggregate| if agg == Aggregate::Sum { d.s } else { d.c };
        let agg = self.cfg.aggregate;
        let use_expected = self.cfg.strategy == Strategy::Suse;
        let rate = self.estimator.rate();
        // Look ahead at most |S| elements: a set can only grow by elements the summary also
        // keeps, and beyond that the expectation (which ignores the capacity) overrates
        // partial matches against realised ones (see docs/ENGINE.md).
        let horizon = self.cfg.size.min(crate::benefit::MAX_STEPS) as f64;
        let steps = |t_init: i64| -> usize {
            let remaining = (tau as f64) - ((t - t_init) as f64);
            (remaining.max(0.0) * rate).round().min(horizon) as usize
        };
        let is_init = |e: &Ev| dfa.init[e.sym as usize] != NONE;
        let z = dfa.n;
        let oldest_init = self.elems[self.active_start..].iter().find(|e| is_init(e)).map(|e| e.t);
        let cand = self.formed_estimate(ev);
        // Eq. 5: present benefit + the mean of the expected benefits over Δτ_old and Δτ_new.
        self.coeffs.h(&dfa, self.cfg.size.min(crate::benefit::MAX_STEPS)); // grow the cache once
        let coeffs = &self.coeffs;
        let dot = |al: &[DualF], h: &[DualF]| -> f64 {
            let acc = al.iter().zip(h).filter(|(x, _)| !x.is_zero()).fold(DualF::ZERO, |acc, (x, h)| acc.add(x.mul(*h)));
            pick(acc, agg)
        };
        let expected = |al: &[DualF], t_old: i64, t_new: i64| -> f64 {
            (dot(al, coeffs.cached(steps(t_old))) + dot(al, coeffs.cached(steps(t_new)))) / 2.0
        };
        let cand_new = if is_init(ev) { Some(t) } else { self.elems[self.active_start..].iter().rev().find(|e| is_init(e)).map(|e| e.t) };
        let mut cand_benefit = pick(final_sum(&dfa, &cand), agg);
        if let (true, Some(t_new)) = (use_expected, cand_new) {
            cand_benefit += expected(&cand, oldest_init.unwrap_or(t_new), t_new);
        }
        let mut best: Option<(usize, f64)> = None;
        let mut latest_init: Option<i64> = None;
        for i in 0..self.elems.len() {
            let mut b = pick(self.pres[i], agg);
            if i >= self.active_start && use_expected {
                if is_init(&self.elems[i]) {
                    latest_init = Some(self.elems[i].t);
                }
                if let (Some(t_old), Some(t_new)) = (oldest_init, latest_init) {
                    b += expected(&self.al[i * z..(i + 1) * z], t_old, t_new);
                }
            }
            if best.is_none_or(|(_, bb)| b < bb) {
                best = Some((i, b));
            }
        }
        match best {
            Some((i, b)) if cand_benefit > b => Some(i),
            _ => None,
        }
    }

    /// Floats used for selection, for tests and inspection: (present benefit, active local).
    pub fn estimates(&mut self) -> (Vec<DualF>, Vec<Vec<DualF>>) {
        if self.cfg.policy == Policy::Any && self.al_dirty {
            self.recompute_al();
        }
        (self.pres.clone(), self.al.chunks(self.dfa.n).map(|c| c.to_vec()).collect())
    }

    pub fn active_start(&self) -> usize {
        self.active_start
    }

    /// Exact local counters (complete matches containing each element), by recomputation:
    /// leave-one-out under skip-till-any-match, run simulation under skip-till-next-match
    /// (where removing an element can re-route runs, so leave-one-out does not apply).
    pub fn exact_locals(&self) -> Vec<Dual<BigUint>> {
        let n = self.elems.len();
        if self.cfg.policy == Policy::Next {
            let mut out = vec![Dual::<BigUint>::zero(); n];
            for i in 0..n {
                let q0 = self.dfa.init[self.elems[i].sym as usize];
                if q0 == NONE {
                    continue;
                }
                let (mut state, mut taken, mut value) = (q0, vec![i], BigUint::from(self.elems[i].v));
                let mut entries: Vec<(usize, BigUint)> = Vec::new();
                if self.dfa.finals[q0 as usize] {
                    entries.push((1, value.clone()));
                }
                for j in i + 1..n {
                    if expired(self.elems[i].t, self.elems[j].t, self.cfg.tau) {
                        break;
                    }
                    let to = self.dfa.step(state, self.elems[j].sym);
                    if to != NONE {
                        state = to;
                        taken.push(j);
                        value += self.elems[j].v;
                        if self.dfa.finals[to as usize] {
                            entries.push((taken.len(), value.clone()));
                        }
                    }
                }
                for (k, &e) in taken.iter().enumerate() {
                    for (len, v) in &entries {
                        if *len > k {
                            out[e].c += 1u32;
                            out[e].s += v;
                        }
                    }
                }
            }
            return out;
        }
        let total = |elems: &[Ev]| -> Dual<BigUint> {
            let part = ExactPart::<BigUint>::rebuild(&self.dfa, &self.cfg, elems, elems.len(), Dual::zero()).expect("big");
            let (c, s, _) = crate::window::split_totals(&self.dfa, &part.g);
            Dual { c, s }
        };
        let all = total(&self.elems);
        (0..n)
            .map(|i| {
                let mut rest = self.elems.clone();
                rest.remove(i);
                let without = total(&rest);
                Dual { c: &all.c - &without.c, s: &all.s - &without.s }
            })
            .collect()
    }

    /// Exact active global counters, for tests.
    pub fn exact_active(&self) -> Vec<Dual<BigUint>> {
        match &self.exact {
            Exact::Small(p) => p.a.iter().map(|d| d.to_big()).collect(),
            Exact::Big(p) => p.a.clone(),
        }
    }

    pub fn rebuild_check(&self) -> Vec<Dual<BigUint>> {
        ExactPart::<BigUint>::rebuild(&self.dfa, &self.cfg, &self.elems, self.active_start, Dual::zero()).expect("big").a
    }
}

fn insert_next<N: Num>(p: &mut ExactPart<N>, dfa: &Dfa, ev: &Ev) -> R<()> {
    let mut formed = zeros::<N>(dfa.n);
    <NextMatch as Algebra<N>>::formed(dfa, &p.a, ev, &mut formed)?;
    let mut found = Dual::zero();
    for (q, f) in formed.iter().enumerate() {
        if dfa.finals[q] {
            found.add_assign(f)?;
        }
    }
    p.detected = p.detected.add(&found)?;
    Ok(())
}

fn detected_fits(d: &Dual<BigUint>) -> bool {
    d.c.bits() <= 127 && d.s.bits() <= 127
}

fn to_u128(b: &BigUint) -> u128 {
    use num_traits::ToPrimitive;
    b.to_u128().unwrap_or(0)
}
