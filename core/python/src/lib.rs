//! Python bindings of the suse kernel (`suse._core`): conversion and error mapping only.
//!
//! Every entry point runs inside [`guard`]: kernel errors become the package's exception
//! types, and a panic (a bug) becomes `suse.InternalError` and retires the object, so
//! nothing reaches Python as a `PanicException` or takes the interpreter down.
use num_bigint::BigUint;
use numpy::PyReadonlyArray1;
use pyo3::prelude::*;
use pyo3::types::PyBytes;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Arc;
use suse_kernel::batch::{Batch, Raw};
use suse_kernel::dfa::{Dfa, DfaSpec, GAP_BREAK, UNKNOWN};
use suse_kernel::engine::{ExactEngine as KExact, SummaryEngine as KSummary};
use suse_kernel::error::Error;
use suse_kernel::limits::{Limits, DEFAULT_MAX_BYTES};
use suse_kernel::multi::{Merge, MultiExact as KMulti};
use suse_kernel::semantics::{Ev, Policy};
use suse_kernel::state::{self, Saved, FORMAT_VERSION};
use suse_kernel::summary::selection::StrategyKind;
use suse_kernel::summary::{Aggregate, Config};
use suse_kernel::window::{per_initiator_totals, split_totals};

pyo3::import_exception!(suse.errors, InputError);
pyo3::import_exception!(suse.errors, StateError);
pyo3::import_exception!(suse.errors, LimitError);
pyo3::import_exception!(suse.errors, InternalError);

fn to_py(e: Error) -> PyErr {
    match e {
        Error::Input(m) => InputError::new_err(m),
        Error::State(m) => StateError::new_err(m),
        Error::Limit(m) => LimitError::new_err(m),
        Error::Internal(m) => InternalError::new_err(format!("internal error in the suse kernel: {m}; this is a bug, please report it")),
    }
}

/// Run `f`, mapping kernel errors and panics; `dead` is set when the object may be left
/// half-changed (a panic or an internal error), and checked first.
fn guard<T>(dead: &mut Option<String>, f: impl FnOnce() -> Result<T, Error>) -> PyResult<T> {
    if let Some(why) = dead {
        return Err(InternalError::new_err(format!("this engine stopped after an internal error ({why}); create a new one")));
    }
    let outcome = catch_unwind(AssertUnwindSafe(f)).unwrap_or_else(|panic| {
        let msg = panic.downcast_ref::<&str>().map(|s| s.to_string()).or_else(|| panic.downcast_ref::<String>().cloned()).unwrap_or_default();
        Err(Error::Internal(format!("panic: {msg}")))
    });
    outcome.map_err(|e| {
        if let Error::Internal(m) = &e {
            *dead = Some(m.clone());
        }
        to_py(e)
    })
}

/// A read-only call: errors map the same way, nothing can be left half-changed.
fn guard_ro<T>(f: impl FnOnce() -> Result<T, Error>) -> PyResult<T> {
    guard(&mut None, f)
}

fn policy(name: &str) -> Result<Policy, Error> {
    Policy::parse(name).ok_or_else(|| Error::input(format!("policy must be one of {}; got {name:?}", Policy::NAMES.join(", "))))
}

fn limits(memory_limit: Option<u64>) -> Limits {
    Limits { max_bytes: memory_limit.unwrap_or(DEFAULT_MAX_BYTES) }
}

#[pyclass(name = "Dfa", module = "suse._core", frozen)]
#[derive(Clone)]
struct PyDfa {
    inner: Arc<Dfa>,
}

#[pymethods]
impl PyDfa {
    #[new]
    #[pyo3(signature = (n_states, alphabet, negated, start, finals, table))]
    fn new(n_states: usize, alphabet: &str, negated: &str, start: u32, finals: Vec<bool>, table: Vec<i64>) -> PyResult<Self> {
        guard_ro(|| {
            if !alphabet.is_ascii() || !negated.is_ascii() {
                return Err(Error::input("alphabet must be ASCII"));
            }
            let spec = DfaSpec { n: n_states, alphabet: alphabet.as_bytes().to_vec(), negated: negated.as_bytes().to_vec(), start, finals, table };
            Dfa::new(spec).map(|d| PyDfa { inner: Arc::new(d) }).map_err(Error::Input)
        })
    }

    #[getter]
    fn n_states(&self) -> usize {
        self.inner.n
    }
}

/// The aggregate at an evaluation time, with named fields.
#[pyclass(name = "Evaluation", module = "suse._core", frozen, get_all)]
struct NativeEvaluation {
    timestamp: i64,
    count: BigUint,
    sum: BigUint,
    partial_count: BigUint,
    detected_count: Option<BigUint>,
    detected_sum: Option<BigUint>,
    elements: Option<Vec<(char, i64, u64)>>,
}

/// A summary's configuration as the kernel holds it (what a saved state is checked against).
#[pyclass(name = "SummaryConfig", module = "suse._core", frozen, get_all)]
struct NativeConfig {
    window: i64,
    size: usize,
    strategy: &'static str,
    aggregate: &'static str,
    policy: &'static str,
    time_to_live: Option<i64>,
    seed: u64,
    probabilities: Option<Vec<f64>>,
}

/// `(count, sum, partial count)` over everything processed, with named fields.
#[pyclass(name = "Totals", module = "suse._core", frozen, get_all)]
struct NativeTotals {
    count: BigUint,
    sum: BigUint,
    partial_count: BigUint,
}

fn array(a: &Option<PyReadonlyArray1<'_, i64>>) -> Option<Vec<i64>> {
    a.as_ref().map(|x| x.as_array().to_vec())
}

/// The arrays of one `extend` call.
struct Arrays {
    ts: Vec<i64>,
    vals: Option<Vec<i64>>,
    evals: Vec<i64>,
}

impl Arrays {
    fn new(ts: PyReadonlyArray1<'_, i64>, vals: Option<PyReadonlyArray1<'_, i64>>, evals: Option<PyReadonlyArray1<'_, i64>>) -> Self {
        Arrays { ts: ts.as_array().to_vec(), vals: array(&vals), evals: array(&evals).unwrap_or_default() }
    }

    /// Validate and run a batch over `state` without the GIL, under the panic guard, and
    /// advance `last_t` when it succeeds.
    #[allow(clippy::too_many_arguments)]
    fn run<S: Send, Row: Send>(
        &self,
        py: Python<'_>,
        chars: &[u8],
        dead: &mut Option<String>,
        last_t: &mut Option<i64>,
        dfa: &Dfa,
        state: &mut S,
        on_event: impl FnMut(&mut S, Raw) -> Result<(), Error> + Send,
        snap: impl Fn(&S, i64) -> Row + Send + Sync,
    ) -> PyResult<Vec<Row>> {
        py.allow_threads(|| {
            guard(dead, || {
                let batch = Batch::new(chars, &self.ts, self.vals.as_deref(), &self.evals, *last_t)?;
                let rows = batch.run(state, dfa, on_event, snap)?;
                if let Some(t) = batch.last_timestamp() {
                    *last_t = Some(t);
                }
                Ok(rows)
            })
        })
    }
}

/// What the exact engine counts beside its totals.
struct ExactState {
    engine: KExact,
    events: u64,
    skipped: u64,
}

/// Two lists of `(count, sum)` pairs.
type PairLists = (Vec<(BigUint, BigUint)>, Vec<(BigUint, BigUint)>);

/// Exact aggregation over a whole stream (the ground truth).
#[pyclass(name = "ExactEngine", module = "suse._core")]
struct ExactEngine {
    state: ExactState,
    last_t: Option<i64>,
    dead: Option<String>,
}

#[pymethods]
impl ExactEngine {
    #[new]
    #[pyo3(signature = (dfa, window, policy_name, memory_limit=None))]
    fn new(dfa: &PyDfa, window: i64, policy_name: &str, memory_limit: Option<u64>) -> PyResult<Self> {
        guard_ro(|| {
            let engine = KExact::new(dfa.inner.clone(), window, policy(policy_name)?, &limits(memory_limit))?;
            Ok(ExactEngine { state: ExactState { engine, events: 0, skipped: 0 }, last_t: None, dead: None })
        })
    }

    /// Process a batch; one evaluation per time in `evaluate_at` (increasing).
    #[pyo3(signature = (chars, timestamps, values=None, evaluate_at=None))]
    fn extend(
        &mut self,
        py: Python<'_>,
        chars: &[u8],
        timestamps: PyReadonlyArray1<'_, i64>,
        values: Option<PyReadonlyArray1<'_, i64>>,
        evaluate_at: Option<PyReadonlyArray1<'_, i64>>,
    ) -> PyResult<Vec<NativeEvaluation>> {
        let dfa = self.state.engine.dfa().clone();
        Arrays::new(timestamps, values, evaluate_at).run(
            py,
            chars,
            &mut self.dead,
            &mut self.last_t,
            &dfa,
            &mut self.state,
            |me, raw| {
                me.events += 1;
                if raw == Raw::Gap(GAP_BREAK) {
                    me.skipped += 1;
                }
                me.engine.feed(raw)
            },
            |me, t| {
                let (count, sum, partial_count) = me.engine.totals();
                NativeEvaluation { timestamp: t, count, sum, partial_count, detected_count: None, detected_sum: None, elements: None }
            },
        )
    }

    fn totals(&self) -> NativeTotals {
        let (count, sum, partial_count) = self.state.engine.totals();
        NativeTotals { count, sum, partial_count }
    }

    #[getter]
    fn events(&self) -> u64 {
        self.state.events
    }

    #[getter]
    fn skipped(&self) -> u64 {
        self.state.skipped
    }

    #[getter]
    fn tier(&self) -> &'static str {
        self.state.engine.tier()
    }

    #[getter]
    fn is_big(&self) -> bool {
        self.state.engine.tier() != "u128"
    }

    #[getter]
    fn last_timestamp(&self) -> Option<i64> {
        self.last_t
    }
}

/// Several exact queries over one stream: one validated batch feeds every distinct engine.
#[pyclass(name = "MultiExactEngine", module = "suse._core")]
struct MultiExactEngine {
    inner: KMulti,
    dead: Option<String>,
}

#[pymethods]
impl MultiExactEngine {
    /// `queries`: `(dfa, window, policy)` per query, in the caller's order.
    #[new]
    #[pyo3(signature = (queries, memory_limit=None, merge="auto"))]
    fn new(queries: Vec<(PyRef<'_, PyDfa>, i64, String)>, memory_limit: Option<u64>, merge: &str) -> PyResult<Self> {
        guard_ro(|| {
            let qs = queries.iter().map(|(d, w, p)| Ok((d.inner.clone(), *w, policy(p)?))).collect::<Result<Vec<_>, Error>>()?;
            let merge = Merge::parse(merge).ok_or_else(|| Error::input(format!("merge must be one of {}; got {merge:?}", Merge::NAMES.join(", "))))?;
            Ok(MultiExactEngine { inner: KMulti::new(&qs, &limits(memory_limit), merge)?, dead: None })
        })
    }

    /// Process a batch; per query, one evaluation per time in `evaluate_at` (increasing).
    #[pyo3(signature = (chars, timestamps, values=None, evaluate_at=None))]
    fn extend(
        &mut self,
        py: Python<'_>,
        chars: &[u8],
        timestamps: PyReadonlyArray1<'_, i64>,
        values: Option<PyReadonlyArray1<'_, i64>>,
        evaluate_at: Option<PyReadonlyArray1<'_, i64>>,
    ) -> PyResult<Vec<Vec<NativeEvaluation>>> {
        let a = Arrays::new(timestamps, values, evaluate_at);
        let inner = &mut self.inner;
        let rows = py.allow_threads(|| guard(&mut self.dead, || inner.extend(chars, &a.ts, a.vals.as_deref(), &a.evals)))?;
        Ok(rows
            .into_iter()
            .map(|q| {
                q.into_iter()
                    .map(|(timestamp, (count, sum, partial_count))| NativeEvaluation {
                        timestamp,
                        count,
                        sum,
                        partial_count,
                        detected_count: None,
                        detected_sum: None,
                        elements: None,
                    })
                    .collect()
            })
            .collect())
    }

    /// Totals of query `i` (its position in the constructor's list).
    fn totals(&self, i: usize) -> PyResult<NativeTotals> {
        self.check(i)?;
        let (count, sum, partial_count) = self.inner.totals(i);
        Ok(NativeTotals { count, sum, partial_count })
    }

    fn skipped(&self, i: usize) -> PyResult<u64> {
        self.check(i)?;
        Ok(self.inner.skipped(i))
    }

    fn tier(&self, i: usize) -> PyResult<&'static str> {
        self.check(i)?;
        Ok(self.inner.tier(i))
    }

    /// Distinct engines: queries that count the same sets share one.
    #[getter]
    fn engines(&self) -> usize {
        self.inner.engines()
    }

    /// Engines that run a merged (product) automaton.
    #[getter]
    fn merged(&self) -> usize {
        self.inner.merged()
    }

    #[getter]
    fn events(&self) -> u64 {
        self.inner.events()
    }

    #[getter]
    fn last_timestamp(&self) -> Option<i64> {
        self.inner.last_timestamp()
    }
}

impl MultiExactEngine {
    fn check(&self, i: usize) -> PyResult<()> {
        if i >= self.inner.queries() {
            return Err(InputError::new_err(format!("query {i} out of range: this set has {} queries", self.inner.queries())));
        }
        Ok(())
    }
}

/// The bounded state summary with summary selection.
#[pyclass(name = "SummaryEngine", module = "suse._core")]
struct SummaryEngine {
    inner: KSummary,
    last_t: Option<i64>,
    dead: Option<String>,
}

fn evaluation(s: &KSummary, t: i64, with_elements: bool) -> NativeEvaluation {
    let r = s.readout();
    let (count, sum, partial_count) = split_totals(s.dfa(), &r.g);
    NativeEvaluation {
        timestamp: t,
        count,
        sum,
        partial_count,
        detected_count: Some(r.detected.c),
        detected_sum: Some(r.detected.s),
        elements: with_elements.then(|| element_list(s)),
    }
}

fn element_list(s: &KSummary) -> Vec<(char, i64, u64)> {
    let alphabet = &s.dfa().alphabet;
    s.elements().iter().map(|e: &Ev| (alphabet[e.sym as usize] as char, e.t, e.v)).collect()
}

#[pymethods]
impl SummaryEngine {
    #[new]
    #[pyo3(signature = (dfa, window, size, strategy, aggregate, policy_name, probabilities, seed, time_to_live, memory_limit=None))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        dfa: &PyDfa,
        window: i64,
        size: usize,
        strategy: &str,
        aggregate: &str,
        policy_name: &str,
        probabilities: Option<Vec<f64>>,
        seed: u64,
        time_to_live: Option<i64>,
        memory_limit: Option<u64>,
    ) -> PyResult<Self> {
        guard_ro(|| {
            let strategy = StrategyKind::parse(strategy)
                .ok_or_else(|| Error::input(format!("strategy must be one of {}; got {strategy:?}", StrategyKind::NAMES.join(", "))))?;
            let aggregate = Aggregate::parse(aggregate)
                .ok_or_else(|| Error::input(format!("aggregate must be one of {}; got {aggregate:?}", Aggregate::NAMES.join(", "))))?;
            let cfg = Config { size, tau: window, strategy, aggregate, time_to_live, probabilities, seed };
            let inner = KSummary::new(dfa.inner.clone(), policy(policy_name)?, cfg, &limits(memory_limit))?;
            Ok(SummaryEngine { inner, last_t: None, dead: None })
        })
    }

    /// Process a batch; one evaluation per time in `evaluate_at` (increasing), with the
    /// retained elements at that time when `with_elements`.
    #[pyo3(signature = (chars, timestamps, values=None, evaluate_at=None, with_elements=false))]
    fn extend(
        &mut self,
        py: Python<'_>,
        chars: &[u8],
        timestamps: PyReadonlyArray1<'_, i64>,
        values: Option<PyReadonlyArray1<'_, i64>>,
        evaluate_at: Option<PyReadonlyArray1<'_, i64>>,
        with_elements: bool,
    ) -> PyResult<Vec<NativeEvaluation>> {
        let dfa = self.inner.dfa().clone();
        Arrays::new(timestamps, values, evaluate_at).run(
            py,
            chars,
            &mut self.dead,
            &mut self.last_t,
            &dfa,
            &mut self.inner,
            |s, raw| s.feed(raw),
            |s, t| evaluation(s, t, with_elements),
        )
    }

    fn result(&self) -> NativeEvaluation {
        evaluation(&self.inner, self.inner.now().unwrap_or(0), false)
    }

    #[getter]
    fn config(&self) -> NativeConfig {
        let c = self.inner.config();
        NativeConfig {
            window: c.tau,
            size: c.size,
            strategy: c.strategy.name(),
            aggregate: Aggregate::NAMES[c.aggregate as usize],
            policy: self.inner.policy().name(),
            time_to_live: c.time_to_live,
            seed: c.seed,
            probabilities: c.probabilities.clone(),
        }
    }

    /// Whether this summary runs over exactly the automaton `dfa`.
    fn same_automaton(&self, dfa: &PyDfa) -> bool {
        self.inner.dfa().spec() == dfa.inner.spec()
    }

    fn elements(&self) -> Vec<(char, i64, u64)> {
        element_list(&self.inner)
    }

    fn __len__(&self) -> usize {
        self.inner.elements().len()
    }

    #[getter]
    fn events(&self) -> u64 {
        self.inner.counts().0
    }

    #[getter]
    fn skipped(&self) -> u64 {
        self.inner.counts().1
    }

    #[getter]
    fn evictions(&self) -> u64 {
        self.inner.counts().2
    }

    #[getter]
    fn tier(&self) -> &'static str {
        self.inner.tier()
    }

    #[getter]
    fn is_big(&self) -> bool {
        self.inner.tier() != "u128"
    }

    #[getter]
    fn last_timestamp(&self) -> Option<i64> {
        self.last_t
    }

    /// The saved form (format [`FORMAT_VERSION`]), carrying `meta` (the caller's description).
    fn to_bytes<'py>(&self, py: Python<'py>, meta: String) -> PyResult<Bound<'py, PyBytes>> {
        let saved = Saved { meta, last_t: self.last_t, summary: self.inner.clone() };
        let bytes = guard_ro(|| state::save(&saved))?;
        Ok(PyBytes::new(py, &bytes))
    }

    /// Load a saved summary: `(engine, meta)`, or `suse.StateError` saying what is wrong.
    #[staticmethod]
    #[pyo3(signature = (data, memory_limit=None))]
    fn from_bytes(py: Python<'_>, data: &[u8], memory_limit: Option<u64>) -> PyResult<(Self, String)> {
        py.allow_threads(|| {
            guard_ro(|| {
                let saved = state::load(data, &limits(memory_limit))?;
                Ok((SummaryEngine { inner: saved.summary, last_t: saved.last_t, dead: None }, saved.meta))
            })
        })
    }

    // ---- inspection hooks for tests ----

    /// Selection estimates: (present benefit per element, active local rows), as floats.
    fn _estimates(&mut self) -> suse_kernel::engine::FloatEstimates {
        self.inner.estimates()
    }

    /// Exact complete matches containing each element, by recomputation.
    fn _exact_locals(&self) -> PyResult<Vec<(BigUint, BigUint)>> {
        guard_ro(|| Ok(self.inner.exact_locals()?.into_iter().map(|d| (d.c, d.s)).collect()))
    }

    /// Exact active counters as maintained, and as recomputed from the elements.
    fn _active_counters(&self) -> PyResult<PairLists> {
        guard_ro(|| {
            let (kept, fresh) = self.inner.active_check()?;
            let conv = |v: Vec<suse_kernel::dual::Dual<BigUint>>| v.into_iter().map(|d| (d.c, d.s)).collect();
            Ok((conv(kept), conv(fresh)))
        })
    }

    fn _active_start(&self) -> usize {
        self.inner.active_start()
    }
}

/// Benchmark baseline: exact totals with per-initiator counters (u128 only; None on overflow).
#[pyfunction]
fn per_initiator_exact(dfa: &PyDfa, window: i64, chars: &[u8], timestamps: PyReadonlyArray1<'_, i64>) -> Option<(BigUint, BigUint, BigUint)> {
    let ts = timestamps.as_array();
    let events: Vec<Ev> = chars
        .iter()
        .zip(ts.iter())
        .filter_map(|(&c, &t)| {
            let sym = dfa.inner.lookup[c as usize];
            (sym != UNKNOWN).then_some(Ev { sym, t, v: 1, gap: 0 })
        })
        .collect();
    let totals = per_initiator_totals(&dfa.inner, window, &events)?;
    let big: Vec<_> = totals.iter().map(|d| d.to_big()).collect();
    Some(split_totals(&dfa.inner, &big))
}

/// Estimated bytes of a summary's engines (the figure the memory limit is checked against).
#[pyfunction]
#[pyo3(signature = (dfa, size, policy_name="any"))]
fn summary_memory(dfa: &PyDfa, size: usize, policy_name: &str) -> PyResult<u64> {
    guard_ro(|| Ok(Limits::summary_bytes(&dfa.inner, size, policy(policy_name)?)))
}

#[pymodule]
fn _core(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(per_initiator_exact, m)?)?;
    m.add_function(wrap_pyfunction!(summary_memory, m)?)?;
    m.add_class::<PyDfa>()?;
    m.add_class::<ExactEngine>()?;
    m.add_class::<MultiExactEngine>()?;
    m.add_class::<SummaryEngine>()?;
    m.add_class::<NativeEvaluation>()?;
    m.add_class::<NativeTotals>()?;
    m.add_class::<NativeConfig>()?;
    m.add("STRATEGIES", StrategyKind::NAMES.to_vec())?;
    m.add("POLICIES", Policy::NAMES.to_vec())?;
    m.add("AGGREGATES", Aggregate::NAMES.to_vec())?;
    m.add("STATE_FORMAT", FORMAT_VERSION)?;
    m.add("DEFAULT_MEMORY_LIMIT", DEFAULT_MAX_BYTES)?;
    m.add("MAX_SIZE", suse_kernel::limits::MAX_SIZE)?;
    Ok(())
}
