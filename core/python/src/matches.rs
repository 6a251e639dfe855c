//! Matches as output (`suse._core.MatchSet`): every match once, lazily, and uniform samples,
//! over a stream's events or a summary's retained elements.
use crate::{guard_ro, policy, PyDfa};
use numpy::PyReadonlyArray1;
use pyo3::prelude::*;
use std::sync::Arc;
use suse_kernel::exact::approx::CostLabels;
use suse_kernel::engine::batch::{Batch, Raw};
use suse_kernel::engine::error::Error;
use suse_kernel::engine::limits::DEFAULT_MAX_BYTES;
use suse_kernel::matches::{Cursor, Match, MatchSet as KMatchSet};
use suse_kernel::automaton::semantics::Ev;

/// One match for Python: its positions and, for an approximate query, its missing letters.
type PyMatch = (Vec<u64>, Option<u8>);

#[pyclass(name = "MatchSet", module = "suse._core", frozen)]
pub struct MatchSet {
    inner: Arc<KMatchSet>,
    /// Per element, the position reported for it (its index in the input).
    positions: Vec<u64>,
    labels: Option<Arc<CostLabels>>,
}

impl MatchSet {
    /// The matches of `elems` (gaps filled in); `positions[i]` names element `i`; `pending`:
    /// the pending states of a negation at the end of the pattern.
    pub(crate) fn build(dfa: &PyDfa, window: i64, policy_name: &str, elems: Vec<Ev>, positions: Vec<u64>, pending: Option<&[u32]>) -> Result<MatchSet, Error> {
        // The search table holds |Z| indices per element.
        let bytes = (elems.len() as u64 + 1).saturating_mul(dfa.inner.n as u64).saturating_mul(4).saturating_add(elems.len() as u64 * 40);
        if bytes > DEFAULT_MAX_BYTES {
            return Err(Error::Limit(format!(
                "listing the matches of {} elements over an automaton of {} states needs about {} MiB, above the limit of {} MiB",
                elems.len(),
                dfa.inner.n,
                bytes >> 20,
                DEFAULT_MAX_BYTES >> 20
            )));
        }
        let inner = KMatchSet::with_closing(dfa.inner.clone(), window, policy(policy_name)?, elems, pending)?;
        Ok(MatchSet { inner: Arc::new(inner), positions, labels: dfa.labels.clone() })
    }

    fn convert(&self, m: Match) -> PyMatch {
        let at = m.elements.iter().map(|&e| self.positions[e as usize]).collect();
        (at, self.labels.as_ref().map(|l| l.label(m.state as usize)))
    }
}

#[pymethods]
impl MatchSet {
    /// The matches of a stream: characters, timestamps (not decreasing); positions are the
    /// events' indices. With a negation at the end of the pattern, `dfa` is the exact
    /// engine's automaton for it and `pending` its pending states.
    #[staticmethod]
    #[pyo3(signature = (dfa, window, policy_name, chars, timestamps, pending=None))]
    fn over_events(py: Python<'_>, dfa: &PyDfa, window: i64, policy_name: &str, chars: &[u8], timestamps: PyReadonlyArray1<'_, i64>, pending: Option<Vec<u32>>) -> PyResult<Self> {
        let ts = timestamps.as_array().to_vec();
        py.allow_threads(|| {
            guard_ro(|| {
                let batch = Batch::new(chars, &ts, None, &[], None)?;
                let (mut elems, mut positions, mut gap, mut at) = (Vec::new(), Vec::new(), 0u32, 0u64);
                batch.run(
                    &mut (),
                    &dfa.inner,
                    |_, raw| {
                        match raw {
                            Raw::Element(ev) => {
                                elems.push(Ev { gap: std::mem::take(&mut gap), ..ev });
                                positions.push(at);
                            }
                            Raw::Gap(bit) => gap |= bit,
                        }
                        at += 1;
                        Ok(())
                    },
                    |_, _| (),
                )?;
                MatchSet::build(dfa, window, policy_name, elems, positions, pending.as_deref())
            })
        })
    }

    /// A cursor over the matches in order (by first element, then second, ...); with
    /// `containing`, only the matches through that element (an index of this set's elements).
    #[pyo3(signature = (containing=None))]
    fn cursor(slf: &Bound<'_, Self>, containing: Option<u32>) -> PyResult<MatchCursor> {
        let me = slf.get();
        let cursor = guard_ro(|| me.inner.cursor(containing))?;
        Ok(MatchCursor { set: slf.clone().unbind(), cursor })
    }

    /// `k` matches drawn uniformly at random with replacement (seeded), in the order drawn.
    fn sample(&self, py: Python<'_>, k: usize, seed: u64) -> PyResult<Vec<PyMatch>> {
        let drawn = py.allow_threads(|| guard_ro(|| self.inner.sample(k, seed)))?;
        Ok(drawn.into_iter().map(|m| self.convert(m)).collect())
    }

    /// The number of matches, exactly.
    fn count(&self, py: Python<'_>) -> PyResult<num_bigint::BigUint> {
        py.allow_threads(|| guard_ro(|| self.inner.count()))
    }

    fn __len__(&self) -> usize {
        self.inner.len()
    }
}

/// Where an enumeration stands.
#[pyclass(name = "MatchCursor", module = "suse._core")]
pub struct MatchCursor {
    set: Py<MatchSet>,
    cursor: Cursor,
}

#[pymethods]
impl MatchCursor {
    /// Search steps taken so far (frames visited): the delay bound counts these.
    #[getter]
    fn steps(&self) -> u64 {
        self.cursor.steps()
    }

    /// Up to `n` next matches (fewer only at the end).
    fn next_batch(&mut self, py: Python<'_>, n: usize) -> PyResult<Vec<PyMatch>> {
        let set = self.set.get();
        let cursor = &mut self.cursor;
        let found = py.allow_threads(|| {
            guard_ro(|| {
                let mut out = Vec::with_capacity(n.min(4096));
                while out.len() < n {
                    match cursor.next(&set.inner) {
                        Some(m) => out.push(m),
                        None => break,
                    }
                }
                Ok(out)
            })
        })?;
        Ok(found.into_iter().map(|m| set.convert(m)).collect())
    }
}

/// The matches among a summary's retained elements (positions: their indices).
pub(crate) fn over_elements(dfa: &PyDfa, window: i64, policy_name: &str, elems: &[Ev]) -> PyResult<MatchSet> {
    guard_ro(|| MatchSet::build(dfa, window, policy_name, elems.to_vec(), (0..elems.len() as u64).collect(), None))
}
