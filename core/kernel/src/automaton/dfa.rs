//! The deterministic automaton the counters run over (built and minimised in Python).
//!
//! Only the defining fields (states, alphabet, start, finals, transition table) are stored;
//! everything derived from them is rebuilt and checked by [`Dfa::new`], also when a saved
//! state is loaded, so a corrupt automaton is refused before anything runs on it.
use serde::{Deserialize, Serialize};

pub const NONE: u32 = u32::MAX;
/// Symbol code for a character outside the query's alphabet.
pub const UNKNOWN: u8 = u8::MAX;
/// The most automaton states any engine accepts (the resource limit refuses far earlier
/// for realistic configurations; this bounds what a saved state can ask for).
pub const MAX_STATES: usize = 1 << 20;

/// The most negated characters a query may have (one bit each in [`GAP_BREAK`]'s word).
pub const MAX_NEGATED: usize = 31;
/// Gap bit: an event that can be no element lay between two elements (breaks contiguity).
pub const GAP_BREAK: u32 = 1 << 31;

/// The defining fields: what is saved and what [`Dfa::new`] validates.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DfaSpec {
    pub n: usize,
    /// Letters: the characters that can be elements of a match.
    pub alphabet: Vec<u8>,
    /// Negated characters (`!X` in the query): events that kill or re-route the sets they fall
    /// between. A character may be both a letter and negated.
    pub negated: Vec<u8>,
    pub start: u32,
    pub finals: Vec<bool>,
    /// `table[q * (k + m) + c]`: the next state on letter `c` (c < k) or on negated
    /// character `c − k`, or -1 for none.
    pub table: Vec<i64>,
}

/// How the sets that do not take an element fare.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Skip {
    /// They stay (skip-till-any/next-match), passing the element's negation filter if any.
    Keep,
    /// They die: every element of a match must follow the previous one directly (contiguity).
    Kill,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(try_from = "DfaSpec", into = "DfaSpec")]
pub struct Dfa {
    /// Number of states.
    pub n: usize,
    pub start: u32,
    /// Alphabet, one ASCII byte per symbol, in symbol order.
    pub alphabet: Vec<u8>,
    pub finals: Vec<bool>,
    /// `next[q * k + c]`, or `NONE`.
    pub next: Vec<u32>,
    /// Per symbol, its transitions `(from, to)`: the sparse form every counter update uses.
    pub by_sym: Vec<Vec<(u32, u32)>>,
    /// Per symbol, `δ(start, c)` or `NONE`: whether an element of that symbol can start a match.
    pub init: Vec<u32>,
    /// Byte -> symbol, `UNKNOWN` for bytes outside the alphabet.
    pub lookup: Vec<u8>,
    /// Per symbol, an order of its transitions under which the in-place update
    /// `row q += w · row δ(q,c)` never reads a row it already changed (`None`: a cycle
    /// of length ≥ 2 makes a working copy necessary).
    pub row_order: Vec<Option<Vec<(u32, u32)>>>,
    /// The same for `col δ(q,c) += w · col q`.
    pub col_order: Vec<Option<Vec<(u32, u32)>>>,
    pub negated: Vec<u8>,
    /// `neg_next[q * m + j]`: where negated character `j` sends a set in state `q` (a filter).
    pub neg_next: Vec<u32>,
    /// Per letter, its negated index if the letter is also negated.
    pub letter_neg: Vec<Option<u8>>,
    /// Byte -> negated index, `UNKNOWN` for bytes that are not negated.
    pub neg_lookup: Vec<u8>,
}

/// Order `trans` so that for every state, the transitions that read it come before every
/// transition that writes it. `reads(t)` and `writes(t)` name those states. Among the ready
/// transitions the earliest in `trans` goes first (a stable topological order, O(T log T)).
fn in_place_order(trans: &[(u32, u32)], reads: impl Fn(&(u32, u32)) -> u32, writes: impl Fn(&(u32, u32)) -> u32) -> Option<Vec<(u32, u32)>> {
    use std::cmp::Reverse;
    use std::collections::{BinaryHeap, HashMap};
    let mut writers: HashMap<u32, Vec<usize>> = HashMap::new();
    for (i, t) in trans.iter().enumerate() {
        writers.entry(writes(t)).or_default().push(i);
    }
    // t waits for every other transition that reads the state t writes.
    let mut waiting = vec![0usize; trans.len()];
    for (o, t) in trans.iter().enumerate() {
        for &w in writers.get(&reads(t)).map_or(&[][..], |v| &v[..]) {
            if w != o {
                waiting[w] += 1;
            }
        }
    }
    let mut ready: BinaryHeap<Reverse<usize>> = (0..trans.len()).filter(|&i| waiting[i] == 0).map(Reverse).collect();
    let mut order = Vec::with_capacity(trans.len());
    while let Some(Reverse(o)) = ready.pop() {
        order.push(trans[o]);
        for &w in writers.get(&reads(&trans[o])).map_or(&[][..], |v| &v[..]) {
            if w != o {
                waiting[w] -= 1;
                if waiting[w] == 0 {
                    ready.push(Reverse(w));
                }
            }
        }
    }
    (order.len() == trans.len()).then_some(order)
}

impl TryFrom<DfaSpec> for Dfa {
    type Error = String;
    fn try_from(spec: DfaSpec) -> Result<Dfa, String> {
        Dfa::new(spec)
    }
}

impl From<Dfa> for DfaSpec {
    fn from(d: Dfa) -> DfaSpec {
        d.spec()
    }
}

impl Dfa {
    pub fn new(spec: DfaSpec) -> Result<Dfa, String> {
        let DfaSpec { n, alphabet, negated, start, finals, table } = spec;
        let k = alphabet.len();
        let m = negated.len();
        if m > MAX_NEGATED {
            return Err(format!("automaton has {m} negated characters; at most {MAX_NEGATED} are supported"));
        }
        if !negated.iter().all(|b| b.is_ascii_graphic()) {
            return Err("negated characters must be printable ASCII".into());
        }
        if n == 0 || n > MAX_STATES {
            return Err(format!("automaton has {n} states; 1 to {MAX_STATES} are supported"));
        }
        if k == 0 || k >= UNKNOWN as usize {
            return Err(format!("automaton alphabet has {k} symbols; 1 to 254 are supported"));
        }
        if !alphabet.iter().all(|b| b.is_ascii_graphic()) {
            return Err("automaton alphabet must be printable ASCII".into());
        }
        for list in [&alphabet, &negated] {
            let mut seen = [false; 256];
            for &b in list {
                if std::mem::replace(&mut seen[b as usize], true) {
                    return Err(format!("automaton alphabet repeats {:?}", b as char));
                }
            }
        }
        if start as usize >= n {
            return Err(format!("start state {start} is not one of the {n} states"));
        }
        let width = k + m;
        if finals.len() != n || table.len() != n.saturating_mul(width) {
            return Err("automaton table has the wrong size".into());
        }
        let mut next = vec![NONE; n * k];
        let mut neg_next = vec![NONE; n * m];
        let mut by_sym = vec![Vec::new(); k];
        for q in 0..n {
            for c in 0..width {
                let t = table[q * width + c];
                if t >= 0 {
                    if t as usize >= n {
                        return Err(format!("transition to unknown state {t}"));
                    }
                    if c < k {
                        next[q * k + c] = t as u32;
                        by_sym[c].push((q as u32, t as u32));
                    } else {
                        neg_next[q * m + c - k] = t as u32;
                    }
                } else if t != -1 {
                    return Err(format!("transition entry {t} is neither a state nor -1"));
                }
            }
        }
        // Gaps merge by union when an element between them goes: that needs negation
        // transitions to be filters that are idempotent and commute.
        let apply = |q: u32, j: usize| if q == NONE { NONE } else { neg_next[q as usize * m + j] };
        for q in 0..n as u32 {
            for i in 0..m {
                if apply(apply(q, i), i) != apply(q, i) {
                    return Err(format!("negation of {:?} is not idempotent at state {q}", negated[i] as char));
                }
                for j in 0..i {
                    if apply(apply(q, i), j) != apply(apply(q, j), i) {
                        return Err(format!("negations of {:?} and {:?} do not commute at state {q}", negated[i] as char, negated[j] as char));
                    }
                }
            }
        }
        let init = (0..k).map(|c| next[start as usize * k + c]).collect();
        let mut lookup = vec![UNKNOWN; 256];
        for (i, &b) in alphabet.iter().enumerate() {
            lookup[b as usize] = i as u8;
        }
        let mut neg_lookup = vec![UNKNOWN; 256];
        for (j, &b) in negated.iter().enumerate() {
            neg_lookup[b as usize] = j as u8;
        }
        let letter_neg = alphabet.iter().map(|&b| (neg_lookup[b as usize] != UNKNOWN).then_some(neg_lookup[b as usize])).collect();
        let row_order = by_sym.iter().map(|t| in_place_order(t, |&(_, to)| to, |&(from, _)| from)).collect();
        let col_order = by_sym.iter().map(|t| in_place_order(t, |&(from, _)| from, |&(_, to)| to)).collect();
        Ok(Dfa { n, start, alphabet, finals, next, by_sym, init, lookup, row_order, col_order, negated, neg_next, letter_neg, neg_lookup })
    }

    pub fn spec(&self) -> DfaSpec {
        let (k, m) = (self.k(), self.negated.len());
        let cell = |t: u32| if t == NONE { -1 } else { t as i64 };
        let table = (0..self.n).flat_map(|q| (0..k).map(move |c| cell(self.next[q * k + c])).chain((0..m).map(move |j| cell(self.neg_next[q * m + j])))).collect();
        DfaSpec { n: self.n, alphabet: self.alphabet.clone(), negated: self.negated.clone(), start: self.start, finals: self.finals.clone(), table }
    }

    /// The bit an element of letter `c` leaves in the gap when it is not retained.
    #[inline]
    pub fn absorbed(&self, c: u8) -> u32 {
        GAP_BREAK | self.letter_neg[c as usize].map_or(0, |j| 1 << j)
    }

    /// Whether an element's operator is the plain `I + w·T_c` (no gap, no own negation).
    #[inline]
    pub fn plain(&self, sym: u8, gap: u32, skip: Skip) -> bool {
        skip == Skip::Keep && gap & !GAP_BREAK == 0 && self.letter_neg[sym as usize].is_none()
    }

    /// A set in state `q` after the events of `gap` (before the element): filtered by each
    /// negated character present; under [`Skip::Kill`] an interruption kills it.
    #[inline]
    pub fn after_gap(&self, q: u32, gap: u32, skip: Skip) -> u32 {
        if gap == 0 {
            return q;
        }
        if gap & GAP_BREAK != 0 && skip == Skip::Kill {
            return NONE;
        }
        let m = self.negated.len();
        let mut bits = gap & !GAP_BREAK;
        let mut q = q;
        while bits != 0 && q != NONE {
            let j = bits.trailing_zeros() as usize;
            q = self.neg_next[q as usize * m + j];
            bits &= bits - 1;
        }
        q
    }

    /// Where a set in state `q` goes when it takes element (`sym`, `gap`), or `NONE`.
    #[inline]
    pub fn take(&self, q: u32, sym: u8, gap: u32, skip: Skip) -> u32 {
        let p = self.after_gap(q, gap, skip);
        if p == NONE {
            NONE
        } else {
            self.step(p, sym)
        }
    }

    /// Where a set in state `q` goes when it skips element (`sym`, `gap`), or `NONE`.
    #[inline]
    pub fn pass(&self, q: u32, sym: u8, gap: u32, skip: Skip) -> u32 {
        if skip == Skip::Kill {
            return NONE;
        }
        let p = self.after_gap(q, gap, skip);
        match (p, self.letter_neg[sym as usize]) {
            (NONE, _) => NONE,
            (p, Some(j)) => self.neg_next[p as usize * self.negated.len() + j as usize],
            (p, None) => p,
        }
    }

    #[inline]
    pub fn k(&self) -> usize {
        self.alphabet.len()
    }

    #[inline]
    pub fn step(&self, q: u32, c: u8) -> u32 {
        self.next[q as usize * self.k() + c as usize]
    }

    /// Whether an element of symbol `c` can start a match.
    #[inline]
    pub fn starts(&self, c: u8) -> bool {
        self.init[c as usize] != NONE
    }

    /// Per `q * k + c`: whether letter `c` keeps a set in state `q` within its strongly
    /// connected part of the automaton (it can come back to `q`): the letters of a loop.
    pub fn looping(&self) -> Vec<bool> {
        let (n, k) = (self.n, self.k());
        // reach[q][r]: r is reachable from q (a search from each of a query's few states).
        let reach: Vec<Vec<bool>> = (0..n)
            .map(|q| {
                let mut seen = vec![false; n];
                seen[q] = true;
                let mut stack = vec![q];
                while let Some(r) = stack.pop() {
                    for c in 0..k {
                        let to = self.step(r as u32, c as u8);
                        if to != NONE && !seen[to as usize] {
                            seen[to as usize] = true;
                            stack.push(to as usize);
                        }
                    }
                }
                seen
            })
            .collect();
        (0..n * k)
            .map(|x| {
                let to = self.step((x / k) as u32, (x % k) as u8);
                to != NONE && reach[to as usize][x / k]
            })
            .collect()
    }

    /// The automaton of a word list, for tests: a trie over the words.
    #[cfg(test)]
    pub fn from_regex_words(alphabet: &str, words: &[&str]) -> Dfa {
        let k = alphabet.len();
        let mut table = vec![-1i64; k];
        let mut finals = vec![false];
        for w in words {
            let mut q = 0usize;
            for ch in w.bytes() {
                let c = alphabet.bytes().position(|a| a == ch).unwrap();
                if table[q * k + c] < 0 {
                    table[q * k + c] = finals.len() as i64;
                    finals.push(false);
                    table.extend(std::iter::repeat_n(-1, k));
                }
                q = table[q * k + c] as usize;
            }
            finals[q] = true;
        }
        Dfa::new(DfaSpec { n: finals.len(), alphabet: alphabet.as_bytes().to_vec(), negated: Vec::new(), start: 0, finals, table }).unwrap()
    }
}

#[cfg(test)]
pub mod tests {
    use super::*;

    /// The loops of `a(b*c)*d(e|f)g*`: `b` and `c` after an `a` or `c`, `b` and `c` after a
    /// `b`, and `g` at the end; `a`, `d`, `e`, `f` only move forward.
    #[test]
    fn the_papers_loops() {
        let dfa = paper();
        let looping = dfa.looping();
        let at = |q: usize, ch: char| looping[q * 7 + "abcdefg".find(ch).unwrap()];
        let loops: Vec<(usize, char)> = (0..5).flat_map(|q| "abcdefg".chars().map(move |c| (q, c))).filter(|&(q, c)| at(q, c)).collect();
        assert_eq!(loops, vec![(1, 'b'), (1, 'c'), (2, 'b'), (2, 'c'), (4, 'g')]);
        // A trie has none.
        assert!(Dfa::from_regex_words("ab", &["ab", "ba", "aab"]).looping().iter().all(|l| !l));
    }

    /// `a(b*c)*d(e|f)g*` as suse's compiler builds it (minimal, start state 0).
    pub fn paper() -> Dfa {
        // states: 0 start, 1 after a / after c, 2 after b, 3 after d, 4 final (e|f then g*)
        let alphabet = "abcdefg";
        let k = 7;
        let mut table = vec![-1i64; 5 * k];
        let mut set = |q: usize, ch: char, to: i64| table[q * k + alphabet.find(ch).unwrap()] = to;
        set(0, 'a', 1);
        set(1, 'b', 2);
        set(1, 'c', 1);
        set(1, 'd', 3);
        set(2, 'b', 2);
        set(2, 'c', 1);
        set(3, 'e', 4);
        set(3, 'f', 4);
        set(4, 'g', 4);
        Dfa::new(DfaSpec { n: 5, alphabet: alphabet.into(), negated: Vec::new(), start: 0, finals: vec![false, false, false, false, true], table }).unwrap()
    }

    /// `a(b!e c)*d` with `e` negated between `b` and the `c` after it, and `g` negated
    /// between `a` and anything: `a!g(b!e c)*d`. Built by hand as the compiler would:
    /// states 0 start, 1 after a (guard g), 2 after b (guard e), 3 after c, 4 after d (final).
    pub fn negation() -> Dfa {
        let (letters, neg) = ("abcd", "eg");
        let w = 6;
        let mut table = vec![-1i64; 5 * w];
        let mut set = |q: usize, col: usize, to: i64| table[q * w + col] = to;
        set(0, 0, 1); // a
        set(1, 1, 2); // b
        set(1, 3, 4); // d
        set(2, 2, 3); // c
        set(3, 1, 2); // b
        set(3, 3, 4); // d
        // filters: e kills state 2; g kills state 1; everything else stays
        for q in 0..5 {
            if q != 2 {
                set(q, 4, q as i64);
            }
            if q != 1 {
                set(q, 5, q as i64);
            }
        }
        Dfa::new(DfaSpec { n: 5, alphabet: letters.into(), negated: neg.into(), start: 0, finals: vec![false, false, false, false, true], table }).unwrap()
    }

    /// `ab!a b`: `a` is a letter and also negated between the two b's.
    pub fn letter_negated() -> Dfa {
        // states: 0 start, 1 after a, 2 after first b (guard a), 3 final
        let w = 3;
        let mut table = vec![-1i64; 4 * w];
        table[0] = 1;
        table[w + 1] = 2;
        table[2 * w + 1] = 3;
        for q in [0, 1, 3] {
            table[q * w + 2] = q as i64;
        }
        Dfa::new(DfaSpec { n: 4, alphabet: b"ab".to_vec(), negated: b"a".to_vec(), start: 0, finals: vec![false, false, false, true], table }).unwrap()
    }

    #[test]
    fn validates_its_definition() {
        let ok = paper().spec();
        assert!(Dfa::new(ok.clone()).is_ok());
        let bad = |f: &dyn Fn(&mut DfaSpec)| {
            let mut s = ok.clone();
            f(&mut s);
            Dfa::new(s).unwrap_err()
        };
        assert!(bad(&|s| s.start = 9).contains("start state"));
        assert!(bad(&|s| s.table[3] = 77).contains("unknown state"));
        assert!(bad(&|s| s.table[3] = -5).contains("neither"));
        assert!(bad(&|s| s.table.pop().map(|_| ()).unwrap()).contains("wrong size"));
        assert!(bad(&|s| s.alphabet[1] = b'a').contains("repeats"));
        assert!(bad(&|s| s.n = 0).contains("states"));
        assert!(bad(&|s| s.alphabet.clear()).contains("symbols"));
        let neg = negation().spec();
        assert_eq!(Dfa::new(neg.clone()).unwrap().spec(), neg);
        let mut swap = neg.clone();
        swap.table[6 + 4] = 3; // e moves state 1 to 3: not a filter that commutes/idempotes
        assert!(Dfa::new(swap).is_err());
    }

    #[test]
    fn gaps_filter_and_elements_pass_or_take() {
        let d = negation();
        let (e, g) = (1u32 << 0, 1u32 << 1);
        assert_eq!(d.after_gap(2, e, Skip::Keep), NONE);
        assert_eq!(d.after_gap(2, g, Skip::Keep), 2);
        assert_eq!(d.after_gap(1, e | g, Skip::Keep), NONE);
        assert_eq!(d.after_gap(3, GAP_BREAK, Skip::Keep), 3);
        assert_eq!(d.after_gap(3, GAP_BREAK, Skip::Kill), NONE);
        assert_eq!(d.take(2, 2, 0, Skip::Keep), 3);
        assert_eq!(d.take(2, 2, e, Skip::Keep), NONE);
        assert_eq!(d.pass(2, 2, 0, Skip::Kill), NONE);
        let l = letter_negated();
        // An a between the two b's: a set after the first b cannot skip it.
        assert_eq!(l.pass(2, 0, 0, Skip::Keep), NONE);
        assert_eq!(l.pass(1, 0, 0, Skip::Keep), 1);
        assert!(!l.plain(0, 0, Skip::Keep) && l.plain(1, GAP_BREAK, Skip::Keep) && !l.plain(1, 0, Skip::Kill));
        assert_eq!(l.absorbed(0), GAP_BREAK | 1);
    }

    /// The order is the one the definition gives: repeatedly the first ready transition.
    #[test]
    fn in_place_order_is_the_first_ready_one() {
        fn slow(trans: &[(u32, u32)], reads: impl Fn(&(u32, u32)) -> u32, writes: impl Fn(&(u32, u32)) -> u32) -> Option<Vec<(u32, u32)>> {
            let mut left = trans.to_vec();
            let mut order = Vec::new();
            while !left.is_empty() {
                let pos = left.iter().position(|t| !left.iter().any(|o| o != t && reads(o) == writes(t)))?;
                order.push(left.remove(pos));
            }
            Some(order)
        }
        let mut x: u64 = 99;
        for _ in 0..300 {
            let n = 1 + (x % 9) as u32;
            let trans: Vec<(u32, u32)> = (0..n)
                .filter_map(|q| {
                    x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                    (x >> 60 != 0).then_some((q, (x >> 33) as u32 % n))
                })
                .collect();
            let (r, w) = (|t: &(u32, u32)| t.1, |t: &(u32, u32)| t.0);
            assert_eq!(in_place_order(&trans, r, w), slow(&trans, r, w), "{trans:?}");
            assert_eq!(in_place_order(&trans, w, r), slow(&trans, w, r), "{trans:?}");
        }
    }

    #[test]
    fn start_state_need_not_be_zero() {
        // "ab" with the start state numbered 2.
        let spec = DfaSpec { n: 3, alphabet: b"ab".to_vec(), negated: Vec::new(), start: 2, finals: vec![false, true, false], table: vec![-1, 1, -1, -1, 0, -1] };
        let d = Dfa::new(spec.clone()).unwrap();
        assert_eq!(d.init, vec![0, NONE]);
        assert_eq!(d.spec(), spec);
    }
}
