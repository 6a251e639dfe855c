//! Matches as output: every match of a query over a stream, each once, lazily, with a delay
//! between two matches bounded by the window (never by how many matches there are); and
//! matches drawn uniformly at random, exactly, from the counts.
//!
//! A match is grown element by element: at each element a set either takes it or skips it
//! (the policy's edges, [`Policy::edges`]). Two backward passes decide where that can lead:
//!
//! * **Enumeration** needs only *whether* a branch leads to a match inside the window of the
//!   match's first element. That depends on the first element only through the last index
//!   `K` its window reaches, and a branch leads to one iff the smallest possible last element
//!   of its completions is at most `K`. So one table over the whole stream, `earliest[j][q]`,
//!   the smallest last element of the non-empty extensions of a set in state `q` from element
//!   `j` on, answers for every first element (O(n·|Z|) integers). A depth-first search that
//!   follows only such branches reaches a match within O(W) steps (W: elements in a window)
//!   from wherever it stands, so the delay is O(W) whatever the number of matches.
//! * **Sampling** needs *how many*: per first element `i`, the counting DP over its window
//!   (`ext[j][q]`, the number of extensions as above), in the kernel's exact numbers (checked
//!   `u128`, then 256 bits, then big integers). A uniform integer below the total picks the
//!   match by unranking: first element by the per-initiator counts, then take or skip by
//!   the counts of each branch. Exact at any size, O(n·W·|Z|) once plus O(W·|Z|) per draw.
//!
//! **A negation at the end of the pattern** (`A B+ !C`, see `exact::window::Closing`): a set
//! in a *pending* state counts when its window closes if it is still pending then, every
//! later element of the window having passed it (the negated characters are elements with
//! no transition, so their filters apply as they pass). Whether it counts depends on the
//! first element's window end, so `earliest` (one table for every first element) cannot say;
//! instead each first element gets its [`Ends`] (O(W·|Z|) booleans, built when the search
//! or the count reaches it): which sets are still pending at the window's end, and which
//! branches lead to a counted set. The first elements that start a match are found by a
//! sliding product of boolean step relations (O(n·|Z|²) once); then the delay stays
//! O(W·|Z|), and counts and draws are as above.
use crate::automaton::dfa::{Dfa, NONE};
use crate::engine::error::Error;
use crate::numbers::num::{Num, Overflow, R, U256};
use crate::automaton::semantics::{expired, Ev, Policy};
use num_bigint::BigUint;
use rand::{RngCore, SeedableRng};
use std::sync::Arc;

/// Run `$e` (an expression in the number type `$n`, returning `R<T>`) at the narrowest of the
/// kernel's exact types that holds its numbers.
macro_rules! at_narrowest {
    ($n:ident => $e:expr) => {{
        match {
            type $n = u128;
            $e
        } {
            Ok(v) => Ok(v),
            Err(Overflow) => match {
                type $n = U256;
                $e
            } {
                Ok(v) => Ok(v),
                Err(Overflow) => {
                    type $n = BigUint;
                    $e
                }
            },
        }
        .map_err(|_| Error::internal("a count went below zero"))
    }};
}

/// No extension exists (larger than every element index).
const NEVER: u32 = u32::MAX;

/// One match: the indices of its elements (increasing) and the automaton state it ends in
/// (approximate queries read the number of missing letters from it).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Match {
    pub elements: Vec<u32>,
    pub state: u32,
}

/// The matches of one query over one sequence of elements (with their gaps).
pub struct MatchSet {
    dfa: Arc<Dfa>,
    policy: Policy,
    elems: Vec<Ev>,
    /// `last[i]`: the last element inside the window of element `i`.
    last: Vec<u32>,
    /// `earliest[j * |Z| + q]` for `j ≤ n`: see the module comment (`NEVER` if none).
    earliest: Vec<u32>,
    /// The elements that start at least one match, in order.
    starts: Vec<u32>,
    /// With a negation at the end of the pattern: per state, whether it is pending.
    pending: Option<Vec<bool>>,
}

impl MatchSet {
    /// Prepare the matches of `elems` (in time order, gaps filled in as the engines do).
    pub fn new(dfa: Arc<Dfa>, tau: i64, policy: Policy, elems: Vec<Ev>) -> Result<MatchSet, Error> {
        Self::with_closing(dfa, tau, policy, elems, None)
    }

    /// [`MatchSet::new`] with a negation at the end of the pattern: the `pending` states of
    /// the exact engine's `Closing` (over its automaton, where negated characters are letters).
    pub fn with_closing(dfa: Arc<Dfa>, tau: i64, policy: Policy, elems: Vec<Ev>, pending: Option<&[u32]>) -> Result<MatchSet, Error> {
        let n = elems.len();
        if n >= NEVER as usize {
            return Err(Error::input(format!("{n} elements: at most {} are supported", NEVER - 1)));
        }
        if let Some(i) = elems.windows(2).position(|w| w[1].t < w[0].t) {
            return Err(Error::input(format!("element {}: timestamps must not decrease", i + 1)));
        }
        let z = dfa.n;
        let mut last = vec![0u32; n];
        let mut k = 0usize;
        for i in 0..n {
            k = k.max(i);
            while k + 1 < n && !expired(elems[i].t, elems[k + 1].t, tau) {
                k += 1;
            }
            last[i] = k as u32;
        }
        let mut earliest = vec![NEVER; (n + 1) * z];
        for j in (0..n).rev() {
            let (row, below) = earliest.split_at_mut((j + 1) * z);
            let row = &mut row[j * z..];
            for q in 0..z as u32 {
                let (take, pass) = policy.edges(&dfa, q, &elems[j]);
                let mut best = NEVER;
                if take != NONE {
                    best = best.min(if dfa.finals[take as usize] { j as u32 } else { below[take as usize] });
                }
                if pass != NONE {
                    best = best.min(below[pass as usize]);
                }
                row[q as usize] = best;
            }
        }
        let pending = match pending {
            None => None,
            Some(states) => {
                if policy != Policy::Any {
                    return Err(Error::input("a negation at the end of the pattern needs the policy 'any'"));
                }
                let mut mask = vec![false; z];
                for &q in states {
                    if q as usize >= z || dfa.finals[q as usize] {
                        return Err(Error::input(format!("pending state {q} must be a state that is not final")));
                    }
                    mask[q as usize] = true;
                }
                Some(mask)
            }
        };
        let mut set = MatchSet { dfa, policy, elems, last, earliest, starts: Vec::new(), pending };
        set.starts = match &set.pending {
            None => (0..n as u32).filter(|&i| set.first_reaches(i, None)).collect(),
            Some(_) if z <= 64 => set.closing_starts(),
            Some(_) => set.starts_by_ends(),
        };
        Ok(set)
    }

    /// With a negation at the end, the first elements that start a match, each by its
    /// [`Ends`]: O(W·|Z|) per element.
    fn starts_by_ends(&self) -> Vec<u32> {
        (0..self.elems.len() as u32)
            .filter(|&i| {
                let q = self.dfa.init[self.elems[i as usize].sym as usize];
                q != NONE && self.ends(i as usize).is_some_and(|e| e.reaches(&self.dfa, i as usize + 1, q))
            })
            .collect()
    }

    /// [`MatchSet::starts_by_ends`] in O(|Z|²) per element (automata of at most 64 states):
    /// element `i` starts a match iff it does at once (`earliest`) or a pending state is
    /// reachable from its initial state through the step relations of the rest of its window
    /// (each set a path of takes and skips; one still pending at the end counts when the
    /// window closes). The relations' product over the window, which slides, is kept as a
    /// queue of two stacks (suffix products on the front, a running product on the back).
    fn closing_starts(&self) -> Vec<u32> {
        let z = self.dfa.n;
        let pending = self.pending.as_ref().map_or(0, |p| (0..z).filter(|&q| p[q]).fold(0u64, |m, q| m | 1 << q));
        let step = |j: usize| -> Relation {
            (0..z as u32)
                .map(|q| {
                    let (take, pass) = self.policy.edges(&self.dfa, q, &self.elems[j]);
                    [take, pass].iter().filter(|&&p| p != NONE).fold(0u64, |m, &p| m | 1 << p)
                })
                .collect()
        };
        let identity: Relation = (0..z).map(|q| 1u64 << q).collect();
        let (mut front, mut back): (Vec<Relation>, Vec<usize>) = (Vec::new(), Vec::new());
        let mut back_product = identity.clone();
        let (mut head, mut pushed) = (0usize, 0usize); // the queue holds elements head..pushed
        let mut out = Vec::new();
        for i in 0..self.elems.len() {
            let end = self.last[i] as usize + 1;
            while pushed < end {
                back_product = then(&back_product, &step(pushed));
                back.push(pushed);
                pushed += 1;
            }
            while head <= i && head < pushed {
                if front.is_empty() {
                    let mut suffix = identity.clone();
                    for &j in back.iter().rev() {
                        suffix = then(&step(j), &suffix);
                        front.push(suffix.clone());
                    }
                    back.clear();
                    back_product = identity.clone();
                }
                front.pop();
                head += 1;
            }
            let q = self.dfa.init[self.elems[i].sym as usize];
            if q == NONE {
                continue;
            }
            let through_front = front.last().map_or(1u64 << q, |f| f[q as usize]);
            let reached = apply(through_front, &back_product);
            if self.first_reaches(i as u32, None) || reached & pending != 0 {
                out.push(i as u32);
            }
        }
        out
    }

    /// With a negation at the end of the pattern, the [`Ends`] of first element `i`.
    fn ends(&self, i: usize) -> Option<Ends> {
        let pending = self.pending.as_ref()?;
        let z = self.dfa.n;
        let (from, to) = (i + 1, self.last[i] as usize + 1);
        let mut closes = vec![false; (to - from + 1) * z];
        let mut leads = vec![false; (to - from + 1) * z];
        closes[(to - from) * z..].copy_from_slice(pending);
        for j in (from..to).rev() {
            let (row, next) = ((j - from) * z, (j + 1 - from) * z);
            for q in 0..z as u32 {
                let (take, pass) = self.policy.edges(&self.dfa, q, &self.elems[j]);
                let counted = |p: u32| self.dfa.finals[p as usize] || closes[next + p as usize];
                let by_take = take != NONE && (counted(take) || leads[next + take as usize]);
                let by_pass = pass != NONE && leads[next + pass as usize];
                leads[row + q as usize] = by_take || by_pass;
                closes[row + q as usize] = pass != NONE && closes[next + pass as usize];
            }
        }
        Some(Ends { from, z, closes, leads })
    }

    /// Whether a set that just took element `j − 1` into state `q` is a match: final, or with
    /// a negation at the end still pending when its window closes.
    #[inline]
    fn counted(&self, ends: Option<&Ends>, j: usize, q: u32) -> bool {
        self.dfa.finals[q as usize] || ends.is_some_and(|e| e.closes(j, q))
    }

    pub fn len(&self) -> usize {
        self.elems.len()
    }

    pub fn is_empty(&self) -> bool {
        self.elems.is_empty()
    }

    pub fn dfa(&self) -> &Dfa {
        &self.dfa
    }

    /// Smallest last element of a match that a set in state `q` right after taking element
    /// `j − 1` can become (itself included when `q` is final).
    #[inline]
    fn completes(&self, j: usize, q: u32) -> u32 {
        if self.dfa.finals[q as usize] {
            j as u32 - 1
        } else {
            self.earliest[j * self.dfa.n + q as usize]
        }
    }

    /// Whether element `i` starts a match (one that contains `need`, if given).
    fn first_reaches(&self, i: u32, need: Option<&Need>) -> bool {
        let q = self.dfa.init[self.elems[i as usize].sym as usize];
        q != NONE && self.after_take(need, i as usize, q) <= self.last[i as usize]
    }

    /// The bound a branch must meet after taking element `j` into state `q`: the smallest
    /// last element of its matches (that contain `need`).
    #[inline]
    fn after_take(&self, need: Option<&Need>, j: usize, q: u32) -> u32 {
        match need {
            Some(n) if j < n.element as usize => n.through(self.dfa.n, j + 1, q),
            _ => self.completes(j + 1, q),
        }
    }

    /// The same for a set in state `q` before element `j`, extended by elements from `j` on.
    #[inline]
    fn before(&self, need: Option<&Need>, j: usize, q: u32) -> u32 {
        match need {
            Some(n) if j <= n.element as usize => n.through(self.dfa.n, j, q),
            _ => self.earliest[j * self.dfa.n + q as usize],
        }
    }

    /// Every match in order (by first element, then second, ...), lazily.
    pub fn iter(&self) -> Matches<'_> {
        Matches { set: self, cursor: Cursor::new(None) }
    }

    /// A cursor over the matches that contain element `element` (all matches with `None`).
    pub fn cursor(&self, element: Option<u32>) -> Result<Cursor, Error> {
        let need = match element {
            None => None,
            Some(_) if self.pending.is_some() => {
                return Err(Error::input("matches through an element are not listed with a negation at the end of the pattern"));
            }
            Some(c) if c as usize >= self.elems.len() => {
                return Err(Error::input(format!("element {c}: there are {} elements", self.elems.len())));
            }
            Some(c) => Some(Need::new(self, c)),
        };
        Ok(Cursor::new(need))
    }

    /// The number of matches of each first element (0 for the others), exactly.
    pub fn counts(&self) -> Result<Vec<BigUint>, Error> {
        let mut out = vec![BigUint::default(); self.elems.len()];
        for &i in &self.starts {
            let i = i as usize;
            out[i] = at_narrowest!(N => self.table::<N>(i).and_then(|t| t.total(self)).map(|c| c.to_big()))?;
        }
        Ok(out)
    }

    /// The number of matches.
    pub fn count(&self) -> Result<BigUint, Error> {
        Ok(self.counts()?.into_iter().sum())
    }

    /// `k` matches drawn uniformly at random with replacement, in the order drawn.
    pub fn sample(&self, k: usize, seed: u64) -> Result<Vec<Match>, Error> {
        let counts = self.counts()?;
        let mut prefix = Vec::with_capacity(counts.len());
        let mut total = BigUint::default();
        for c in &counts {
            total += c;
            prefix.push(total.clone());
        }
        if k > 0 && total == BigUint::default() {
            return Err(Error::input("there is no match to sample from"));
        }
        let mut rng = rand_pcg::Pcg64::seed_from_u64(seed);
        // Draw every rank first, then decode them grouped by first element so that each
        // first element's table is built once.
        let mut draws: Vec<(usize, BigUint, usize)> = (0..k)
            .map(|slot| {
                let r = below(&mut rng, &total);
                let i = prefix.partition_point(|p| p <= &r);
                let before = if i == 0 { BigUint::default() } else { prefix[i - 1].clone() };
                (i, r - before, slot)
            })
            .collect();
        draws.sort_by_key(|d| d.0);
        let mut out: Vec<Option<Match>> = vec![None; k];
        for group in draws.chunk_by(|a, b| a.0 == b.0) {
            let i = group[0].0;
            let ranks: Vec<&BigUint> = group.iter().map(|d| &d.1).collect();
            let decoded = at_narrowest!(N => self.table::<N>(i).and_then(|t| ranks.iter().map(|r| t.unrank(self, i, r)).collect::<R<Vec<_>>>()))?;
            for (d, m) in group.iter().zip(decoded) {
                out[d.2] = Some(m);
            }
        }
        out.into_iter().map(|m| m.ok_or_else(|| Error::internal("a draw was not decoded"))).collect()
    }

    /// The counting DP over the window of first element `i`.
    fn table<N: Num>(&self, i: usize) -> R<Table<N>> {
        let z = self.dfa.n;
        let (from, to) = (i + 1, self.last[i] as usize + 1);
        let ends = self.ends(i);
        let mut ext = vec![N::zero(); (to - from + 1) * z];
        for j in (from..to).rev() {
            let (row, below) = ext.split_at_mut((j + 1 - from) * z);
            let row = &mut row[(j - from) * z..];
            for q in 0..z as u32 {
                let leads = match &ends {
                    None => self.earliest[j * z + q as usize] <= self.last[i],
                    Some(e) => e.leads(j, q),
                };
                if !leads {
                    continue; // no extension inside this window: 0
                }
                let (take, pass) = self.policy.edges(&self.dfa, q, &self.elems[j]);
                let mut x = N::zero();
                if take != NONE {
                    x = x.add(&complete(below, take, self.counted(ends.as_ref(), j + 1, take))?)?;
                }
                if pass != NONE {
                    x = x.add(&below[pass as usize])?;
                }
                row[q as usize] = x;
            }
        }
        Ok(Table { from, ext, ends })
    }
}

/// A step relation over at most 64 states: bit `r` of `row[q]` when a set in state `q` can be
/// in state `r` after the elements it stands for.
type Relation = Vec<u64>;

/// The states reachable from the set of states `from` (a bit mask) through `rel`.
#[inline]
fn apply(from: u64, rel: &Relation) -> u64 {
    let (mut out, mut rest) = (0u64, from);
    while rest != 0 {
        out |= rel[rest.trailing_zeros() as usize];
        rest &= rest - 1;
    }
    out
}

/// `first` then `second`.
fn then(first: &Relation, second: &Relation) -> Relation {
    first.iter().map(|&row| apply(row, second)).collect()
}

/// Matches through `below` (the extensions of a set in state `q` from the next element on)
/// plus the set itself when it is `counted` (a match).
#[inline]
fn complete<N: Num>(below: &[N], q: u32, counted: bool) -> R<N> {
    let x = &below[q as usize];
    if counted {
        x.add(&N::from_u64(1))
    } else {
        Ok(x.clone())
    }
}

/// With a negation at the end of the pattern, over the window of one first element (rows
/// `from..=to`, `to` just past the window's last element), per row `j` and state `q`:
/// `closes`, a set in state `q` before element `j` is still pending after every element up
/// to the window's end has passed it (it counts when the window closes); `leads`, it has a
/// non-empty extension within the window that counts.
#[derive(Debug, Clone)]
struct Ends {
    from: usize,
    z: usize,
    closes: Vec<bool>,
    leads: Vec<bool>,
}

impl Ends {
    #[inline]
    fn closes(&self, j: usize, q: u32) -> bool {
        self.closes[(j - self.from) * self.z + q as usize]
    }

    #[inline]
    fn leads(&self, j: usize, q: u32) -> bool {
        self.leads[(j - self.from) * self.z + q as usize]
    }

    /// Whether a set that just took element `j − 1` into state `q` counts or has an
    /// extension that does.
    #[inline]
    fn reaches(&self, dfa: &Dfa, j: usize, q: u32) -> bool {
        dfa.finals[q as usize] || self.closes(j, q) || self.leads(j, q)
    }
}


/// Per first element: `ext[(j − from) * |Z| + q]`, the extensions of a set in state `q` by
/// elements `j..=last` (a last row of zeros closes it).
struct Table<N> {
    from: usize,
    ext: Vec<N>,
    ends: Option<Ends>,
}

impl<N: Num> Table<N> {
    fn row(&self, j: usize, z: usize) -> &[N] {
        &self.ext[(j - self.from) * z..(j - self.from + 1) * z]
    }

    /// The matches of the first element (`from − 1`), with a checked count.
    fn total(&self, set: &MatchSet) -> R<N> {
        let q = set.dfa.init[set.elems[self.from - 1].sym as usize];
        complete(self.row(self.from, set.dfa.n), q, set.counted(self.ends.as_ref(), self.from, q))
    }

    /// The match of rank `r` among those of first element `i` (in enumeration order).
    fn unrank(&self, set: &MatchSet, i: usize, r: &BigUint) -> R<Match> {
        let (dfa, z) = (&set.dfa, set.dfa.n);
        let mut r = N::from_big(r)?;
        let mut q = dfa.init[set.elems[i].sym as usize];
        let mut taken = vec![i as u32];
        let mut j = i + 1;
        let mut just_took = true;
        loop {
            if just_took && set.counted(self.ends.as_ref(), j, q) {
                if r.is_zero() {
                    return Ok(Match { elements: taken, state: q });
                }
                r = r.sub(&N::from_u64(1))?;
            }
            if j > set.last[i] as usize {
                return Err(Overflow); // the rank was not below the count
            }
            let (take, pass) = set.policy.edges(dfa, q, &set.elems[j]);
            let below = self.row(j + 1, z);
            let through = if take == NONE { N::zero() } else { complete(below, take, set.counted(self.ends.as_ref(), j + 1, take))? };
            if r.sub(&through).is_err() {
                taken.push(j as u32);
                q = take;
                just_took = true;
            } else {
                r = r.sub(&through)?;
                if pass == NONE {
                    return Err(Overflow);
                }
                q = pass;
                just_took = false;
            }
            j += 1;
        }
    }
}

/// A uniform integer below `n` (> 0), by rejection over its bit length.
fn below(rng: &mut impl RngCore, n: &BigUint) -> BigUint {
    let bits = n.bits();
    let bytes = bits.div_ceil(8) as usize;
    let mut buf = vec![0u8; bytes];
    loop {
        rng.fill_bytes(&mut buf);
        let extra = bytes as u64 * 8 - bits;
        if let Some(top) = buf.last_mut() {
            *top &= 0xffu8 >> extra;
        }
        let x = BigUint::from_bytes_le(&buf);
        if &x < n {
            return x;
        }
    }
}

/// Matches must contain element `element`: `through[(j − lo) * |Z| + q]` for `lo ≤ j ≤
/// element` is the smallest last element of a match containing it that a set in state `q`
/// before element `j` can become.
#[derive(Debug, Clone)]
struct Need {
    element: u32,
    lo: u32,
    through: Vec<u32>,
}

impl Need {
    fn new(set: &MatchSet, c: u32) -> Need {
        let z = set.dfa.n;
        let c_us = c as usize;
        // The first elements whose window reaches `c`.
        let lo = set.last.partition_point(|&k| k < c) as u32;
        let mut through = vec![NEVER; (c_us + 1 - lo as usize) * z];
        for j in (lo as usize..=c_us).rev() {
            for q in 0..z as u32 {
                let (take, pass) = set.policy.edges(&set.dfa, q, &set.elems[j]);
                let mut best = NEVER;
                if j == c_us {
                    if take != NONE {
                        best = set.completes(j + 1, take);
                    }
                } else {
                    let next = |p: u32| through[(j + 1 - lo as usize) * z + p as usize];
                    if take != NONE {
                        best = best.min(next(take));
                    }
                    if pass != NONE {
                        best = best.min(next(pass));
                    }
                }
                through[(j - lo as usize) * z + q as usize] = best;
            }
        }
        Need { element: c, lo, through }
    }

    #[inline]
    fn through(&self, z: usize, j: usize, q: u32) -> u32 {
        if j < self.lo as usize {
            return NEVER;
        }
        self.through[(j - self.lo as usize) * z + q as usize]
    }
}

/// A choice point of the search: a set in state `q` before element `j`, holding the first
/// `len` taken elements; `took` once its take branch has been tried.
#[derive(Debug, Clone, Copy)]
struct Frame {
    j: u32,
    q: u32,
    len: u32,
    took: bool,
}

/// Where an enumeration stands; owns nothing of the [`MatchSet`] it walks, so a binding can
/// keep both side by side.
#[derive(Debug, Clone)]
pub struct Cursor {
    need: Option<Need>,
    /// The next first element to try: an index into `starts` (or the element itself with a
    /// required element).
    next_start: u32,
    /// The window end of the current first element.
    bound: u32,
    /// Its [`Ends`], with a negation at the end of the pattern.
    ends: Option<Ends>,
    frames: Vec<Frame>,
    taken: Vec<u32>,
    done: bool,
    /// Search steps so far (frames visited and first elements tried): what the delay bound
    /// is about, counted so that tests and benchmarks can check it without a clock.
    steps: u64,
}

impl Cursor {
    fn new(need: Option<Need>) -> Cursor {
        let next_start = need.as_ref().map_or(0, |n| n.lo);
        Cursor { need, next_start, bound: 0, ends: None, frames: Vec::new(), taken: Vec::new(), done: false, steps: 0 }
    }

    /// Search steps taken so far.
    pub fn steps(&self) -> u64 {
        self.steps
    }

    /// The next first element that starts a wanted match, if any.
    fn next_first(&mut self, set: &MatchSet, need: Option<&Need>) -> Option<u32> {
        match need {
            None => {
                let i = *set.starts.get(self.next_start as usize)?;
                self.next_start += 1;
                Some(i)
            }
            Some(n) => {
                while self.next_start <= n.element {
                    self.steps += 1;
                    let i = self.next_start;
                    self.next_start += 1;
                    if set.first_reaches(i, Some(n)) {
                        return Some(i);
                    }
                }
                None
            }
        }
    }

    /// The next match, or `None` when every one has been given.
    pub fn next(&mut self, set: &MatchSet) -> Option<Match> {
        let need = self.need.take(); // put back below (not cloned: it is O(W·|Z|))
        let found = self.search(set, need.as_ref());
        self.need = need;
        found
    }

    fn search(&mut self, set: &MatchSet, need: Option<&Need>) -> Option<Match> {
        let wanted = |j: u32| need.is_none_or(|n| j >= n.element);
        loop {
            self.steps += 1;
            let Some(f) = self.frames.last_mut() else {
                if self.done {
                    return None;
                }
                let Some(i) = self.next_first(set, need) else {
                    self.done = true;
                    return None;
                };
                let q = set.dfa.init[set.elems[i as usize].sym as usize];
                self.bound = set.last[i as usize];
                self.ends = set.ends(i as usize);
                self.taken.clear();
                self.taken.push(i);
                self.frames.push(Frame { j: i + 1, q, len: 1, took: false });
                if set.counted(self.ends.as_ref(), i as usize + 1, q) && wanted(i) {
                    return Some(Match { elements: self.taken.clone(), state: q });
                }
                continue;
            };
            let (j, q) = (f.j as usize, f.q);
            let leads = match &self.ends {
                None => set.before(need, j, q) <= self.bound,
                Some(e) => e.leads(j, q),
            };
            if j > self.bound as usize || !leads {
                self.frames.pop();
                continue;
            }
            let (take, pass) = set.policy.edges(&set.dfa, q, &set.elems[j]);
            self.taken.truncate(f.len as usize);
            if !f.took {
                f.took = true;
                let worth = take != NONE
                    && match &self.ends {
                        None => set.after_take(need, j, take) <= self.bound,
                        Some(e) => e.reaches(&set.dfa, j + 1, take),
                    };
                if worth {
                    let len = f.len + 1;
                    self.taken.push(j as u32);
                    self.frames.push(Frame { j: j as u32 + 1, q: take, len, took: false });
                    if set.counted(self.ends.as_ref(), j + 1, take) && wanted(j as u32) {
                        return Some(Match { elements: self.taken.clone(), state: take });
                    }
                }
                continue;
            }
            // Skip element j (not the required one): this frame becomes the set before j + 1.
            if pass != NONE && need.is_none_or(|n| j != n.element as usize) {
                *f = Frame { j: j as u32 + 1, q: pass, len: f.len, took: false };
            } else {
                self.frames.pop();
            }
        }
    }
}

/// Every match of a [`MatchSet`], as an iterator.
pub struct Matches<'a> {
    set: &'a MatchSet,
    cursor: Cursor,
}

impl Iterator for Matches<'_> {
    type Item = Match;
    fn next(&mut self) -> Option<Match> {
        self.cursor.next(self.set)
    }
}

#[cfg(test)]
mod tests;
