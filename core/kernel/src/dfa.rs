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

/// The defining fields: what is saved and what [`Dfa::new`] validates.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DfaSpec {
    pub n: usize,
    pub alphabet: Vec<u8>,
    pub start: u32,
    pub finals: Vec<bool>,
    /// `table[q * k + c]`: the next state, or -1 for none.
    pub table: Vec<i64>,
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
        let DfaSpec { n, alphabet, start, finals, table } = spec;
        let k = alphabet.len();
        if n == 0 || n > MAX_STATES {
            return Err(format!("automaton has {n} states; 1 to {MAX_STATES} are supported"));
        }
        if k == 0 || k >= UNKNOWN as usize {
            return Err(format!("automaton alphabet has {k} symbols; 1 to 254 are supported"));
        }
        if !alphabet.iter().all(|b| b.is_ascii_graphic()) {
            return Err("automaton alphabet must be printable ASCII".into());
        }
        let mut seen = [false; 256];
        for &b in &alphabet {
            if std::mem::replace(&mut seen[b as usize], true) {
                return Err(format!("automaton alphabet repeats {:?}", b as char));
            }
        }
        if start as usize >= n {
            return Err(format!("start state {start} is not one of the {n} states"));
        }
        if finals.len() != n || table.len() != n.saturating_mul(k) {
            return Err("automaton table has the wrong size".into());
        }
        let mut next = vec![NONE; n * k];
        let mut by_sym = vec![Vec::new(); k];
        for q in 0..n {
            for c in 0..k {
                let t = table[q * k + c];
                if t >= 0 {
                    if t as usize >= n {
                        return Err(format!("transition to unknown state {t}"));
                    }
                    next[q * k + c] = t as u32;
                    by_sym[c].push((q as u32, t as u32));
                } else if t != -1 {
                    return Err(format!("transition entry {t} is neither a state nor -1"));
                }
            }
        }
        let init = (0..k).map(|c| next[start as usize * k + c]).collect();
        let mut lookup = vec![UNKNOWN; 256];
        for (i, &b) in alphabet.iter().enumerate() {
            lookup[b as usize] = i as u8;
        }
        let row_order = by_sym.iter().map(|t| in_place_order(t, |&(_, to)| to, |&(from, _)| from)).collect();
        let col_order = by_sym.iter().map(|t| in_place_order(t, |&(from, _)| from, |&(_, to)| to)).collect();
        Ok(Dfa { n, start, alphabet, finals, next, by_sym, init, lookup, row_order, col_order })
    }

    pub fn spec(&self) -> DfaSpec {
        DfaSpec {
            n: self.n,
            alphabet: self.alphabet.clone(),
            start: self.start,
            finals: self.finals.clone(),
            table: self.next.iter().map(|&t| if t == NONE { -1 } else { t as i64 }).collect(),
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
        Dfa::new(DfaSpec { n: finals.len(), alphabet: alphabet.as_bytes().to_vec(), start: 0, finals, table }).unwrap()
    }
}

#[cfg(test)]
pub mod tests {
    use super::*;

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
        Dfa::new(DfaSpec { n: 5, alphabet: alphabet.into(), start: 0, finals: vec![false, false, false, false, true], table }).unwrap()
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
        let spec = DfaSpec { n: 3, alphabet: b"ab".to_vec(), start: 2, finals: vec![false, true, false], table: vec![-1, 1, -1, -1, 0, -1] };
        let d = Dfa::new(spec.clone()).unwrap();
        assert_eq!(d.init, vec![0, NONE]);
        assert_eq!(d.spec(), spec);
    }
}
