//! Bindings of the conditions engine (`where`): conversion only; the Python side compiles the
//! conditions (suse/api/where.py) and the kernel counts (suse_kernel::conditions).
use crate::{guard, guard_ro};
use num_bigint::{BigInt, BigUint};
use numpy::PyReadonlyArray1;
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyString};
use suse_kernel::conditions::count::Count;
use suse_kernel::conditions::engine::{Compared, Engine, Ext, Saved, Spec, Totals};
use suse_kernel::conditions::program::{Instr, Program, Slot};
use suse_kernel::conditions::outlook::{Outlook, Part};
use suse_kernel::conditions::retained::{ClosingCount, Element, Retained};
use suse_kernel::exact::window::Closing;
use suse_kernel::conditions::value::{CmpOp, Value};
use suse_kernel::numbers::dual::Dual;
use suse_kernel::Error;

/// `(opcode, value, a, b)`: see `compile_program` in suse/api/where.py.
type InstrTuple<'py> = (String, Bound<'py, PyAny>, i64, i64);
type ProgramTuple<'py> = (char, Vec<InstrTuple<'py>>);

fn value(obj: &Bound<'_, PyAny>) -> Result<Value, Error> {
    if obj.is_none() {
        return Ok(Value::Null);
    }
    if let Ok(b) = obj.downcast::<PyBool>() {
        return Ok(Value::Bool(b.is_true()));
    }
    if let Ok(s) = obj.downcast::<PyString>() {
        return Ok(Value::Str(s.to_string_lossy().into()));
    }
    if let Ok(i) = obj.extract::<i64>() {
        return Ok(Value::Int(i));
    }
    if let Ok(i) = obj.extract::<BigInt>() {
        return Ok(Value::big_int(i));
    }
    let part = |name: &str| obj.getattr(name).and_then(|p| p.extract::<BigInt>()).ok();
    match (part("numerator"), part("denominator")) {
        (Some(n), Some(d)) if d != BigInt::from(0) => Ok(Value::ratio(num_rational::BigRational::new(n, d))),
        _ => Err(Error::input(format!("a condition value must be None, a bool, a str, an int or a Fraction, got {obj}"))),
    }
}

fn index(i: i64, what: &str) -> Result<usize, Error> {
    usize::try_from(i).map_err(|_| Error::input(format!("conditions: negative {what}")))
}

fn program((letter, code): ProgramTuple<'_>) -> Result<Program, Error> {
    let code = code
        .into_iter()
        .map(|(op, v, a, b)| {
            Ok(match op.as_str() {
                "const" => Instr::Const(value(&v)?),
                "current" => Instr::Current(index(a, "column")?),
                "last" => Instr::Last { slot: index(a, "slot")?, n: index(b, "offset")? },
                "first" => Instr::First {
                    slot: index(a, "slot")?,
                    n: index(b, "offset")?,
                    current: if v.is_none() { None } else { Some(v.extract::<usize>().map_err(|_| Error::input("conditions: bad column"))?) },
                },
                "negate" => Instr::Negate,
                "+" | "-" | "*" | "/" => Instr::Arithmetic(op.as_bytes()[0]),
                "not" => Instr::Not,
                "is null" => Instr::IsNull { negated: false },
                "is not null" => Instr::IsNull { negated: true },
                "and" => Instr::And(index(a, "arity")?),
                "or" => Instr::Or(index(a, "arity")?),
                other => Instr::Compare(CmpOp::parse(other).ok_or_else(|| Error::input(format!("conditions: unknown instruction {other:?}")))?),
            })
        })
        .collect::<Result<Vec<_>, Error>>()?;
    Ok(Program { code, letter })
}

/// An element as Python values: (letter index, timestamp, value, attribute values).
type HeldTuple<'py> = (usize, i64, u64, Vec<Bound<'py, PyAny>>);

/// A saved engine as Python values: see `WhereEngine::_snapshot`.
type SavedTuple<'py> = (Vec<HeldTuple<'py>>, TotalsTuple, u64, u64, Option<i64>);

/// (count, sum, partial count, (min, max) or None)
type TotalsTuple = (BigUint, BigUint, BigUint, Ext);

/// A condition value as Python sees it (the inverse of [`value`]).
fn py_value<'py>(py: Python<'py>, v: &Value) -> PyResult<Bound<'py, PyAny>> {
    Ok(match v {
        Value::Null => py.None().into_bound(py),
        Value::Int(i) => i.into_pyobject(py)?.into_any(),
        Value::Str(s) => PyString::new(py, s).into_any(),
        Value::Bool(b) => PyBool::new(py, *b).to_owned().into_any(),
        Value::Rat(r) => {
            let fraction = py.import("fractions")?.getattr("Fraction")?;
            fraction.call1((r.numer().clone(), r.denom().clone()))?
        }
    })
}

/// `(columns, slots as (letter, column, first, size), live[state][slot])`
type LayoutTuple = (usize, Vec<(usize, usize, bool, usize)>, Vec<Vec<bool>>);

/// `(program of the current side, op, slot, n, null_reference)`
type ComparedTuple<'py> = (ProgramTuple<'py>, String, usize, usize, bool);

#[pyclass(name = "WhereEngine", module = "suse._core")]
pub struct WhereEngine {
    inner: Engine,
    dead: Option<String>,
}

#[pymethods]
impl WhereEngine {
    /// `automaton`: (start, finals, delta[state][letter] with -1 for none); `layout`: (columns,
    /// slots as (letter, column, first, size), live[state][slot]); a program or None per
    /// letter; a compared form or None per letter; `extrema`: with MIN/MAX, per letter
    /// whether its values count.
    #[new]
    #[pyo3(signature = (automaton, layout, conditions, compared, window, max_keys, extrema=None))]
    fn new(
        automaton: (usize, Vec<bool>, Vec<Vec<i64>>),
        layout: LayoutTuple,
        conditions: Vec<Option<ProgramTuple<'_>>>,
        compared: Vec<Option<ComparedTuple<'_>>>,
        window: i64,
        max_keys: usize,
        extrema: Option<Vec<bool>>,
    ) -> PyResult<Self> {
        let mut dead = None;
        let inner = guard(&mut dead, || {
            let (start, finals, delta) = automaton;
            let (columns, slots, live) = layout;
            let delta = delta.into_iter().map(|row| row.into_iter().map(|t| usize::try_from(t).ok()).collect()).collect();
            let slots = slots.into_iter().map(|(letter, column, first, size)| Slot { letter, column, first, size }).collect();
            let conditions = conditions.into_iter().map(|p| p.map(program).transpose()).collect::<Result<_, _>>()?;
            let compared = compared
                .into_iter()
                .map(|c| {
                    c.map(|(current, op, slot, n, null_reference)| {
                        let op = CmpOp::parse(&op).ok_or_else(|| Error::input(format!("conditions: unknown comparison {op:?}")))?;
                        Ok(Compared { current: program(current)?, op, slot, n, null_reference })
                    })
                    .transpose()
                })
                .collect::<Result<_, Error>>()?;
            Engine::new(Spec { start, finals, delta, columns, slots, live, conditions, compared, window, max_keys, extrema })
        })?;
        Ok(WhereEngine { inner, dead: None })
    }

    /// Feed events (`letters`: one byte per event, the letter's index or 255 for a character
    /// outside the query; `columns[c][i]`: attribute column c of event i). Returns
    /// (time, count, sum, partial count) at each evaluation time (sorted), taken before the
    /// first event later than it.
    #[pyo3(signature = (letters, timestamps, values, columns, times=None))]
    fn extend(
        &mut self,
        letters: &[u8],
        timestamps: PyReadonlyArray1<'_, i64>,
        values: Option<PyReadonlyArray1<'_, i64>>,
        columns: Vec<Vec<Bound<'_, PyAny>>>,
        times: Option<PyReadonlyArray1<'_, i64>>,
    ) -> PyResult<Vec<Row>> {
        let ts = timestamps.as_array().to_vec();
        let vals = values.map(|v| v.as_array().to_vec());
        let times = times.map(|t| t.as_array().to_vec()).unwrap_or_default();
        let engine = &mut self.inner;
        guard(&mut self.dead, || {
            let n = letters.len();
            if ts.len() != n || vals.as_ref().is_some_and(|v| v.len() != n) || columns.iter().any(|c| c.len() != n) {
                return Err(Error::input("letters, timestamps, values and attribute columns differ in length"));
            }
            let columns = columns.iter().map(|c| c.iter().map(value).collect::<Result<Vec<_>, _>>()).collect::<Result<Vec<_>, _>>()?;
            let mut rows = Vec::with_capacity(times.len());
            let mut next = 0;
            for i in 0..n {
                while next < times.len() && times[next] < ts[i] {
                    rows.push(row(engine, times[next]));
                    next += 1;
                }
                let letter = (letters[i] != u8::MAX).then_some(letters[i] as usize);
                let attrs: Box<[Value]> = columns.iter().map(|c| c[i].clone()).collect();
                let v = vals.as_ref().map_or(0, |v| v[i].max(0) as u64);
                engine.feed(letter, ts[i], v, attrs).map_err(|e| match e {
                    Error::Input(m) => Error::Input(format!("event {i}: {m}")),
                    other => other,
                })?;
            }
            rows.extend(times[next..].iter().map(|&t| row(engine, t)));
            Ok(rows)
        })
    }

    /// (count, sum, partial count, (min, max) or None) over everything processed.
    fn totals(&self) -> TotalsTuple {
        totals_tuple(self.inner.totals())
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
    fn last_timestamp(&self) -> Option<i64> {
        self.inner.last_timestamp
    }

    /// What pickling keeps: `(elements held as (letter, timestamp, value, attributes),
    /// (count, sum, partial count), events, skipped, last timestamp)`; the counts are rebuilt.
    fn _snapshot<'py>(&self, py: Python<'py>) -> PyResult<SavedTuple<'py>> {
        let saved = self.inner.saved();
        let held = saved
            .held
            .into_iter()
            .map(|(letter, t, v, attrs)| Ok((letter, t, v, attrs.iter().map(|a| py_value(py, a)).collect::<PyResult<Vec<_>>>()?)))
            .collect::<PyResult<Vec<_>>>()?;
        Ok((held, totals_tuple(&saved.totals), saved.events, saved.skipped, saved.last_timestamp))
    }

    /// Take the state of a snapshot ([`WhereEngine::_snapshot`]) of an engine built alike;
    /// an edited snapshot is a `StateError`, and this engine is then unchanged.
    fn _load(&mut self, snapshot: SavedTuple<'_>) -> PyResult<()> {
        let spec = self.inner.spec().clone();
        let restored = guard_ro(|| {
            let (held, (count, sum, partial, extrema), events, skipped, last_timestamp) = snapshot;
            let held = held
                .into_iter()
                .map(|(letter, t, v, attrs)| Ok((letter, t, v, attrs.iter().map(value).collect::<Result<Box<[Value]>, Error>>()?)))
                .collect::<Result<Vec<_>, Error>>()?;
            let totals = Totals {
                matches: Dual { c: Count::from_biguint(count), s: Count::from_biguint(sum) },
                partial: Count::from_biguint(partial),
                extrema,
            };
            Engine::restore(spec, Saved { held, totals, events, skipped, last_timestamp })
        })?;
        self.inner = restored;
        self.dead = None;
        Ok(())
    }

    /// An independent copy (provisional evaluations of events not final yet run on one).
    fn copy(&self) -> Self {
        WhereEngine { inner: self.inner.clone(), dead: self.dead.clone() }
    }

    /// Register keys held now, and events of the window held for replaying.
    fn sizes(&self) -> (usize, usize) {
        (self.inner.keys(), self.inner.held())
    }
}

/// The elements a summary with conditions, or with a negation at the end of the pattern,
/// retains and the exact counts over them (`suse_kernel::conditions::retained`); the Python
/// side (suse/api/where_summary.py) chooses.
#[pyclass(name = "WhereRetained", module = "suse._core")]
pub struct WhereRetained {
    inner: Kept,
    dead: Option<String>,
    /// `suse`/`adaptive`: the estimator and expected-matches coefficients (see `expect`).
    outlook: Option<Outlook>,
}

/// The engine the retained elements are counted with.
enum Kept {
    Where(Box<Retained<Engine>>),
    Closing(Box<Retained<ClosingCount>>),
}

/// `$body` with `$r` bound to the retained elements, whatever engine counts them.
macro_rules! each {
    ($kept:expr, |$r:ident| $body:expr) => {
        match $kept {
            Kept::Where($r) => $body,
            Kept::Closing($r) => $body,
        }
    };
}

fn element(letter: usize, t: i64, v: u64, attrs: &[Bound<'_, PyAny>]) -> Result<Element, Error> {
    Ok((letter, t, v, attrs.iter().map(value).collect::<Result<Box<[Value]>, Error>>()?))
}

#[pymethods]
impl WhereRetained {
    /// Empty, counting with the specification of `engine` (a `WhereEngine`).
    #[new]
    fn new(engine: PyRef<'_, WhereEngine>) -> PyResult<Self> {
        let spec = engine.inner.spec().clone();
        Ok(WhereRetained { inner: Kept::Where(Box::new(guard_ro(|| Retained::new(spec))?)), dead: None, outlook: None })
    }

    /// Empty, counting as the exact engine does a negation at the end of the pattern:
    /// `dfa` (with the negated characters as letters), `closing` = (pending states, closed state).
    #[staticmethod]
    fn closing(dfa: &crate::PyDfa, window: i64, closing: (Vec<u32>, u32)) -> PyResult<Self> {
        let (pending, closed) = closing;
        let count = guard_ro(|| {
            let closing = Closing::new(&dfa.inner, pending, closed).map_err(Error::Input)?;
            ClosingCount::new(dfa.inner.clone(), window, closing)
        })?;
        Ok(WhereRetained { inner: Kept::Closing(Box::new(Retained::over(count))), dead: None, outlook: None })
    }

    /// Keep an element (letter index, timestamp, value, attribute values) no earlier than the last.
    fn push(&mut self, letter: usize, t: i64, v: u64, attrs: Vec<Bound<'_, PyAny>>) -> PyResult<()> {
        let inner = &mut self.inner;
        guard(&mut self.dead, || each!(inner, |r| r.push(element(letter, t, v, &attrs)?)))
    }

    /// Remove the elements at these positions and recount the rest.
    fn remove(&mut self, positions: Vec<usize>) -> PyResult<()> {
        let inner = &mut self.inner;
        guard(&mut self.dead, || each!(inner, |r| r.remove(&positions)))
    }

    /// Remove the elements at these positions and keep an element, with one recount; the
    /// totals (as `totals()`) before it joined. On an error nothing changes.
    fn replace(&mut self, positions: Vec<usize>, letter: usize, t: i64, v: u64, attrs: Vec<Bound<'_, PyAny>>) -> PyResult<TotalsTuple> {
        let inner = &mut self.inner;
        guard(&mut self.dead, || Ok(totals_tuple(&each!(inner, |r| r.replace(&positions, element(letter, t, v, &attrs)?))?)))
    }

    /// (count, sum, partial count, (min, max) or None) over the retained elements, as the
    /// engine counted them when they arrived.
    fn totals(&self) -> TotalsTuple {
        totals_tuple(&each!(&self.inner, |r| r.totals()))
    }

    /// The totals an evaluation at `at` reports (None: the stream is over). With a negation
    /// at the end of the pattern a match counts once its window has closed by `at`.
    #[pyo3(signature = (at=None))]
    fn totals_at(&self, at: Option<i64>) -> PyResult<TotalsTuple> {
        let inner = &self.inner;
        guard_ro(|| Ok(totals_tuple(&each!(inner, |r| r.totals_at(at))?)))
    }

    /// The totals were this element kept too, the stream over then (nothing changes).
    fn totals_with(&self, letter: usize, t: i64, v: u64, attrs: Vec<Bound<'_, PyAny>>) -> PyResult<TotalsTuple> {
        let inner = &self.inner;
        guard_ro(|| Ok(totals_tuple(&each!(inner, |r| r.with(&element(letter, t, v, &attrs)?))?)))
    }

    /// Per retained element, (number, sum) of the matches through it, the stream over
    /// (negative for a negated character's element: the matches it keeps from counting).
    fn through(&self) -> PyResult<Vec<(BigInt, BigInt)>> {
        let inner = &self.inner;
        guard_ro(|| Ok(each!(inner, |r| r.through(None))?.into_iter().map(|th| th.matches).collect()))
    }

    /// Rank by `suse`'s benefit (or `adaptive`'s) from now on: `probabilities` one per letter
    /// (normalised) or None to estimate them, `size` the summary's.
    fn expect(&mut self, probabilities: Option<Vec<f64>>, size: usize, adaptive: bool) -> PyResult<()> {
        let inner = &self.inner;
        self.outlook = Some(guard_ro(|| Outlook::new(each!(inner, |r| r.outlook_dfa())?, probabilities, size, each!(inner, |r| r.window()), adaptive))?);
        Ok(())
    }

    /// Learn an arriving element (letter index, timestamp, value) before deciding on it.
    fn observe(&mut self, letter: usize, t: i64, v: u64) -> PyResult<()> {
        let outlook = self.outlook_mut()?;
        guard_ro(|| outlook.observe(letter, t, v))
    }

    /// Take back the last `observe` (its element changed nothing).
    fn unobserve(&mut self) -> PyResult<()> {
        self.outlook_mut()?.unobserve();
        Ok(())
    }

    /// The retained element this one replaces (None: drop it): `suse`'s or `adaptive`'s
    /// ranking at the element's time. `may_block`: a retained element may have a benefit
    /// below 0; `sum`: rank by the matches' values.
    fn choose(&mut self, letter: usize, t: i64, v: u64, attrs: Vec<Bound<'_, PyAny>>, may_block: bool, sum: bool) -> PyResult<Option<usize>> {
        let outlook = self.outlook.as_mut().ok_or_else(no_outlook)?;
        let inner = &self.inner;
        let part = if sum { Part::Sum } else { Part::Count };
        guard_ro(|| each!(inner, |r| outlook.choose(r, &element(letter, t, v, &attrs)?, may_block, part)))
    }

    /// Per retained element, (present, expected) benefit at time `now`.
    fn benefits(&mut self, now: i64, sum: bool) -> PyResult<Vec<(f64, f64)>> {
        let outlook = self.outlook.as_mut().ok_or_else(no_outlook)?;
        let inner = &self.inner;
        let part = if sum { Part::Sum } else { Part::Count };
        guard_ro(|| each!(inner, |r| outlook.benefits(r, now, part)))
    }

    /// The estimator's state, to save (see `restore_outlook`).
    fn outlook_state<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, pyo3::types::PyBytes>> {
        let outlook = self.outlook.as_ref().ok_or_else(no_outlook)?;
        Ok(pyo3::types::PyBytes::new(py, &outlook.saved()))
    }

    fn restore_outlook(&mut self, state: &[u8]) -> PyResult<()> {
        let outlook = self.outlook_mut()?;
        guard_ro(|| outlook.restore(state))
    }

    /// The retained elements as (letter index, timestamp, value, attribute values).
    fn elements<'py>(&self, py: Python<'py>) -> PyResult<Vec<HeldTuple<'py>>> {
        each!(&self.inner, |r| r.elements())
            .iter()
            .map(|(letter, t, v, attrs)| Ok((*letter, *t, *v, attrs.iter().map(|a| py_value(py, a)).collect::<PyResult<Vec<_>>>()?)))
            .collect()
    }

    fn __len__(&self) -> usize {
        each!(&self.inner, |r| r.len())
    }
}

impl WhereRetained {
    fn outlook_mut(&mut self) -> PyResult<&mut Outlook> {
        self.outlook.as_mut().ok_or_else(no_outlook)
    }
}

fn no_outlook() -> PyErr {
    crate::to_py(Error::input("no expectation: call expect() first"))
}

/// (time, count, sum, partial count, (min, max) or None)
type Row = (i64, BigUint, BigUint, BigUint, Ext);

fn row(engine: &Engine, t: i64) -> Row {
    let (count, sum, partial, extremes) = totals_tuple(engine.totals());
    (t, count, sum, partial, extremes)
}

fn totals_tuple(t: &Totals) -> TotalsTuple {
    (t.matches.c.to_biguint(), t.matches.s.to_biguint(), t.partial.to_biguint(), t.extrema)
}
