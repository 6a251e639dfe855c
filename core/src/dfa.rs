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
        Ok(Dfa { n, alphabet, finals, next, by_sym, init, lookup })
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
