//! A batch of raw events with evaluation times, validated before anything is processed.
use crate::automaton::dfa::{Dfa, GAP_BREAK, UNKNOWN};
use crate::engine::error::Error;
use crate::automaton::semantics::Ev;

/// One raw event as an engine sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Raw {
    /// A letter of the query: a possible element (its gap is filled in by the engine).
    Element(Ev),
    /// An event that can be no element: the gap bits it sets ([`GAP_BREAK`], and a negated
    /// character's bit; [`GAP_BREAK`] alone is a character outside the query, counted as
    /// skipped).
    Gap(u32),
}

impl Raw {
    #[inline]
    pub fn classify(dfa: &Dfa, byte: u8, t: i64, v: u64) -> Raw {
        let sym = dfa.lookup[byte as usize];
        if sym != UNKNOWN {
            return Raw::Element(Ev { sym, t, v, gap: 0 });
        }
        match dfa.neg_lookup[byte as usize] {
            UNKNOWN => Raw::Gap(GAP_BREAK),
            j => Raw::Gap(1 << j | GAP_BREAK), // any event between two elements breaks contiguity
        }
    }
}

pub struct Batch<'a> {
    chars: &'a [u8],
    ts: &'a [i64],
    vals: Option<&'a [i64]>,
    evals: &'a [i64],
}

/// Evaluation times must not go back.
pub fn check_evals(evals: &[i64]) -> Result<(), Error> {
    match evals.windows(2).position(|w| w[1] < w[0]) {
        Some(i) => Err(Error::input(format!("evaluation times must be in increasing order: {} comes after {}", evals[i + 1], evals[i]))),
        None => Ok(()),
    }
}

impl<'a> Batch<'a> {
    /// Check lengths, values and order; `last_t` is the last timestamp already processed.
    pub fn new(chars: &'a [u8], ts: &'a [i64], vals: Option<&'a [i64]>, evals: &'a [i64], last_t: Option<i64>) -> Result<Self, Error> {
        let batch = Batch::unordered(chars, ts, vals)?;
        let mut prev = last_t;
        for (i, &t) in ts.iter().enumerate() {
            if let Some(p) = prev {
                if t < p {
                    return Err(Error::input(format!("event {i}: timestamp {t} is earlier than the previous timestamp {p}; timestamps must not decrease")));
                }
            }
            prev = Some(t);
        }
        check_evals(evals)?;
        if let (Some(&first), Some(last)) = (evals.first(), last_t) {
            if first < last {
                return Err(Error::input(format!(
                    "evaluation time {first} is earlier than timestamp {last}, already processed; an evaluation covers the events up to its time, so it cannot go back"
                )));
            }
        }
        Ok(Batch { evals, ..batch })
    }

    /// Check lengths and values only: events in arrival order, for an engine that places late
    /// ones itself; no evaluations.
    pub fn unordered(chars: &'a [u8], ts: &'a [i64], vals: Option<&'a [i64]>) -> Result<Self, Error> {
        if ts.len() != chars.len() {
            return Err(Error::input(format!("{} characters but {} timestamps", chars.len(), ts.len())));
        }
        if let Some(v) = vals {
            if v.len() != chars.len() {
                return Err(Error::input(format!("{} characters but {} values", chars.len(), v.len())));
            }
            if let Some(i) = v.iter().position(|&x| x < 0) {
                return Err(Error::input(format!("event {i}: value {} is negative; values must be non-negative integers", v[i])));
            }
        }
        Ok(Batch { chars, ts, vals, evals: &[] })
    }

    pub fn last_timestamp(&self) -> Option<i64> {
        self.ts.last().copied()
    }

    /// Feed every event, classified by `dfa`; `snap(T)` is taken before the first event later
    /// than each evaluation time T, so it covers every event with timestamp <= T, and the
    /// rest after the batch.
    pub fn run<S, Row>(
        &self,
        state: &mut S,
        dfa: &Dfa,
        mut on_event: impl FnMut(&mut S, Raw) -> Result<(), Error>,
        snap: impl Fn(&S, i64) -> Row,
    ) -> Result<Vec<Row>, Error> {
        let mut rows = Vec::with_capacity(self.evals.len());
        let mut next_eval = 0;
        for (i, &byte) in self.chars.iter().enumerate() {
            let t = self.ts[i];
            while next_eval < self.evals.len() && self.evals[next_eval] < t {
                rows.push(snap(state, self.evals[next_eval]));
                next_eval += 1;
            }
            let v = self.vals.map_or(1, |v| v[i] as u64);
            on_event(state, Raw::classify(dfa, byte, t, v))?;
        }
        for &e in &self.evals[next_eval..] {
            rows.push(snap(state, e));
        }
        Ok(rows)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refuses_before_processing_anything() {
        let bad = |c: &[u8], t: &[i64], v: Option<&[i64]>, e: &[i64], last| Batch::new(c, t, v, e, last).err().unwrap().to_string();
        assert!(bad(b"ab", &[1], None, &[], None).contains("2 characters but 1 timestamps"));
        assert!(bad(b"ab", &[1, 2], Some(&[1, -3]), &[], None).contains("event 1: value -3"));
        assert!(bad(b"ab", &[2, 1], None, &[], None).contains("event 1: timestamp 1"));
        assert!(bad(b"a", &[5], None, &[], Some(7)).contains("event 0: timestamp 5"));
        assert!(bad(b"a", &[5], None, &[3, 1], None).contains("increasing order"));
        assert!(bad(b"a", &[9], None, &[4], Some(5)).contains("evaluation time 4 is earlier"));
        assert!(Batch::new(b"a", &[9], None, &[5], Some(5)).is_ok());
    }

    #[test]
    fn snapshots_cover_events_up_to_their_time() {
        let dfa = crate::automaton::dfa::tests::negation(); // letters abcd, negated eg
        let b = Batch::new(b"axge", &[1, 2, 3, 3], None, &[0, 2, 9], None).unwrap();
        let mut seen = Vec::new();
        let rows = b
            .run(
                &mut seen,
                &dfa,
                |s, raw| {
                    s.push(raw);
                    Ok(())
                },
                |s, t| (t, s.len()),
            )
            .unwrap();
        assert_eq!(rows, vec![(0, 0), (2, 2), (9, 4)]);
        assert_eq!(seen, vec![Raw::Element(Ev { sym: 0, t: 1, v: 1, gap: 0 }), Raw::Gap(GAP_BREAK), Raw::Gap(2 | GAP_BREAK), Raw::Gap(1 | GAP_BREAK)]);
    }
}
