//! Many partitions in one call (the Spark runner): each group of sorted events runs on its own
//! copy of a fresh summary, and the evaluations come back column by column, ready to become
//! Arrow arrays without a Python object per row.
use super::*;
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

#[derive(Default)]
struct Columns {
    group: Vec<i64>,
    evaluated_at: Vec<i64>,
    events: Vec<i64>,
    count_double: Vec<f64>,
    sum_double: Vec<f64>,
    avg: Vec<f64>, // NaN where count is 0 (the caller masks those rows as NULL)
    big: Vec<i64>, // rows whose doubles Python must compute (a count or sum above 2^53)
    element_offsets: Vec<i64>,
    element_chars: Vec<u8>, // UTF-8 of each element's character, one per element
    element_char_offsets: Vec<i64>,
    element_ts: Vec<i64>,
    element_values: Vec<i64>,
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
    if template.out.extrema || template.labels.is_some() {
        return Err(InputError::new_err("summary_groups reports counts and sums only (no min/max, no approximate matching)"));
    }
    if template.last_t.is_some() || template.inner.counts().0 > 0 || template.dead.is_some() {
        return Err(InputError::new_err("summary_groups needs a summary that has seen no event"));
    }
    let ts = timestamps.as_array().to_vec();
    let vals = array(&values);
    let offs = offsets.as_array().to_vec();
    let evals = evaluate_at.as_array().to_vec();
    let eval_offs = eval_offsets.as_array().to_vec();
    let fresh = &template.inner;
    let out = &template.out;
    let (cols, count, sum, detected) = py.allow_threads(|| {
        guard_ro(|| {
            check_offsets("offsets", &offs, chars.len())?;
            check_offsets("eval_offsets", &eval_offs, evals.len())?;
            if offs.len() != eval_offs.len() {
                return Err(Error::input(format!("{} groups of events but {} of evaluation times", offs.len() - 1, eval_offs.len() - 1)));
            }
            let dfa = fresh.dfa().clone();
            let (mut count, mut sum, mut detected) = (Text::new(), Text::new(), Text::new());
            let mut c = Columns { element_offsets: vec![0], element_char_offsets: vec![0], ..Columns::default() };
            for g in 0..offs.len() - 1 {
                let (a, b) = (offs[g] as usize, offs[g + 1] as usize);
                let group_ts = &ts[a..b];
                let batch = Batch::new(&chars[a..b], group_ts, vals.as_deref().map(|v| &v[a..b]), &evals[eval_offs[g] as usize..eval_offs[g + 1] as usize], None)?;
                let mut s = fresh.clone();
                let snaps = batch.run(&mut s, &dfa, |s, raw| s.feed(out.mask(raw)), |s, t| {
                    let r = s.readout();
                    let (count, sum, _) = split_totals(s.dfa(), &r.g);
                    let alphabet = &s.dfa().alphabet;
                    let elements = s.elements().iter().map(|e| (alphabet[e.sym as usize], e.t, e.v)).collect();
                    Snap { t, count, sum, detected: r.detected.c, elements }
                })?;
                for r in snaps {
                    let row = c.group.len() as i64;
                    c.group.push(g as i64);
                    c.evaluated_at.push(r.t);
                    c.events.push(group_ts.partition_point(|&x| x <= r.t) as i64);
                    let (cd, sd) = (exact_f64(&r.count), exact_f64(&r.sum));
                    c.count_double.push(cd.unwrap_or(f64::NAN));
                    c.sum_double.push(sd.unwrap_or(f64::NAN));
                    c.avg.push(match (cd, sd) {
                        (Some(x), Some(y)) if x > 0.0 => y / x,
                        _ => f64::NAN,
                    });
                    if cd.is_none() || sd.is_none() {
                        c.big.push(row);
                    }
                    count.push(&r.count);
                    sum.push(&r.sum);
                    detected.push(&r.detected);
                    for (ch, t, v) in r.elements {
                        let mut buf = [0u8; 4];
                        c.element_chars.extend_from_slice((ch as char).encode_utf8(&mut buf).as_bytes());
                        c.element_char_offsets.push(c.element_chars.len() as i64);
                        c.element_ts.push(t);
                        c.element_values.push(v as i64);
                    }
                    c.element_offsets.push(c.element_ts.len() as i64);
                }
            }
            Ok((c, count, sum, detected))
        })
    })?;
    let d = PyDict::new(py);
    // Arrow `string` and `list` arrays take 32-bit offsets: no cast on the Python side.
    let narrow = |o: Vec<i64>| -> PyResult<Vec<i32>> {
        o.into_iter().map(i32::try_from).collect::<Result<_, _>>().map_err(|_| InputError::new_err("one batch of results holds more than 2 GiB of text; use smaller Arrow batches"))
    };
    d.set_item("group", PyArray1::from_vec(py, cols.group))?;
    d.set_item("evaluated_at", PyArray1::from_vec(py, cols.evaluated_at))?;
    d.set_item("events", PyArray1::from_vec(py, cols.events))?;
    for (name, text) in [("count", count), ("sum", sum), ("detected_count", detected)] {
        d.set_item(name, (PyBytes::new(py, &text.data), PyArray1::from_vec(py, narrow(text.offsets)?)))?;
    }
    d.set_item("count_double", PyArray1::from_vec(py, cols.count_double))?;
    d.set_item("sum_double", PyArray1::from_vec(py, cols.sum_double))?;
    d.set_item("avg", PyArray1::from_vec(py, cols.avg))?;
    d.set_item("big", PyArray1::from_vec(py, cols.big))?;
    d.set_item("element_offsets", PyArray1::from_vec(py, narrow(cols.element_offsets)?))?;
    d.set_item("element_chars", (PyBytes::new(py, &cols.element_chars), PyArray1::from_vec(py, narrow(cols.element_char_offsets)?)))?;
    d.set_item("element_ts", PyArray1::from_vec(py, cols.element_ts))?;
    d.set_item("element_values", PyArray1::from_vec(py, cols.element_values))?;
    Ok(d)
}
