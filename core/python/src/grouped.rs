//! Many partitions in one call (the Spark runner): each group of sorted events runs on its own
//! copy of a fresh summary, and the evaluations come back column by column, ready to become
//! Arrow arrays without a Python object per row.
use super::*;
use suse_kernel::engine::batch::check_evals;
use suse_kernel::engine::shared::SharedPass;
use num_bigint::BigUint;
use numpy::{PyArray1, PyReadonlyArray1};
use pyo3::types::{PyBytes, PyDict};

/// Decimal strings back to back, with offsets (Arrow's 32-bit `string` layout once returned).
struct Text {
    data: Vec<u8>,
    offsets: Vec<i64>,
}

impl Text {
    fn new() -> Self {
        Text { data: Vec::new(), offsets: vec![0] }
    }

    fn push(&mut self, n: &BigUint) {
        self.data.extend_from_slice(n.to_str_radix(10).as_bytes());
        self.offsets.push(self.data.len() as i64);
    }
}

/// Integers a double holds exactly: above 2^53 Python's correctly rounded conversion decides.
fn exact_f64(n: &BigUint) -> Option<f64> {
    u64::try_from(n).ok().filter(|&x| x <= 1 << 53).map(|x| x as f64)
}

/// One evaluation of one group, as the snapshot gives it.
struct Snap {
    t: i64,
    count: BigUint,
    sum: BigUint,
    detected: BigUint,
    elements: Vec<(u8, i64, u64)>,
}

/// One query's result rows, column by column.
struct Columns {
    group: Vec<i64>,
    evaluated_at: Vec<i64>,
    events: Vec<i64>,
    count_double: Vec<f64>,
    sum_double: Vec<f64>,
    avg: Vec<f64>, // NaN where count is 0 (the caller masks those rows as NULL)
    big: Vec<i64>, // rows whose doubles Python must compute (a count or sum above 2^53)
    count: Text,
    sum: Text,
    detected: Text,
    element_offsets: Vec<i64>,
    element_chars: Vec<u8>, // UTF-8 of each element's character, one per element
    element_char_offsets: Vec<i64>,
    element_ts: Vec<i64>,
    element_values: Vec<i64>,
}

impl Columns {
    fn new() -> Self {
        Columns {
            group: Vec::new(),
            evaluated_at: Vec::new(),
            events: Vec::new(),
            count_double: Vec::new(),
            sum_double: Vec::new(),
            avg: Vec::new(),
            big: Vec::new(),
            count: Text::new(),
            sum: Text::new(),
            detected: Text::new(),
            element_offsets: vec![0],
            element_chars: Vec::new(),
            element_char_offsets: vec![0],
            element_ts: Vec::new(),
            element_values: Vec::new(),
        }
    }

    /// The row of group `g` at one evaluation; `ts`: the timestamps of the events the query
    /// was fed in that group.
    fn push(&mut self, g: usize, r: Snap, ts: &[i64]) {
        let row = self.group.len() as i64;
        self.group.push(g as i64);
        self.evaluated_at.push(r.t);
        self.events.push(ts.partition_point(|&x| x <= r.t) as i64);
        let (cd, sd) = (exact_f64(&r.count), exact_f64(&r.sum));
        self.count_double.push(cd.unwrap_or(f64::NAN));
        self.sum_double.push(sd.unwrap_or(f64::NAN));
        self.avg.push(match (cd, sd) {
            (Some(x), Some(y)) if x > 0.0 => y / x,
            _ => f64::NAN,
        });
        if cd.is_none() || sd.is_none() {
            self.big.push(row);
        }
        self.count.push(&r.count);
        self.sum.push(&r.sum);
        self.detected.push(&r.detected);
        for (ch, t, v) in r.elements {
            let mut buf = [0u8; 4];
            self.element_chars.extend_from_slice((ch as char).encode_utf8(&mut buf).as_bytes());
            self.element_char_offsets.push(self.element_chars.len() as i64);
            self.element_ts.push(t);
            self.element_values.push(v as i64);
        }
        self.element_offsets.push(self.element_ts.len() as i64);
    }

    fn into_dict(self, py: Python<'_>) -> PyResult<Bound<'_, PyDict>> {
        let d = PyDict::new(py);
        // Arrow `string` and `list` arrays take 32-bit offsets: no cast on the Python side.
        let narrow = |o: Vec<i64>| -> PyResult<Vec<i32>> {
            o.into_iter().map(i32::try_from).collect::<Result<_, _>>().map_err(|_| InputError::new_err("one batch of results holds more than 2 GiB of text; use smaller Arrow batches"))
        };
        d.set_item("group", PyArray1::from_vec(py, self.group))?;
        d.set_item("evaluated_at", PyArray1::from_vec(py, self.evaluated_at))?;
        d.set_item("events", PyArray1::from_vec(py, self.events))?;
        for (name, text) in [("count", self.count), ("sum", self.sum), ("detected_count", self.detected)] {
            d.set_item(name, (PyBytes::new(py, &text.data), PyArray1::from_vec(py, narrow(text.offsets)?)))?;
        }
        d.set_item("count_double", PyArray1::from_vec(py, self.count_double))?;
        d.set_item("sum_double", PyArray1::from_vec(py, self.sum_double))?;
        d.set_item("avg", PyArray1::from_vec(py, self.avg))?;
        d.set_item("big", PyArray1::from_vec(py, self.big))?;
        d.set_item("element_offsets", PyArray1::from_vec(py, narrow(self.element_offsets)?))?;
        d.set_item("element_chars", (PyBytes::new(py, &self.element_chars), PyArray1::from_vec(py, narrow(self.element_char_offsets)?)))?;
        d.set_item("element_ts", PyArray1::from_vec(py, self.element_ts))?;
        d.set_item("element_values", PyArray1::from_vec(py, self.element_values))?;
        Ok(d)
    }
}

/// The template must be a summary that reports counts and sums and has seen nothing.
fn check_template(template: &SummaryEngine) -> PyResult<()> {
    if template.out.extrema || template.labels.is_some() {
        return Err(InputError::new_err("summary_groups reports counts and sums only (no min/max, no approximate matching)"));
    }
    if template.last_t.is_some() || template.inner.counts().0 > 0 || template.dead.is_some() {
        return Err(InputError::new_err("summary_groups needs a summary that has seen no event"));
    }
    Ok(())
}

/// Run one group's events (sorted) on a copy of `template`, snapshotting at `evals`.
fn run_summary(template: &SummaryEngine, chars: &[u8], ts: &[i64], vals: Option<&[i64]>, evals: &[i64]) -> Result<Vec<Snap>, Error> {
    let (fresh, out) = (&template.inner, &template.out);
    let dfa = fresh.dfa().clone();
    let batch = Batch::new(chars, ts, vals, evals, None)?;
    let mut s = fresh.clone();
    batch.run(&mut s, &dfa, |s, raw| s.feed(out.mask(raw)), |s, t| {
        let r = s.readout();
        let (count, sum, _) = split_totals(s.dfa(), &r.g);
        let alphabet = &s.dfa().alphabet;
        let elements = s.elements().iter().map(|e| (alphabet[e.sym as usize], e.t, e.v)).collect();
        Snap { t, count, sum, detected: r.detected.c, elements }
    })
}

/// Each group's packed events (`offsets[g]..offsets[g+1]`), sorted: a copy of `packed`,
/// whose values are `(time << bits) | rank`, so that their order is that of (time, rank).
/// Events equal in both are alike when there are no values, so no order among them matters.
#[pyfunction]
pub(crate) fn sort_packed_groups<'py>(
    py: Python<'py>,
    offsets: PyReadonlyArray1<'_, i64>,
    packed: PyReadonlyArray1<'_, i64>,
) -> PyResult<Bound<'py, PyArray1<i64>>> {
    let offs = offsets.as_slice()?;
    let mut sorted = packed.as_slice()?.to_vec();
    check_offsets("offsets", offs, sorted.len()).map_err(to_py)?;
    for g in offs.windows(2) {
        sorted[g[0] as usize..g[1] as usize].sort_unstable();
    }
    Ok(PyArray1::from_vec(py, sorted))
}

fn check_offsets(name: &str, offsets: &[i64], total: usize) -> Result<(), Error> {
    if offsets.first() != Some(&0) || offsets.last() != Some(&(total as i64)) || offsets.windows(2).any(|w| w[1] < w[0]) {
        return Err(Error::input(format!("{name} must rise from 0 to {total}")));
    }
    Ok(())
}

/// Run every group `g` (events `offsets[g]..offsets[g+1]`, evaluation times
/// `eval_offsets[g]..eval_offsets[g+1]`) on a copy of `template`, a summary that has seen no
/// event. Returns a dict of columns: `group`, `evaluated_at`, `events` (events of the group at
/// or before the time), `count`/`sum`/`detected_count` as (bytes, offsets) decimal text,
/// `count_double`, `sum_double`, `avg`, `big` and the retained elements flattened.
#[pyfunction]
#[pyo3(signature = (template, chars, timestamps, values, offsets, evaluate_at, eval_offsets))]
#[allow(clippy::too_many_arguments)]
pub(crate) fn summary_groups<'py>(
    py: Python<'py>,
    template: &SummaryEngine,
    chars: &[u8],
    timestamps: PyReadonlyArray1<'_, i64>,
    values: Option<PyReadonlyArray1<'_, i64>>,
    offsets: PyReadonlyArray1<'_, i64>,
    evaluate_at: PyReadonlyArray1<'_, i64>,
    eval_offsets: PyReadonlyArray1<'_, i64>,
) -> PyResult<Bound<'py, PyDict>> {
    check_template(template)?;
    let ts = timestamps.as_array().to_vec();
    let vals = array(&values);
    let offs = offsets.as_array().to_vec();
    let evals = evaluate_at.as_array().to_vec();
    let eval_offs = eval_offsets.as_array().to_vec();
    let cols = py.allow_threads(|| {
        guard_ro(|| {
            check_offsets("offsets", &offs, chars.len())?;
            check_offsets("eval_offsets", &eval_offs, evals.len())?;
            if offs.len() != eval_offs.len() {
                return Err(Error::input(format!("{} groups of events but {} of evaluation times", offs.len() - 1, eval_offs.len() - 1)));
            }
            let mut c = Columns::new();
            for g in 0..offs.len() - 1 {
                let (a, b) = (offs[g] as usize, offs[g + 1] as usize);
                let group_evals = &evals[eval_offs[g] as usize..eval_offs[g + 1] as usize];
                for r in run_summary(template, &chars[a..b], &ts[a..b], vals.as_deref().map(|v| &v[a..b]), group_evals)? {
                    c.push(g, r, &ts[a..b]);
                }
            }
            Ok(c)
        })
    })?;
    cols.into_dict(py)
}

/// A query set's groups in one call: `templates` holds one fresh summary per query, the
/// arrays hold every query's events together, and each query is fed the events of its
/// letters (and negated characters; every event under contiguity), as alone. Returns one
/// dict per query, the rows `summary_groups` gives for that query on its own events.
///
/// Sharing: a summary that never has to evict counts exactly what the exact window counts
/// over its events (`Summary::settle`). So in each group, the skip-till-any-match queries
/// without negation, `of` or time to live whose events fit their summary are answered by
/// one exact engine for all of them (`MultiExact`: a merged automaton where that is
/// smaller), and only the other queries run their summaries.
#[pyfunction]
#[pyo3(signature = (templates, chars, timestamps, values, offsets, evaluate_at, eval_offsets))]
#[allow(clippy::too_many_arguments)]
pub(crate) fn summary_set_groups<'py>(
    py: Python<'py>,
    templates: Vec<PyRef<'py, SummaryEngine>>,
    chars: &[u8],
    timestamps: PyReadonlyArray1<'_, i64>,
    values: Option<PyReadonlyArray1<'_, i64>>,
    offsets: PyReadonlyArray1<'_, i64>,
    evaluate_at: Vec<PyReadonlyArray1<'py, i64>>,
    eval_offsets: Vec<PyReadonlyArray1<'py, i64>>,
) -> PyResult<Vec<Bound<'py, PyDict>>> {
    for t in &templates {
        check_template(t)?;
    }
    if evaluate_at.len() != templates.len() || eval_offsets.len() != templates.len() {
        return Err(InputError::new_err(format!(
            "{} queries but {} lists of evaluation times and {} of their offsets",
            templates.len(),
            evaluate_at.len(),
            eval_offsets.len()
        )));
    }
    let ts = timestamps.as_array().to_vec();
    let vals = array(&values);
    let offs = offsets.as_array().to_vec();
    let evals: Vec<Vec<i64>> = evaluate_at.iter().map(|e| e.as_array().to_vec()).collect();
    let eval_offs: Vec<Vec<i64>> = eval_offsets.iter().map(|e| e.as_array().to_vec()).collect();
    let engines: Vec<&SummaryEngine> = templates.iter().map(|t| &**t).collect();
    let cols = py.allow_threads(|| guard_ro(|| run_set(&engines, chars, &ts, vals.as_deref(), &offs, &evals, &eval_offs)))?;
    cols.into_iter().map(|c| c.into_dict(py)).collect()
}

fn run_set(templates: &[&SummaryEngine], chars: &[u8], ts: &[i64], vals: Option<&[i64]>, offs: &[i64], evals: &[Vec<i64>], eval_offs: &[Vec<i64>]) -> Result<Vec<Columns>, Error> {
    check_offsets("offsets", offs, chars.len())?;
    for (e, o) in evals.iter().zip(eval_offs) {
        check_offsets("eval_offsets", o, e.len())?;
        if o.len() != offs.len() {
            return Err(Error::input(format!("{} groups of events but {} of evaluation times", offs.len() - 1, o.len() - 1)));
        }
        // Checked here too: the shared engine reads them merged, where no order is left to check.
        for g in o.windows(2) {
            check_evals(&e[g[0] as usize..g[1] as usize])?;
        }
    }
    let n = templates.len();
    let keep: Vec<Vec<bool>> = templates.iter().map(|t| (0..=255u8).map(|b| t.inner.reads(b)).collect()).collect();
    let summaries: Vec<&KSummary> = templates.iter().map(|t| &t.inner).collect();
    // MIN/MAX (a mask) is not in the shared pass: those summaries run on their own.
    let own: Vec<bool> = templates.iter().map(|t| t.out.mask.is_some()).collect();
    let shared = SharedPass::plan(&summaries, &own, &Limits::default());
    let mut out: Vec<Columns> = (0..n).map(|_| Columns::new()).collect();
    for g in 0..offs.len() - 1 {
        let (a, b) = (offs[g] as usize, offs[g + 1] as usize);
        let (gc, gt, gv) = (&chars[a..b], &ts[a..b], vals.map(|v| &v[a..b]));
        let times_of = |q: usize| &evals[q][eval_offs[q][g] as usize..eval_offs[q][g + 1] as usize];
        let fed: Vec<Vec<usize>> = keep.iter().map(|k| (0..gc.len()).filter(|&i| k[gc[i] as usize]).collect()).collect();
        let q_ts: Vec<Vec<i64>> = fed.iter().map(|f| f.iter().map(|&i| gt[i]).collect()).collect();
        let mut snaps: Vec<Option<Vec<Snap>>> = (0..n).map(|_| None).collect();
        if let Some(pass) = &shared {
            let now = pass.holding(&summaries, |q| fed[q].len());
            if now.len() > 1 {
                let mut times: Vec<i64> = now.iter().flat_map(|&k| times_of(pass.members[k]).iter().copied()).collect();
                times.sort_unstable();
                times.dedup();
                let rows = pass.engine.clone().extend(gc, gt, gv, &times)?;
                for &k in &now {
                    let q = pass.members[k];
                    let mut list = Vec::with_capacity(times_of(q).len());
                    for &t in times_of(q) {
                        let j = times.binary_search(&t).map_err(|_| Error::internal("an evaluation time is missing from the shared ones"))?;
                        let (count, sum, _) = rows[k].get(j).filter(|r| r.0 == t).ok_or_else(|| Error::internal("the shared engine skipped an evaluation"))?.1.clone();
                        let upto = q_ts[q].partition_point(|&x| x <= t);
                        let elements = fed[q][..upto].iter().map(|&i| (gc[i], gt[i], gv.map_or(1, |v| v[i] as u64))).collect();
                        list.push(Snap { t, detected: count.clone(), count, sum, elements });
                    }
                    snaps[q] = Some(list);
                }
            }
        }
        for q in 0..n {
            let list = match snaps[q].take() {
                Some(list) => list,
                None => {
                    let qc: Vec<u8> = fed[q].iter().map(|&i| gc[i]).collect();
                    let qv: Option<Vec<i64>> = gv.map(|v| fed[q].iter().map(|&i| v[i]).collect());
                    run_summary(templates[q], &qc, &q_ts[q], qv.as_deref(), times_of(q))?
                }
            };
            for r in list {
                out[q].push(g, r, &q_ts[q]);
            }
        }
    }
    Ok(out)
}

/// The order that sorts each group `offsets[g]..offsets[g+1]` by (timestamp, rank, tie), as
/// indices into the arrays: the batch runner's gathered layout collects a partition's events
/// unordered, and one sort per group is cheaper than one over the whole batch.
#[pyfunction]
#[pyo3(signature = (offsets, timestamps, ranks, ties=None))]
pub(crate) fn sort_groups<'py>(
    py: Python<'py>,
    offsets: PyReadonlyArray1<'_, i64>,
    timestamps: PyReadonlyArray1<'_, i64>,
    ranks: PyReadonlyArray1<'_, i32>,
    ties: Option<PyReadonlyArray1<'_, i64>>,
) -> PyResult<Bound<'py, PyArray1<i64>>> {
    let (offs, ts, rk) = (offsets.as_slice()?, timestamps.as_slice()?, ranks.as_slice()?);
    let tie = ties.as_ref().map(|t| t.as_slice()).transpose()?;
    if rk.len() != ts.len() || tie.is_some_and(|t| t.len() != ts.len()) {
        return Err(InputError::new_err("timestamps, ranks and ties must have one entry per event"));
    }
    check_offsets("offsets", offs, ts.len()).map_err(to_py)?;
    let mut order: Vec<i64> = (0..ts.len() as i64).collect();
    for g in offs.windows(2) {
        let part = &mut order[g[0] as usize..g[1] as usize];
        let key = |&i: &i64| (ts[i as usize], rk[i as usize], tie.map_or(0, |t| t[i as usize]));
        if !part.windows(2).all(|w| key(&w[0]) <= key(&w[1])) {
            part.sort_by_key(key); // stable: equal events keep their order
        }
    }
    Ok(PyArray1::from_vec(py, order))
}
