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
use suse_kernel::exact::approx::CostLabels;
use suse_kernel::engine::batch::{Batch, Raw};
use suse_kernel::automaton::dfa::{Dfa, DfaSpec, GAP_BREAK, UNKNOWN};
use suse_kernel::engine::{ExactEngine as KExact, SummaryEngine as KSummary};
use suse_kernel::engine::error::Error;
use suse_kernel::numbers::dual::Dual;
use suse_kernel::exact::extrema::{check_mask, Ext, Extrema};
use suse_kernel::engine::limits::{Limits, DEFAULT_MAX_BYTES};
use suse_kernel::exact::multi::{Merge, MultiExact as KMulti};
use suse_kernel::exact::ooo::{evaluation_cuts, OutOfOrder, Pending, Replay, Retracted};
use suse_kernel::automaton::semantics::{Ev, Policy};
use suse_kernel::engine::state::{self, ExactSnapshot, Saved, FORMAT_VERSION};
use suse_kernel::summary::selection::StrategyKind;
use suse_kernel::summary::{Aggregate, Config, Readout};
use suse_kernel::exact::window::{per_initiator_totals, split_totals};

mod conditions;
mod grouped;
mod matches;
mod recognize;

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

/// Whether counters of this tier have outgrown the machine words (`u64`, `u128`).
fn is_big(tier: &str) -> bool {
    !matches!(tier, "u64" | "u128")
}

fn limits(memory_limit: Option<u64>) -> Limits {
    Limits { max_bytes: memory_limit.unwrap_or(DEFAULT_MAX_BYTES) }
}

#[pyclass(name = "Dfa", module = "suse._core", frozen)]
#[derive(Clone)]
struct PyDfa {
    inner: Arc<Dfa>,
    /// Approximate matching: the cost label of each final state (None: exact matching).
    labels: Option<Arc<CostLabels>>,
}

#[pymethods]
impl PyDfa {
    #[new]
    #[pyo3(signature = (n_states, alphabet, negated, start, finals, table, final_cost=None, max_missing=0))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        n_states: usize,
        alphabet: &str,
        negated: &str,
        start: u32,
        finals: Vec<bool>,
        table: Vec<i64>,
        final_cost: Option<Vec<u8>>,
        max_missing: u8,
    ) -> PyResult<Self> {
        guard_ro(|| {
            if !alphabet.is_ascii() || !negated.is_ascii() {
                return Err(Error::input("alphabet must be ASCII"));
            }
            let spec = DfaSpec { n: n_states, alphabet: alphabet.as_bytes().to_vec(), negated: negated.as_bytes().to_vec(), start, finals, table };
            let dfa = Dfa::new(spec).map_err(Error::Input)?;
            let labels = match final_cost {
                Some(cost) => Some(Arc::new(CostLabels::new(&dfa, cost, max_missing).map_err(Error::Input)?)),
                None => None,
            };
            Ok(PyDfa { inner: Arc::new(dfa), labels })
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
    /// MIN/MAX over the elements in at least one match (when asked for; `None` otherwise or
    /// without a match).
    min: Option<u64>,
    max: Option<u64>,
    /// Approximate matching: the count by least number of missing letters (index 0: exact).
    count_by_missing: Option<Vec<BigUint>>,
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
    min: Option<u64>,
    max: Option<u64>,
    count_by_missing: Option<Vec<BigUint>>,
}

/// An evaluation's totals (its counts and range, without the time or the summary's extras).
impl From<NativeEvaluation> for NativeTotals {
    fn from(e: NativeEvaluation) -> Self {
        NativeTotals { count: e.count, sum: e.sum, partial_count: e.partial_count, min: e.min, max: e.max, count_by_missing: e.count_by_missing }
    }
}

/// What an engine reports beside counts: MIN/MAX (`extrema`) and which letters' values are
/// aggregated (`mask`, from `of=`; `None`: all).
#[derive(Clone, Default)]
struct Output {
    extrema: bool,
    mask: Option<Vec<bool>>,
}

impl Output {
    fn new(dfa: &Dfa, extrema: bool, of: Option<Vec<bool>>) -> Result<Self, Error> {
        if let Some(m) = &of {
            check_mask(dfa, m)?;
        }
        Ok(Output { extrema, mask: of })
    }

    /// The event as the counters see it: an element outside `of` adds nothing to SUM.
    #[inline]
    fn mask(&self, raw: Raw) -> Raw {
        match (raw, &self.mask) {
            (Raw::Element(ev), Some(m)) if !m[ev.sym as usize] => Raw::Element(Ev { v: 0, ..ev }),
            _ => raw,
        }
    }
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
#[derive(Clone)]
struct ExactState {
    engine: KExact,
    out: Output,
    extrema: Option<Extrema>,
    events: u64,
    skipped: u64,
}

impl ExactState {
    fn new(dfa: &PyDfa, window: i64, policy_name: &str, memory_limit: Option<u64>, extrema: bool, of: Option<Vec<bool>>) -> Result<Self, Error> {
        let policy = policy(policy_name)?;
        let engine = KExact::new(dfa.inner.clone(), window, policy, &limits(memory_limit))?;
        let out = Output::new(&dfa.inner, extrema, of)?;
        let extrema = if extrema { Some(Extrema::new(dfa.inner.clone(), window, policy, out.mask.clone())?) } else { None };
        Ok(ExactState { engine, out, extrema, events: 0, skipped: 0 })
    }

    fn feed(&mut self, raw: Raw) -> Result<(), Error> {
        self.events += 1;
        if raw == Raw::Gap(GAP_BREAK) {
            self.skipped += 1;
        }
        if let Some(x) = &mut self.extrema {
            x.feed(raw);
        }
        self.engine.feed(self.out.mask(raw))
    }

    /// A negation at the end of the pattern (see [`ExactEngine::new`]); MIN/MAX not with it.
    fn close_at_window_end(&mut self, closing: Option<(Vec<u32>, u32)>) -> Result<(), Error> {
        let Some((pending, closed)) = closing else { return Ok(()) };
        if self.extrema.is_some() {
            return Err(Error::input("MIN/MAX are not counted with a negation at the end of the pattern yet"));
        }
        self.engine.close_at_window_end(pending, closed)
    }

    fn extremes(&self) -> (Option<u64>, Option<u64>) {
        self.extrema.as_ref().and_then(|x| x.result()).map_or((None, None), |(lo, hi)| (Some(lo), Some(hi)))
    }

    fn snapshot(&self) -> ExactPickle {
        let s = state::snapshot_exact(&self.engine);
        let window = s.window.iter().map(|e| (e.sym, e.t, e.v, e.gap)).collect();
        let totals = s.totals.into_iter().map(|d| (d.c, d.s)).collect();
        let total = self.extrema.as_ref().map(|x| (x.total.ok, x.total.lo, x.total.hi));
        (window, totals, s.gap, self.events, self.skipped, total)
    }

    /// The state of [`ExactState::snapshot`] for an engine made with these arguments. MIN/MAX
    /// follow from the same window: its events replayed, the total over earlier ones restored.
    fn restore(spec: EngineSpec<'_>, pickled: ExactPickle) -> Result<Self, Error> {
        let mut me = ExactState::new(spec.dfa, spec.window, spec.policy, spec.memory_limit, spec.extrema, spec.of)?;
        let (window, totals, gap, events, skipped, total) = pickled;
        let window: Vec<Ev> = window.into_iter().map(|(sym, t, v, gap)| Ev { sym, t, v, gap }).collect();
        let snap = ExactSnapshot { window, totals: totals.into_iter().map(|(c, s)| Dual { c, s }).collect(), gap };
        me.engine = state::restore_exact(spec.dfa.inner.clone(), spec.window, policy(spec.policy)?, &limits(spec.memory_limit), &snap)?;
        match (&mut me.extrema, total) {
            (Some(x), Some((ok, lo, hi))) => {
                snap.window.iter().for_each(|e| x.push(*e));
                x.feed(Raw::Gap(gap));
                x.total = Ext { ok, lo, hi };
            }
            (None, None) => {}
            _ => return Err(Error::state("saved exact engine does not match the query: MIN/MAX held by one only")),
        }
        if skipped > events {
            return Err(Error::state("saved exact engine is inconsistent: more events skipped than seen"));
        }
        (me.events, me.skipped) = (events, skipped);
        Ok(me)
    }
}

/// A pickled exact engine: the events in its window `(symbol, time, value, gap)`, its totals
/// per state `(count, sum)`, the gap since its last element, events, skipped, and the MIN/MAX
/// total `(ok, lo, hi)` when it has one.
type ExactPickle = (Vec<(u8, i64, u64, u32)>, Vec<(BigUint, BigUint)>, u32, u64, u64, Option<(bool, u64, u64)>);

/// What an exact engine is made from (the constructor's arguments).
struct EngineSpec<'a> {
    dfa: &'a PyDfa,
    window: i64,
    policy: &'a str,
    memory_limit: Option<u64>,
    extrema: bool,
    of: Option<Vec<bool>>,
}

/// Two lists of `(count, sum)` pairs.
type PairLists = (Vec<(BigUint, BigUint)>, Vec<(BigUint, BigUint)>);

/// Exact aggregation over a whole stream (the ground truth).
#[pyclass(name = "ExactEngine", module = "suse._core")]
struct ExactEngine {
    state: ExactState,
    last_t: Option<i64>,
    dead: Option<String>,
    labels: Option<Arc<CostLabels>>,
}

#[pymethods]
impl ExactEngine {
    /// `closing`: a negation at the end of the pattern, as `(pending states, closed state)`
    /// (`suse_kernel::exact::window::Closing`).
    #[new]
    #[pyo3(signature = (dfa, window, policy_name, memory_limit=None, extrema=false, of=None, closing=None))]
    #[allow(clippy::too_many_arguments)]
    fn new(dfa: &PyDfa, window: i64, policy_name: &str, memory_limit: Option<u64>, extrema: bool, of: Option<Vec<bool>>, closing: Option<(Vec<u32>, u32)>) -> PyResult<Self> {
        guard_ro(|| {
            let mut state = ExactState::new(dfa, window, policy_name, memory_limit, extrema, of)?;
            state.close_at_window_end(closing)?;
            Ok(ExactEngine { state, last_t: None, dead: None, labels: dfa.labels.clone() })
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
        let labels = self.labels.clone();
        let rows = Arrays::new(timestamps, values, evaluate_at).run(
            py,
            chars,
            &mut self.dead,
            &mut self.last_t,
            &dfa,
            &mut self.state,
            |me, raw| me.feed(raw),
            |me, t| exact_evaluation_at(me, t, labels.as_deref()),
        )?;
        rows.into_iter().collect::<Result<_, Error>>().map_err(to_py)
    }

    /// What pickling keeps: `(engine state, last timestamp)` ([`ExactPickle`]).
    fn _snapshot(&self) -> (ExactPickle, Option<i64>) {
        (self.state.snapshot(), self.last_t)
    }

    /// An engine as [`ExactEngine::_snapshot`] saw it, made with the constructor's arguments.
    #[staticmethod]
    #[pyo3(signature = (dfa, window, policy_name, memory_limit, extrema, of, snapshot, closing=None))]
    #[allow(clippy::too_many_arguments)]
    fn _restore(dfa: &PyDfa, window: i64, policy_name: &str, memory_limit: Option<u64>, extrema: bool, of: Option<Vec<bool>>, snapshot: (ExactPickle, Option<i64>), closing: Option<(Vec<u32>, u32)>) -> PyResult<Self> {
        guard_ro(|| {
            let spec = EngineSpec { dfa, window, policy: policy_name, memory_limit, extrema, of };
            let mut state = ExactState::restore(spec, snapshot.0)?;
            state.close_at_window_end(closing)?;
            Ok(ExactEngine { state, last_t: snapshot.1, dead: None, labels: dfa.labels.clone() })
        })
    }

    /// An independent copy (the out-of-order layer evaluates provisional events on one).
    fn copy(&self) -> Self {
        ExactEngine { state: self.state.clone(), last_t: self.last_t, dead: self.dead.clone(), labels: self.labels.clone() }
    }

    fn totals(&self) -> NativeTotals {
        exact_evaluation(&self.state, 0, self.labels.as_deref()).into()
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
        is_big(self.state.engine.tier())
    }

    #[getter]
    fn last_timestamp(&self) -> Option<i64> {
        self.last_t
    }
}

impl Replay for ExactState {
    fn feed_raw(&mut self, byte: u8, t: i64, v: u64) -> Result<(), Error> {
        self.feed(Raw::classify(self.engine.dfa(), byte, t, v))
    }
}

/// [`exact_evaluation`] at time `t`: with a negation at the end of the pattern, only the
/// windows closed by `t` count.
fn exact_evaluation_at(me: &ExactState, t: i64, labels: Option<&CostLabels>) -> Result<NativeEvaluation, Error> {
    let (count, sum, partial_count) = me.engine.totals_at(Some(t))?;
    Ok(NativeEvaluation { count, sum, partial_count, ..exact_evaluation(me, t, labels) })
}

fn exact_evaluation(me: &ExactState, t: i64, labels: Option<&CostLabels>) -> NativeEvaluation {
    let (count, sum, partial_count) = me.engine.totals();
    let (min, max) = me.extremes();
    let count_by_missing = exact_by_missing(&me.engine, labels);
    NativeEvaluation { timestamp: t, count, sum, partial_count, detected_count: None, detected_sum: None, elements: None, min, max, count_by_missing }
}

/// `OutOfOrder::retract` as the bindings answer it: "removed", "final" or "missing".
fn retract_pending<E: Replay>(inner: &mut OutOfOrder<E>, dead: &mut Option<String>, byte: u8, t: i64, v: u64) -> PyResult<&'static str> {
    guard(dead, || {
        Ok(match inner.retract(byte, t, v) {
            Retracted::Removed => "removed",
            Retracted::Final => "final",
            Retracted::Missing => "missing",
        })
    })
}

/// The exact engine with `lateness`: events newer than the horizon wait in order in the
/// kernel (`suse_kernel::exact::ooo`); read-outs see every accepted event in (timestamp, arrival)
/// order. Late events are refused here; the Python layer counts or reports them first.
#[pyclass(name = "OooExactEngine", module = "suse._core")]
struct OooExactEngine {
    inner: OutOfOrder<ExactState>,
    dead: Option<String>,
    labels: Option<Arc<CostLabels>>,
}

#[pymethods]
impl OooExactEngine {
    #[new]
    #[pyo3(signature = (dfa, window, policy_name, lateness, memory_limit=None, extrema=false, of=None))]
    #[allow(clippy::too_many_arguments)]
    fn new(dfa: &PyDfa, window: i64, policy_name: &str, lateness: i64, memory_limit: Option<u64>, extrema: bool, of: Option<Vec<bool>>) -> PyResult<Self> {
        guard_ro(|| {
            let state = ExactState::new(dfa, window, policy_name, memory_limit, extrema, of)?;
            Ok(OooExactEngine { inner: OutOfOrder::new(state, lateness)?, dead: None, labels: dfa.labels.clone() })
        })
    }

    /// Process a batch in arrival order (none of it older than the horizon); one evaluation
    /// per time in `evaluate_at` (increasing), taken before the first event later than T + L.
    #[pyo3(signature = (chars, timestamps, values=None, evaluate_at=None))]
    fn extend(
        &mut self,
        py: Python<'_>,
        chars: &[u8],
        timestamps: PyReadonlyArray1<'_, i64>,
        values: Option<PyReadonlyArray1<'_, i64>>,
        evaluate_at: Option<PyReadonlyArray1<'_, i64>>,
    ) -> PyResult<Vec<NativeEvaluation>> {
        let a = Arrays::new(timestamps, values, evaluate_at);
        let labels = self.labels.clone();
        let (inner, dead) = (&mut self.inner, &mut self.dead);
        py.allow_threads(|| guard(dead, || inner.extend(chars, &a.ts, a.vals.as_deref(), &a.evals, |me, t| exact_evaluation(me, t, labels.as_deref()))))
    }

    /// Take back the latest-arriving pending event equal to the triple: "removed", "final"
    /// (at or before the horizon) or "missing" (no such event pending); only "removed" changes
    /// anything.
    fn retract(&mut self, byte: u8, timestamp: i64, value: u64) -> PyResult<&'static str> {
        retract_pending(&mut self.inner, &mut self.dead, byte, timestamp, value)
    }

    /// Totals over every accepted event.
    fn totals(&mut self, py: Python<'_>) -> PyResult<NativeTotals> {
        let (inner, labels, dead) = (&mut self.inner, self.labels.clone(), &mut self.dead);
        py.allow_threads(|| {
            guard(dead, || {
                let me = inner.readout(None)?; // a replay of the pending events
                Ok(exact_evaluation(&me, 0, labels.as_deref()).into())
            })
        })
    }

    /// `(events, skipped)` over every accepted event.
    fn counts(&mut self, py: Python<'_>) -> PyResult<(u64, u64)> {
        let (inner, dead) = (&mut self.inner, &mut self.dead);
        py.allow_threads(|| guard(dead, || inner.readout(None).map(|me| (me.events, me.skipped))))
    }

    fn copy(&self) -> Self {
        OooExactEngine { inner: self.inner.clone(), dead: self.dead.clone(), labels: self.labels.clone() }
    }

    /// What pickling keeps: the final events' engine, the pending events `(byte, time, value)`
    /// in order, and the largest timestamp seen.
    fn _snapshot(&self) -> (ExactPickle, Vec<(u8, i64, u64)>, Option<i64>) {
        let pending = self.inner.pending().map(|p| (p.byte, p.t, p.v)).collect();
        (self.inner.done().snapshot(), pending, self.inner.max_timestamp())
    }

    #[staticmethod]
    #[pyo3(signature = (dfa, window, policy_name, lateness, memory_limit, extrema, of, snapshot))]
    #[allow(clippy::too_many_arguments)]
    fn _restore(
        dfa: &PyDfa,
        window: i64,
        policy_name: &str,
        lateness: i64,
        memory_limit: Option<u64>,
        extrema: bool,
        of: Option<Vec<bool>>,
        snapshot: (ExactPickle, Vec<(u8, i64, u64)>, Option<i64>),
    ) -> PyResult<Self> {
        guard_ro(|| {
            let (done, pending, max_ts) = snapshot;
            let spec = EngineSpec { dfa, window, policy: policy_name, memory_limit, extrema, of };
            let pending: Vec<Pending> = pending.into_iter().map(|(byte, t, v)| Pending { t, byte, v }).collect();
            let inner = OutOfOrder::resume(ExactState::restore(spec, done)?, lateness, max_ts, &pending)?;
            Ok(OooExactEngine { inner, dead: None, labels: dfa.labels.clone() })
        })
    }

    #[getter]
    fn max_timestamp(&self) -> Option<i64> {
        self.inner.max_timestamp()
    }

    #[getter]
    fn horizon(&self) -> Option<i64> {
        self.inner.horizon()
    }

    #[getter]
    fn lateness(&self) -> i64 {
        self.inner.lateness()
    }

    /// Events newer than the horizon, waiting to become final.
    #[getter]
    fn pending(&self) -> usize {
        self.inner.pending().count()
    }

    #[getter]
    fn tier(&self) -> &'static str {
        self.inner.done().engine.tier()
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
                        min: None,
                        max: None,
                        count_by_missing: None, // query sets refuse such queries (suse.QuerySet)
                    })
                    .collect()
            })
            .collect())
    }

    /// Totals of query `i` (its position in the constructor's list).
    fn totals(&self, i: usize) -> PyResult<NativeTotals> {
        self.check(i)?;
        let (count, sum, partial_count) = self.inner.totals(i);
        Ok(NativeTotals { count, sum, partial_count, min: None, max: None, count_by_missing: None })
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
#[derive(Clone)]
struct SummaryEngine {
    inner: KSummary,
    out: Output,
    last_t: Option<i64>,
    dead: Option<String>,
    labels: Option<Arc<CostLabels>>,
}

/// The exact engine's count by missing letters, when it runs an approximate query.
fn exact_by_missing(engine: &KExact, labels: Option<&CostLabels>) -> Option<Vec<BigUint>> {
    labels.map(|l| l.split(engine.dfa(), &engine.per_state()))
}

fn evaluation(s: &KSummary, out: &Output, t: i64, with_elements: bool, labels: Option<&CostLabels>) -> Result<NativeEvaluation, Error> {
    evaluation_over(s, s.readout(), s.elements(), out, t, with_elements, labels)
}

/// An evaluation from a readout over `elements` (all retained ones, or those up to `t`).
fn evaluation_over(s: &KSummary, r: Readout, elements: &[Ev], out: &Output, t: i64, with_elements: bool, labels: Option<&CostLabels>) -> Result<NativeEvaluation, Error> {
    let (count, sum, partial_count) = split_totals(s.dfa(), &r.g);
    // Not maintained under eviction (not invertible): recomputed from the retained elements,
    // O(|S|·|Z|²) per evaluation.
    let range = if out.extrema { Extrema::over(s.dfa().clone(), s.config().tau, s.policy(), out.mask.clone(), elements)? } else { None };
    Ok(NativeEvaluation {
        timestamp: t,
        count,
        sum,
        partial_count,
        detected_count: Some(r.detected.c),
        detected_sum: Some(r.detected.s),
        elements: with_elements.then(|| element_list(s.dfa(), elements)),
        min: range.map(|r| r.0),
        max: range.map(|r| r.1),
        count_by_missing: labels.map(|l| l.split(s.dfa(), &r.g)),
    })
}

fn element_list(dfa: &Dfa, elements: &[Ev]) -> Vec<(char, i64, u64)> {
    elements.iter().map(|e: &Ev| (dfa.alphabet[e.sym as usize] as char, e.t, e.v)).collect()
}

#[pymethods]
impl SummaryEngine {
    #[new]
    #[pyo3(signature = (dfa, window, size, strategy, aggregate, policy_name, probabilities, seed, time_to_live, memory_limit=None, extrema=false, of=None))]
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
        extrema: bool,
        of: Option<Vec<bool>>,
    ) -> PyResult<Self> {
        guard_ro(|| {
            let strategy = StrategyKind::parse(strategy)
                .ok_or_else(|| Error::input(format!("strategy must be one of {}; got {strategy:?}", StrategyKind::NAMES.join(", "))))?;
            let aggregate = Aggregate::parse(aggregate)
                .ok_or_else(|| Error::input(format!("aggregate must be one of {}; got {aggregate:?}", Aggregate::NAMES.join(", "))))?;
            let cfg = Config { size, tau: window, strategy, aggregate, time_to_live, probabilities, seed };
            let inner = KSummary::new(dfa.inner.clone(), policy(policy_name)?, cfg, &limits(memory_limit))?;
            let out = Output::new(&dfa.inner, extrema, of)?;
            Ok(SummaryEngine { inner, out, last_t: None, dead: None, labels: dfa.labels.clone() })
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
        let out = self.out.clone();
        let labels = self.labels.clone();
        let rows = Arrays::new(timestamps, values, evaluate_at).run(
            py,
            chars,
            &mut self.dead,
            &mut self.last_t,
            &dfa,
            &mut self.inner,
            |s, raw| s.feed(out.mask(raw)),
            |s, t| evaluation(s, &out, t, with_elements, labels.as_deref()),
        )?;
        rows.into_iter().map(|r| r.map_err(to_py)).collect()
    }

    fn result(&self, py: Python<'_>) -> PyResult<NativeEvaluation> {
        py.allow_threads(|| guard_ro(|| evaluation(&self.inner, &self.out, self.inner.now().unwrap_or(0), false, self.labels.as_deref())))
    }

    /// Process events in arrival order, each going in at its place in time (a late element
    /// among the retained ones: `placement="insert"`; policy "any" without negation only). An
    /// evaluation at T (increasing) counts the retained elements up to T and is taken where the
    /// buffered layer takes it under `lateness` (`evaluation_cuts`), `max_timestamp` being the
    /// largest timestamp seen before the batch.
    #[pyo3(signature = (chars, timestamps, values=None, evaluate_at=None, max_timestamp=None, lateness=0, with_elements=false))]
    #[allow(clippy::too_many_arguments)]
    fn insert_late(
        &mut self,
        py: Python<'_>,
        chars: &[u8],
        timestamps: PyReadonlyArray1<'_, i64>,
        values: Option<PyReadonlyArray1<'_, i64>>,
        evaluate_at: Option<PyReadonlyArray1<'_, i64>>,
        max_timestamp: Option<i64>,
        lateness: i64,
        with_elements: bool,
    ) -> PyResult<Vec<NativeEvaluation>> {
        let a = Arrays::new(timestamps, values, evaluate_at);
        let (inner, out, last_t, labels) = (&mut self.inner, &self.out, &mut self.last_t, self.labels.clone());
        py.allow_threads(|| {
            guard(&mut self.dead, || {
                Batch::unordered(chars, &a.ts, a.vals.as_deref())?; // lengths and values
                suse_kernel::engine::batch::check_evals(&a.evals)?;
                let cuts = evaluation_cuts(max_timestamp, lateness, &a.ts, &a.evals);
                let dfa = inner.dfa().clone();
                let mut rows = Vec::with_capacity(a.evals.len());
                let mut next = 0;
                for i in 0..=a.ts.len() {
                    while next < a.evals.len() && cuts[next] == i {
                        let t = a.evals[next];
                        let (r, upto) = inner.readout_upto(t)?;
                        rows.push(evaluation_over(inner, r, upto, out, t, with_elements, labels.as_deref())?);
                        next += 1;
                    }
                    if i < a.ts.len() {
                        let v = a.vals.as_deref().map_or(1, |v| v[i] as u64);
                        inner.feed_late(out.mask(Raw::classify(&dfa, chars[i], a.ts[i], v)))?;
                        *last_t = Some(last_t.map_or(a.ts[i], |m| m.max(a.ts[i])));
                    }
                }
                Ok(rows)
            })
        })
    }

    /// Set what a loaded summary reports beside counts (saved with the caller's description,
    /// not in the kernel state, so states of earlier versions load unchanged).
    #[pyo3(signature = (extrema=false, of=None))]
    fn _set_output(&mut self, extrema: bool, of: Option<Vec<bool>>) -> PyResult<()> {
        self.out = guard_ro(|| Output::new(self.inner.dfa(), extrema, of))?;
        Ok(())
    }

    /// An independent copy.
    fn copy(&self) -> Self {
        self.clone()
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

    /// Take the cost labels of `dfa` (approximate matching; a saved state does not hold them,
    /// they follow from the query). False, and nothing changes, if `dfa` is another automaton.
    fn adopt_labels(&mut self, dfa: &PyDfa) -> bool {
        let same = self.same_automaton(dfa);
        if same {
            self.labels = dfa.labels.clone();
        }
        same
    }

    fn elements(&self) -> Vec<(char, i64, u64)> {
        element_list(self.inner.dfa(), self.inner.elements())
    }

    /// The matches among the retained elements (with the gaps they keep), positions being
    /// their indices in `elements()`.
    fn match_set(&self) -> PyResult<matches::MatchSet> {
        let dfa = PyDfa { inner: self.inner.dfa().clone(), labels: self.labels.clone() };
        matches::over_elements(&dfa, self.inner.config().tau, self.inner.policy().name(), self.inner.elements())
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
        is_big(self.inner.tier())
    }

    #[getter]
    fn last_timestamp(&self) -> Option<i64> {
        self.last_t
    }

    /// The saved form (format [`FORMAT_VERSION`]), carrying `meta` (the caller's description).
    fn to_bytes<'py>(&self, py: Python<'py>, meta: String) -> PyResult<Bound<'py, PyBytes>> {
        let bytes = py.allow_threads(|| guard_ro(|| state::save(&Saved { meta, last_t: self.last_t, summary: self.inner.clone() })))?;
        Ok(PyBytes::new(py, &bytes))
    }

    /// Load a saved summary: `(engine, meta)`, or `suse.StateError` saying what is wrong.
    #[staticmethod]
    #[pyo3(signature = (data, memory_limit=None))]
    fn from_bytes(py: Python<'_>, data: &[u8], memory_limit: Option<u64>) -> PyResult<(Self, String)> {
        py.allow_threads(|| {
            guard_ro(|| {
                let saved = state::load(data, &limits(memory_limit))?;
                Ok((SummaryEngine { inner: saved.summary, out: Output::default(), last_t: saved.last_t, dead: None, labels: None }, saved.meta))
            })
        })
    }

    // ---- inspection hooks for tests ----

    /// Selection estimates: (present benefit per element, active local rows), as floats (the
    /// sums 0 unless the aggregate is sum: the estimates are count-only then).
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
            let conv = |v: Vec<suse_kernel::numbers::dual::Dual<BigUint>>| v.into_iter().map(|d| (d.c, d.s)).collect();
            Ok((conv(kept), conv(fresh)))
        })
    }

    fn _active_start(&self) -> usize {
        self.inner.active_start()
    }
}

/// The summary behind the out-of-order layer: fed one final event at a time, in order.
impl Replay for SummaryEngine {
    fn feed_raw(&mut self, byte: u8, t: i64, v: u64) -> Result<(), Error> {
        let raw = self.out.mask(Raw::classify(self.inner.dfa(), byte, t, v));
        self.inner.feed(raw)?;
        self.last_t = Some(t);
        Ok(())
    }
}

/// The summary with `lateness` and `placement="buffer"`: the kernel's out-of-order layer
/// (`suse_kernel::exact::ooo`, as `OooExactEngine`) in front of a `SummaryEngine`. Late events
/// are refused here; the Python layer counts or reports them first.
#[pyclass(name = "OooSummaryEngine", module = "suse._core")]
struct OooSummaryEngine {
    inner: OutOfOrder<SummaryEngine>,
    dead: Option<String>,
}

#[pymethods]
impl OooSummaryEngine {
    /// `engine` fed the final events, the largest timestamp seen and the pending events
    /// `(bytes, timestamps, values)` in (timestamp, arrival) order; a fresh summary has none.
    #[new]
    #[pyo3(signature = (engine, lateness, max_timestamp=None, pending=None))]
    fn new(engine: &SummaryEngine, lateness: i64, max_timestamp: Option<i64>, pending: Option<(Vec<u8>, Vec<i64>, Vec<u64>)>) -> PyResult<Self> {
        guard_ro(|| {
            let (bytes, ts, vals) = pending.unwrap_or_default();
            if bytes.len() != ts.len() || ts.len() != vals.len() {
                return Err(Error::State("the pending events are inconsistent".into()));
            }
            let pending: Vec<Pending> = bytes.iter().zip(&ts).zip(&vals).map(|((&byte, &t), &v)| Pending { t, byte, v }).collect();
            Ok(OooSummaryEngine { inner: OutOfOrder::resume(engine.clone(), lateness, max_timestamp, &pending)?, dead: None })
        })
    }

    /// Process a batch in arrival order (none of it older than the horizon); one evaluation
    /// per time in `evaluate_at` (increasing), taken before the first event later than T + L,
    /// with the retained elements up to T when `with_elements`.
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
        let a = Arrays::new(timestamps, values, evaluate_at);
        let (inner, dead) = (&mut self.inner, &mut self.dead);
        let rows = py.allow_threads(|| {
            guard(dead, || {
                inner.extend(chars, &a.ts, a.vals.as_deref(), &a.evals, |me, t| {
                    evaluation(&me.inner, &me.out, t, with_elements, me.labels.as_deref())
                })
            })
        })?;
        rows.into_iter().map(|r| r.map_err(to_py)).collect()
    }

    /// As `OooExactEngine.retract`: "removed", "final" or "missing".
    fn retract(&mut self, byte: u8, timestamp: i64, value: u64) -> PyResult<&'static str> {
        retract_pending(&mut self.inner, &mut self.dead, byte, timestamp, value)
    }

    /// The summary fed every accepted event (a copy: the final events' summary followed by a
    /// replay of the pending ones).
    fn settled(&mut self, py: Python<'_>) -> PyResult<SummaryEngine> {
        let (inner, dead) = (&self.inner, &mut self.dead);
        py.allow_threads(|| guard(dead, || inner.settled()))
    }

    /// The summary fed the final events only (what is saved, beside the pending events).
    fn done(&self) -> SummaryEngine {
        self.inner.done().clone()
    }

    /// The pending events `(bytes, timestamps, values)` in (timestamp, arrival) order.
    fn pending_events(&self) -> (Vec<u8>, Vec<i64>, Vec<u64>) {
        let p = || self.inner.pending();
        (p().map(|e| e.byte).collect(), p().map(|e| e.t).collect(), p().map(|e| e.v).collect())
    }

    fn copy(&self) -> Self {
        OooSummaryEngine { inner: self.inner.clone(), dead: self.dead.clone() }
    }

    #[getter]
    fn max_timestamp(&self) -> Option<i64> {
        self.inner.max_timestamp()
    }

    #[getter]
    fn horizon(&self) -> Option<i64> {
        self.inner.horizon()
    }

    /// Events newer than the horizon, waiting to become final.
    #[getter]
    fn pending(&self) -> usize {
        self.inner.pending().count()
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
    m.add_function(wrap_pyfunction!(grouped::summary_groups, m)?)?;
    m.add_function(wrap_pyfunction!(grouped::summary_set_groups, m)?)?;
    m.add_function(wrap_pyfunction!(grouped::sort_groups, m)?)?;
    m.add_function(wrap_pyfunction!(grouped::sort_packed_groups, m)?)?;
    m.add_function(wrap_pyfunction!(recognize::recognize_run, m)?)?;
    m.add_function(wrap_pyfunction!(recognize::recognize_stretch, m)?)?;
    m.add_function(wrap_pyfunction!(recognize::recognize_nav_position, m)?)?;
    m.add_class::<PyDfa>()?;
    m.add_class::<conditions::WhereEngine>()?;
    m.add_class::<conditions::WhereRetained>()?;
    m.add_class::<ExactEngine>()?;
    m.add_class::<MultiExactEngine>()?;
    m.add_class::<OooExactEngine>()?;
    m.add_class::<OooSummaryEngine>()?;
    m.add_class::<SummaryEngine>()?;
    m.add_class::<NativeEvaluation>()?;
    m.add_class::<NativeTotals>()?;
    m.add_class::<NativeConfig>()?;
    m.add_class::<matches::MatchSet>()?;
    m.add_class::<matches::MatchCursor>()?;
    m.add("STRATEGIES", StrategyKind::NAMES.to_vec())?;
    m.add("POLICIES", Policy::NAMES.to_vec())?;
    m.add("AGGREGATES", Aggregate::NAMES.to_vec())?;
    m.add("STATE_FORMAT", FORMAT_VERSION)?;
    m.add("DEFAULT_MEMORY_LIMIT", DEFAULT_MAX_BYTES)?;
    m.add("MAX_SIZE", suse_kernel::engine::limits::MAX_SIZE)?;
    Ok(())
}
