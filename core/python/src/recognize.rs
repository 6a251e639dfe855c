//! The standard's row-pattern matcher (`suse._core.recognize_run`): DEFINE conditions come as
//! a table of flags (row-local ones, decided by Spark) or as a Python callable.
use crate::guard_ro;
use numpy::PyArray1;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyList};
use suse_kernel::engine::error::Error;
use suse_kernel::recognize::{self as rec, stretch, Acceptor, Cursor, End, Failure, Item, MemoScope, Options, Program, SkipMode};

/// The conditions as Python sees them: flags per variable and row, or `accept(var, row,
/// start, labels)` with `labels` the match so far (one list, kept in step with the matcher's).
struct Conditions<'py> {
    table: Option<Vec<&'py [u8]>>,
    accept: Option<Bound<'py, PyAny>>,
    labels: Bound<'py, PyList>,
    beyond: Option<Bound<'py, PyAny>>,
}

impl Acceptor<PyErr> for Conditions<'_> {
    fn accept(&mut self, var: u32, row: usize, start: usize, _labels: &[u32]) -> PyResult<bool> {
        match (&self.table, &self.accept) {
            (Some(rows), _) => Ok(rows[var as usize][row] != 0),
            (None, Some(f)) => f.call1((var, row, start, &self.labels))?.is_truthy(),
            (None, None) => Ok(true),
        }
    }
    fn pushed(&mut self, var: u32) {
        if self.accept.is_some() {
            self.labels.append(var).expect("appending an int to a list");
        }
    }
    fn truncated(&mut self, len: usize) {
        if self.accept.is_some() && self.labels.len() > len {
            self.labels.del_slice(len, self.labels.len()).expect("deleting a slice of a list");
        }
    }
    fn open(&self) -> bool {
        self.beyond.is_some()
    }
    fn beyond(&mut self, start: usize) -> PyResult<bool> {
        match &self.beyond {
            Some(f) => f.call1((start,))?.is_truthy(),
            None => Ok(false),
        }
    }
}

/// A program the kernel can run without indexing out of bounds.
fn checked(code: Vec<(u32, u32, u32)>, registers: usize, variables: usize) -> Result<Program, Error> {
    let len = code.len() as u32;
    let bad = |what: String| Err(Error::Input(format!("row pattern program: {what}")));
    if code.last().map(|c| c.0) != Some(rec::MATCH) {
        return bad("it does not end in MATCH".into());
    }
    for (i, &(op, a, b)) in code.iter().enumerate() {
        let fits = match op {
            rec::VAR => (a as usize) < variables,
            rec::SPLIT => a < len && b < len,
            rec::JMP => a < len,
            rec::MARK | rec::PROGRESS => (a as usize) < registers,
            rec::START | rec::END | rec::EXCL_ON | rec::EXCL_OFF | rec::MATCH => true,
            _ => false,
        };
        if !fits {
            return bad(format!("instruction {i} ({op}, {a}, {b}) is out of range"));
        }
    }
    Ok(Program { code, registers })
}

type PyOptions = (String, u64, i64, String, Vec<u32>, String);

/// The checked program and the options (memo scope, max steps, base, skip mode, its target
/// variables and their name); `rows`, when given, must hold every variable's flags for `n` rows.
fn prepare(program: (Vec<(u32, u32, u32)>, usize, usize), options: PyOptions, rows: Option<&[&[u8]]>, n: usize)
           -> Result<(Program, Options), Error> {
    let (code, registers, variables) = program;
    let (memo, max_steps, base, skip, targets, name) = options;
    let program = checked(code, registers, variables)?;
    if let Some(rows) = rows {
        if rows.len() != variables || rows.iter().any(|r| r.len() < n) {
            return Err(Error::Input(format!("row pattern table: {} variables of {n} rows expected", variables)));
        }
    }
    let memo = match memo.as_str() {
        "partition" => MemoScope::Partition,
        "start" => MemoScope::Start,
        "none" => MemoScope::None,
        other => return Err(Error::Input(format!("unknown memo scope {other:?}"))),
    };
    let skip = match skip.as_str() {
        "past" => SkipMode::PastLastRow,
        "next" => SkipMode::NextRow,
        "first" => SkipMode::ToFirst { targets, name },
        "last" => SkipMode::ToLast { targets, name },
        other => return Err(Error::Input(format!("unknown skip mode {other:?}"))),
    };
    Ok((program, Options { memo, max_steps, base, skip }))
}

type PyItem = (bool, usize, u64, Vec<u32>, Vec<bool>, (usize, i64, u64), Vec<Option<usize>>);

/// A navigation measure read at the end of each match: (the variables its qualifier stands for,
/// None: every row; FIRST?; index; physical offset).
type PyNav = (Option<Vec<u32>>, bool, usize, i64);

/// The conditions' three forms: (flags table, `accept` callable, streaming `beyond` callable).
type PyConditions<'py> = (Option<Vec<Bound<'py, PyBytes>>>, Option<Bound<'py, PyAny>>, Option<Bound<'py, PyAny>>);

/// Every match of a partition of `n` rows from `cursor` (pos, covered, number), as
/// (is a match, start or unmatched row, number, labels, excluded, cursor after), then how
/// it ended: None, "undecided", or the exception to raise after the items. A match also
/// carries the partition row each of `navs` reads over the whole match (None: outside 0..n).
#[pyfunction]
#[pyo3(signature = (program, n, conditions, options, cursor, navs=Vec::new()))]
#[allow(clippy::type_complexity)]
pub fn recognize_run<'py>(
    py: Python<'py>,
    program: (Vec<(u32, u32, u32)>, usize, usize),
    n: usize,
    conditions: PyConditions<'py>,
    options: PyOptions,
    cursor: (usize, i64, u64),
    navs: Vec<PyNav>,
) -> PyResult<(Vec<PyItem>, Option<PyObject>, (usize, i64, u64))> {
    let (table, accept, beyond) = conditions;
    let rows: Option<Vec<&[u8]>> = table.as_ref().map(|t| t.iter().map(|b| b.as_bytes()).collect());
    let prepared = guard_ro(|| prepare(program, options, rows.as_deref(), n))?;
    let (program, opts) = prepared;
    let mut conditions = Conditions { table: rows, accept, labels: PyList::empty(py), beyond };
    let start = Cursor { pos: cursor.0, covered: cursor.1, number: cursor.2 };
    let (items, end, last) = guard_ro(|| Ok(rec::run(&program, n, &mut conditions, &opts, start)))?;
    let items = items
        .into_iter()
        .map(|(item, c)| {
            let after = (c.pos, c.covered, c.number);
            match item {
                Item::Match { number, start, labels, excluded } => {
                    let reads = navs.iter().map(|nav| nav_row(nav, start, &labels, n)).collect();
                    (true, start, number, labels, excluded, after, reads)
                }
                Item::Unmatched { row } => (false, row, 0, Vec::new(), Vec::new(), after, Vec::new()),
            }
        })
        .collect();
    let end = match end {
        End::Done => None,
        End::Undecided => Some("undecided".into_pyobject(py)?.into_any().unbind()),
        End::Failed(f) => Some(failure(py, f)?),
    };
    Ok((items, end, (last.pos, last.covered, last.number)))
}

/// The partition row `nav` reads over the whole match at `start` labelled `labels`.
fn nav_row(nav: &PyNav, start: usize, labels: &[u32], n: usize) -> Option<usize> {
    let (members, first, index, physical) = nav;
    stretch::Nav { members, first: *first, index: *index, physical: *physical }.row(start, labels, labels.len(), n)
}

/// The position in the match that `FIRST`/`LAST(qual, index)` reads among its first `upto` rows
/// labelled `labels` (a sequence of variable indices), counting the rows whose label is in
/// `members` (None: every row); None when there are not that many.
#[pyfunction]
pub fn recognize_nav_position(labels: &Bound<'_, PyAny>, upto: usize, members: Option<&Bound<'_, PyAny>>, first: bool,
                              index: usize) -> PyResult<Option<usize>> {
    rec::nav_position(upto, first, index, |i| match members {
        None => Ok(true),
        Some(m) => m.contains(labels.get_item(i)?),
    })
}

/// The exception a failure raises in Python.
fn failure(py: Python<'_>, f: Failure<PyErr>) -> PyResult<PyObject> {
    match f {
        Failure::Caller(e) => Ok(e.into_value(py).into_any()),
        Failure::Limit(m) => error(py, "BacktrackingLimitError", m),
        Failure::Skip(m) => error(py, "RecognizeError", m),
    }
}

/// A MEASURES leaf the kernel reads (`stretch::Measure`): ("row" | "count" | "classifier",
/// the variables of its qualifier or None, over the whole match?, FIRST?, index, physical).
type PyMeasure = (String, Option<Vec<u32>>, bool, bool, usize, i64);

/// The output columns of a stretch: (rows, kinds, match numbers, one column per measure) and
/// the first failure (its partition's first row and the exception; the columns are then empty), or None.
type PyStretch<'py> = (Bound<'py, PyArray1<i64>>, Bound<'py, PyArray1<u8>>, Bound<'py, PyArray1<i64>>,
                       Vec<Bound<'py, PyArray1<i64>>>, Option<(usize, PyObject)>);

/// Match every partition `bounds[i] .. bounds[i + 1]` of a stretch whose DEFINE conditions are
/// the flags `table[var]` (one byte per stretch row, 1: holds) and give the output rows as
/// flat columns (`suse_kernel::recognize::stretch`): `shape` is (ALL ROWS PER MATCH?, "show" |
/// "omit" | "unmatched").
#[pyfunction]
pub fn recognize_stretch<'py>(
    py: Python<'py>,
    program: (Vec<(u32, u32, u32)>, usize, usize),
    table: Vec<Bound<'py, PyBytes>>,
    bounds: Vec<usize>,
    options: PyOptions,
    shape: (bool, String),
    measures: Vec<PyMeasure>,
) -> PyResult<PyStretch<'py>> {
    let rows: Vec<&[u8]> = table.iter().map(|b| b.as_bytes()).collect();
    let n = bounds.last().copied().unwrap_or(0);
    let (program, opts, shape, measures) = guard_ro(|| {
        let (program, opts) = prepare(program, options, Some(&rows), n)?;
        if bounds.windows(2).any(|w| w[0] > w[1]) {
            return Err(Error::Input("row pattern partitions: bounds must not decrease".into()));
        }
        let shape = match (shape.0, shape.1.as_str()) {
            (false, _) => stretch::Shape::OneRow,
            (true, "show") => stretch::Shape::AllRows { show_empty: true, unmatched: false },
            (true, "omit") => stretch::Shape::AllRows { show_empty: false, unmatched: false },
            (true, "unmatched") => stretch::Shape::AllRows { show_empty: true, unmatched: true },
            (true, other) => return Err(Error::Input(format!("unknown empty-match option {other:?}"))),
        };
        let measures = measures
            .into_iter()
            .map(|(what, members, whole, first, index, physical)| {
                let what = match what.as_str() {
                    "row" => stretch::Reads::Row { first, index, physical },
                    "count" => stretch::Reads::Count,
                    "classifier" => stretch::Reads::Classifier,
                    other => return Err(Error::Input(format!("unknown measure {other:?}"))),
                };
                Ok(stretch::Measure { what, members, whole })
            })
            .collect::<Result<Vec<_>, Error>>()?;
        Ok((program, opts, shape, measures))
    })?;
    let (out, failed) = match guard_ro(|| Ok(stretch::run_stretch(&program, &rows, &bounds, &opts, shape, &measures)))? {
        Ok(out) => (out, None),
        Err((at, f)) => {
            let f = match f {
                Failure::Caller(never) => match never {},
                Failure::Limit(m) => Failure::Limit(m),
                Failure::Skip(m) => Failure::Skip(m),
            };
            (stretch::Output::default(), Some((at, failure(py, f)?)))
        }
    };
    let columns = out.measures.into_iter().map(|m| PyArray1::from_vec(py, m)).collect();
    Ok((PyArray1::from_vec(py, out.rows), PyArray1::from_vec(py, out.kinds), PyArray1::from_vec(py, out.numbers), columns,
        failed))
}

fn error(py: Python<'_>, class: &str, message: String) -> PyResult<PyObject> {
    let module = py.import("suse.recognize.matcher")?;
    Ok(module.getattr(class)?.call1((message,))?.unbind())
}
