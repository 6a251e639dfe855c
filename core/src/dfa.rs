//! The deterministic automaton the counters run over (built and minimised in Python).
use serde::{Deserialize, Serialize};

pub const NONE: u32 = u32::MAX;
/// Symbol code for a character outside the query's alphabet.
pub const UNKNOWN: u8 = u8::MAX;

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Dfa {
    /// Number of states; state 0 is the start state.
    pub n: usize,
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

/// Order `trans` so that for every state, the transition that reads it comes before every
/// transition that writes it. `reads(t)` and `writes(t)` name those states.
fn in_place_order(trans: &[(u32, u32)], reads: impl Fn(&(u32, u32)) -> u32, writes: impl Fn(&(u32, u32)) -> u32) -> Option<Vec<(u32, u32)>> {
    let mut left: Vec<(u32, u32)> = trans.to_vec();
    let mut order = Vec::with_capacity(trans.len());
    while !left.is_empty() {
        // Ready: no other pending transition still needs to read the state it writes.
        let pos = left.iter().position(|t| !left.iter().any(|o| o != t && reads(o) == writes(t)))?;
        order.push(left.remove(pos));
    }
    Some(order)
}

impl Dfa {
    pub fn new(n: usize, alphabet: Vec<u8>, finals: Vec<bool>, table: Vec<i64>) -> Result<Dfa, String> {
        let k = alphabet.len();
        if n == 0 || k == 0 || k >= UNKNOWN as usize {
            return Err("automaton needs at least one state and 1..254 symbols".into());
        }
        if finals.len() != n || table.len() != n * k {
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
                }
            }
        }
        let init = (0..k).map(|c| next[c]).collect();
        let mut lookup = vec![UNKNOWN; 256];
        for (i, &b) in alphabet.iter().enumerate() {
            lookup[b as usize] = i as u8;
        }
        let row_order = by_sym.iter().map(|t| in_place_order(t, |&(_, to)| to, |&(from, _)| from)).collect();
        let col_order = by_sym.iter().map(|t| in_place_order(t, |&(from, _)| from, |&(_, to)| to)).collect();
        Ok(Dfa { n, alphabet, finals, next, by_sym, init, lookup, row_order, col_order })
    }

    #[inline]
    pub fn k(&self) -> usize {
        self.alphabet.len()
    }

    #[inline]
    pub fn step(&self, q: u32, c: u8) -> u32 {
        self.next[q as usize * self.k() + c as usize]
    }
}
