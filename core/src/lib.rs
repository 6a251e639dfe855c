//! Native counting kernel of suse, exposed to Python through PyO3.
mod benefit;
mod dfa;
mod num;
mod summary;
mod window;

use benefit::Policy;
use dfa::{Dfa, UNKNOWN};
use num_bigint::BigUint;
use numpy::PyReadonlyArray1;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyBytes;
use std::sync::Arc;
use summary::{Aggregate, Config, Strategy, Summary};
use window::{per_initiator_totals, split_totals, AnyMatch, Ev, NextMatch, Promoting};

const FORMAT_VERSION: u8 = 1;

fn input_error(py: Python<'_>, msg: String) -> PyErr {
    match py.import("suse.errors").and_then(|m| m.getattr("InputError")) {
        Ok(cls) => PyErr::from_value(cls.call1((msg,)).unwrap_or_else(|e| e.into_value(py).into_bound(py).into_any())),
        Err(_) => PyValueError::new_err(msg),
    }
}

#[pyclass(name = "Dfa", module = "suse._core", frozen)]
#[derive(Clone)]
struct PyDfa {
    inner: Arc<Dfa>,
}

#[pymethods]
impl PyDfa {
    #[new]
    fn new(n_states: usize, alphabet: &str, finals: Vec<bool>, table: Vec<i64>) -> PyResult<Self> {
        if !alphabet.is_ascii() {
            return Err(PyValueError::new_err("alphabet must be ASCII"));
        }
        Dfa::new(n_states, alphabet.as_bytes().to_vec(), finals, table)
            .map(|d| PyDfa { inner: Arc::new(d) })
            .map_err(PyValueError::new_err)
    }
}

/// A validated batch: every check happens before the first element is processed.
struct Batch<'a> {
    chars: &'a [u8],
    ts: Vec<i64>,
    vals: Option<Vec<i64>>,
    evals: Vec<i64>,
}

impl<'a> Batch<'a> {
    fn new(
        py: Python<'_>,
        chars: &'a [u8],
        ts: PyReadonlyArray1<'_, i64>,
        vals: Option<PyReadonlyArray1<'_, i64>>,
        evals: Option<PyReadonlyArray1<'_, i64>>,
        last_t: Option<i64>,
    ) -> PyResult<Self> {
        let ts = ts.as_array().to_vec();
        if ts.len() != chars.len() {
            return Err(input_error(py, format!("{} characters but {} timestamps", chars.len(), ts.len())));
        }
        let vals = vals.map(|v| v.as_array().to_vec());
        if let Some(v) = &vals {
            if v.len() != chars.len() {
                return Err(input_error(py, format!("{} characters but {} values", chars.len(), v.len())));
            }
            if let Some(i) = v.iter().position(|&x| x < 0) {
                return Err(input_error(py, format!("event {i}: value {} is negative; values must be non-negative integers", v[i])));
            }
        }
        let mut prev = last_t;
        for (i, &t) in ts.iter().enumerate() {
            if let Some(p) = prev {
                if t < p {
                    return Err(input_error(py, format!("event {i}: timestamp {t} is earlier than the previous timestamp {p}; timestamps must not decrease")));
                }
            }
            prev = Some(t);
        }
        let mut evals = evals.map(|e| e.as_array().to_vec()).unwrap_or_default();
        evals.sort_unstable();
        Ok(Batch { chars, ts, vals, evals })
    }

    /// Feed every event; `snap(T)` is taken before the first event later than each evaluation
    /// time T (so it covers all events with timestamp <= T), the rest after the batch.
    fn run<S, Row>(&self, state: &mut S, lookup: &[u8], on_event: impl Fn(&mut S, Option<Ev>), snap: impl Fn(&S, i64) -> Row) -> Vec<Row> {
        let mut rows = Vec::with_capacity(self.evals.len());
        let mut next_eval = 0;
        for i in 0..self.chars.len() {
            let t = self.ts[i];
            while next_eval < self.evals.len() && self.evals[next_eval] < t {
                rows.push(snap(state, self.evals[next_eval]));
                next_eval += 1;
            }
            let sym = lookup[self.chars[i] as usize];
            let v = self.vals.as_ref().map_or(1, |v| v[i] as u64);
            on_event(state, if sym == UNKNOWN { None } else { Some(Ev { sym, t, v }) });
        }
        for &e in &self.evals[next_eval..] {
            rows.push(snap(state, e));
        }
        rows
    }
}

fn parse_policy(policy: &str) -> PyResult<Policy> {
    match policy {
        "any" => Ok(Policy::Any),
        "next" => Ok(Policy::Next),
        _ => Err(PyValueError::new_err(format!("unknown policy {policy:?}"))),
    }
}

#[derive(Clone)]
enum Engine {
    Any(Promoting<AnyMatch>),
    Next(Promoting<NextMatch>),
}

type Totals = (BigUint, BigUint, BigUint);
/// A `(count, sum)` pair as handed to Python.
type Pair<T> = (T, T);

/// Exact aggregation over a whole stream (the ground truth).
#[pyclass(name = "ExactEngine", module = "suse._core")]
struct ExactEngine {
    engine: Engine,
    last_t: Option<i64>,
    events: u64,
    skipped: u64,
}

impl ExactEngine {
    fn totals(&self) -> Totals {
        let (dfa, totals) = match &self.engine {
            Engine::Any(p) => (p.dfa(), p.totals_big()),
            Engine::Next(p) => (p.dfa(), p.totals_big()),
        };
        split_totals(dfa, &totals)
    }
}

#[pymethods]
impl ExactEngine {
    #[new]
    fn new(dfa: &PyDfa, window: i64, policy: &str) -> PyResult<Self> {
        let engine = match parse_policy(policy)? {
            Policy::Any => Engine::Any(Promoting::new(dfa.inner.clone(), window)),
            Policy::Next => Engine::Next(Promoting::new(dfa.inner.clone(), window)),
        };
        Ok(ExactEngine { engine, last_t: None, events: 0, skipped: 0 })
    }

    /// Process a batch; returns `(T, count, sum, partial_count)` per evaluation time.
    #[pyo3(signature = (chars, timestamps, values=None, evaluate_at=None))]
    fn extend(
        &mut self,
        py: Python<'_>,
        chars: &[u8],
        timestamps: PyReadonlyArray1<'_, i64>,
        values: Option<PyReadonlyArray1<'_, i64>>,
        evaluate_at: Option<PyReadonlyArray1<'_, i64>>,
    ) -> PyResult<Vec<(i64, BigUint, BigUint, BigUint)>> {
        let batch = Batch::new(py, chars, timestamps, values, evaluate_at, self.last_t)?;
        let lookup = match &self.engine {
            Engine::Any(p) => p.dfa().lookup.clone(),
            Engine::Next(p) => p.dfa().lookup.clone(),
        };
        let rows = py.allow_threads(|| {
            batch.run(
                &mut *self,
                &lookup,
                |me, ev| {
                    me.events += 1;
                    match ev {
                        None => me.skipped += 1,
                        Some(ev) => match &mut me.engine {
                            Engine::Any(p) => p.push(ev),
                            Engine::Next(p) => p.push(ev),
                        },
                    }
                },
                |me, t| {
                    let (c, s, p) = me.totals();
                    (t, c, s, p)
                },
            )
        });
        if let Some(&t) = batch.ts.last() {
            self.last_t = Some(t);
        }
        Ok(rows)
    }

    /// `(count, sum, partial_count)` over everything processed.
    fn totals_py(&self) -> Totals {
        self.totals()
    }

    #[getter]
    fn events(&self) -> u64 {
        self.events
    }

    #[getter]
    fn skipped(&self) -> u64 {
        self.skipped
    }

    #[getter]
    fn is_big(&self) -> bool {
        match &self.engine {
            Engine::Any(p) => p.is_big(),
            Engine::Next(p) => p.is_big(),
        }
    }
}

type Elements = Vec<(char, i64, u64)>;
type SummaryRow = (i64, BigUint, BigUint, BigUint, BigUint, BigUint, Option<Elements>);

/// The bounded state summary with summary selection.
#[pyclass(name = "SummaryEngine", module = "suse._core")]
struct SummaryEngine {
    inner: Summary,
    last_t: Option<i64>,
}

impl SummaryEngine {
    fn row(&self, t: i64, with_elements: bool) -> SummaryRow {
        let r = self.inner.readout();
        let (c, s, p) = split_totals(&self.inner.dfa, &r.g);
        (t, c, s, p, r.detected.c, r.detected.s, with_elements.then(|| self.elements()))
    }
}

#[pymethods]
impl SummaryEngine {
    #[new]
    #[pyo3(signature = (dfa, window, size, strategy, aggregate, policy, probabilities, seed, time_to_live))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        dfa: &PyDfa,
        window: i64,
        size: usize,
        strategy: &str,
        aggregate: &str,
        policy: &str,
        probabilities: Option<Vec<f64>>,
        seed: u64,
        time_to_live: Option<i64>,
    ) -> PyResult<Self> {
        let strategy = match strategy {
            "suse" => Strategy::Suse,
            "present" => Strategy::Present,
            "fifo" => Strategy::Fifo,
            "random" => Strategy::Random,
            s => return Err(PyValueError::new_err(format!("unknown strategy {s:?}"))),
        };
        let aggregate = match aggregate {
            "count" => Aggregate::Count,
            "sum" => Aggregate::Sum,
            "avg" => Aggregate::Avg,
            s => return Err(PyValueError::new_err(format!("unknown aggregate {s:?}"))),
        };
        let cfg = Config { size, tau: window, strategy, aggregate, policy: parse_policy(policy)?, time_to_live };
        Ok(SummaryEngine { inner: Summary::new(dfa.inner.clone(), cfg, probabilities, seed), last_t: None })
    }

    /// Process a batch; returns `(T, count, sum, partial, detected_count, detected_sum,
    /// elements or None)` rows, the retained elements at T when `with_elements`.
    #[pyo3(signature = (chars, timestamps, values=None, evaluate_at=None, with_elements=false))]
    fn extend(
        &mut self,
        py: Python<'_>,
        chars: &[u8],
        timestamps: PyReadonlyArray1<'_, i64>,
        values: Option<PyReadonlyArray1<'_, i64>>,
        evaluate_at: Option<PyReadonlyArray1<'_, i64>>,
        with_elements: bool,
    ) -> PyResult<Vec<SummaryRow>> {
        let batch = Batch::new(py, chars, timestamps, values, evaluate_at, self.last_t)?;
        let lookup = self.inner.dfa.lookup.clone();
        let rows = py.allow_threads(|| {
            batch.run(
                &mut *self,
                &lookup,
                |me, ev| {
                    match ev {
                        None => {
                            me.inner.events += 1;
                            me.inner.skipped += 1;
                        }
                        Some(ev) => me.inner.observe(ev),
                    }
                },
                |me, t| me.row(t, with_elements),
            )
        });
        if let Some(&t) = batch.ts.last() {
            self.last_t = Some(t);
        }
        Ok(rows)
    }

    fn result(&self) -> SummaryRow {
        self.row(self.inner.now.unwrap_or(0), false)
    }

    fn elements(&self) -> Elements {
        self.inner.elems.iter().map(|e| (self.inner.dfa.alphabet[e.sym as usize] as char, e.t, e.v)).collect()
    }

    fn __len__(&self) -> usize {
        self.inner.elems.len()
    }

    #[getter]
    fn events(&self) -> u64 {
        self.inner.events
    }

    #[getter]
    fn skipped(&self) -> u64 {
        self.inner.skipped
    }

    #[getter]
    fn is_big(&self) -> bool {
        self.inner.is_big()
    }

    #[getter]
    fn evictions(&self) -> u64 {
        self.inner.evictions
    }

    #[getter]
    fn last_timestamp(&self) -> Option<i64> {
        self.last_t
    }

    fn to_bytes<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyBytes>> {
        let mut out = vec![FORMAT_VERSION];
        bincode::serialize_into(&mut out, &(&self.inner, self.last_t))
            .map_err(|e| PyValueError::new_err(format!("cannot serialise summary: {e}")))?;
        Ok(PyBytes::new(py, &out))
    }

    #[staticmethod]
    fn from_bytes(py: Python<'_>, data: &[u8]) -> PyResult<Self> {
        match data.split_first() {
            Some((&FORMAT_VERSION, rest)) => {
                let (inner, last_t): (Summary, Option<i64>) = bincode::deserialize(rest)
                    .map_err(|e| input_error(py, format!("corrupt summary bytes: {e}")))?;
                Ok(SummaryEngine { inner, last_t })
            }
            Some((v, _)) => Err(input_error(py, format!("summary bytes have format version {v}, expected {FORMAT_VERSION}"))),
            None => Err(input_error(py, "empty summary bytes".into())),
        }
    }

    // ---- inspection hooks for tests ----

    /// Float estimates used for selection: (present benefit per element, active local rows).
    fn _estimates(&mut self) -> (Vec<Pair<f64>>, Vec<Vec<Pair<f64>>>) {
        let (p, a) = self.inner.estimates();
        (p.iter().map(|d| (d.c, d.s)).collect(), a.iter().map(|r| r.iter().map(|d| (d.c, d.s)).collect()).collect())
    }

    /// Exact complete matches containing each element, by recomputation.
    fn _exact_locals(&self) -> Vec<(BigUint, BigUint)> {
        self.inner.exact_locals().into_iter().map(|d| (d.c, d.s)).collect()
    }

    /// Exact active global counters as maintained, and as recomputed from the elements.
    fn _active_counters(&self) -> (Vec<Pair<BigUint>>, Vec<Pair<BigUint>>) {
        let conv = |v: Vec<num::Dual<BigUint>>| v.into_iter().map(|d| (d.c, d.s)).collect();
        (conv(self.inner.exact_active()), conv(self.inner.rebuild_check()))
    }

    fn _active_start(&self) -> usize {
        self.inner.active_start()
    }
}

/// Benchmark baseline: exact totals with per-initiator counters (u128 only; None on overflow).
#[pyfunction]
fn per_initiator_exact(dfa: &PyDfa, window: i64, chars: &[u8], timestamps: PyReadonlyArray1<'_, i64>) -> Option<Totals> {
    let ts = timestamps.as_array();
    let events: Vec<Ev> = chars
        .iter()
        .zip(ts.iter())
        .filter_map(|(&c, &t)| {
            let sym = dfa.inner.lookup[c as usize];
            (sym != UNKNOWN).then_some(Ev { sym, t, v: 1 })
        })
        .collect();
    let totals = per_initiator_totals(&dfa.inner, window, &events)?;
    let big: Vec<_> = totals.iter().map(|d| d.to_big()).collect();
    Some(split_totals(&dfa.inner, &big))
}

#[pymodule]
fn _core(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(per_initiator_exact, m)?)?;
    m.add_class::<PyDfa>()?;
    m.add_class::<ExactEngine>()?;
    m.add_class::<SummaryEngine>()?;
    Ok(())
}
