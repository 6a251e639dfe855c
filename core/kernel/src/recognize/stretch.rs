//! The output of many partitions at once, as flat columns (MATCH_RECOGNIZE on Spark): when
//! every DEFINE condition is a flag of its own row and every MEASURES leaf is one the kernel
//! can read from a match's labels (a navigation's row, a count of rows, CLASSIFIER,
//! MATCH_NUMBER), a stretch of partitions becomes its output rows in one call, without an
//! object per match. The per-match path (`run`) stays for what needs Python's values.
use std::convert::Infallible;

use super::{nav_position, run, Cursor, End, Failure, Item, Options, Program, Table};

pub const KIND_MATCH: u8 = 0;
pub const KIND_EMPTY: u8 = 1;
pub const KIND_UNMATCHED: u8 = 2;

/// A MEASURES leaf read from the match: over its rows so far (its first `upto`), or over the
/// whole match when `whole`. `members`: the variables its qualifier stands for (None: every row).
#[derive(Clone, Debug)]
pub struct Measure {
    pub what: Reads,
    pub members: Option<Vec<u32>>,
    pub whole: bool,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reads {
    /// The stretch row `FIRST`/`LAST(qual, index)`, then `physical` rows further, reads.
    Row { first: bool, index: usize, physical: i64 },
    /// How many rows carry a variable of `members`.
    Count,
    /// The variable of the last row that carries one of `members`.
    Classifier,
}

/// Which rows a match gives (the standard's ROWS PER MATCH and its empty-match options).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Shape {
    OneRow,
    /// ALL ROWS PER MATCH: `show_empty` (SHOW EMPTY MATCHES, the default) and `unmatched`
    /// (WITH UNMATCHED ROWS, which shows empty matches too).
    AllRows { show_empty: bool, unmatched: bool },
}

/// The output rows: the stretch row each stands for (ALL ROWS: its own row; ONE ROW: the
/// partition's first row), its kind, its match number (-1: none) and one value per measure
/// (-1: NULL; rows are stretch rows, classifiers variable indices).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Output {
    pub rows: Vec<i64>,
    pub kinds: Vec<u8>,
    pub numbers: Vec<i64>,
    pub measures: Vec<Vec<i64>>,
}

/// Where a stretch failed: the partition's first stretch row and why.
pub type StretchFailure = (usize, Failure<Infallible>);

/// The rows of a match that `counts`, as `members` picks them.
fn counts<'a>(members: &'a Option<Vec<u32>>, labels: &'a [u32]) -> impl Fn(usize) -> Result<bool, ()> + 'a {
    move |i| Ok(members.as_ref().is_none_or(|m| m.contains(&labels[i])))
}

/// A navigation: `FIRST`/`LAST(qual, index)` among the rows of `members` (None: every row),
/// then `physical` rows further.
pub struct Nav<'a> {
    pub members: &'a Option<Vec<u32>>,
    pub first: bool,
    pub index: usize,
    pub physical: i64,
}

impl Nav<'_> {
    /// The partition row (of `n`) it reads among the first `upto` rows of the match at `start`
    /// labelled `labels`; None outside the partition.
    pub fn row(&self, start: usize, labels: &[u32], upto: usize, n: usize) -> Option<usize> {
        let at = nav_position(upto, self.first, self.index, counts(self.members, labels)).ok()??;
        let row = (start + at) as i64 + self.physical;
        (0..n as i64).contains(&row).then_some(row as usize)
    }
}

impl Measure {
    /// The value over the first `upto` rows of the match at partition row `start` of a
    /// partition of `n` rows that begins at stretch row `offset`.
    fn value(&self, start: usize, labels: &[u32], upto: usize, n: usize, offset: usize) -> i64 {
        let upto = if self.whole { labels.len() } else { upto };
        match self.what {
            Reads::Row { first, index, physical } => Nav { members: &self.members, first, index, physical }
                .row(start, labels, upto, n)
                .map_or(-1, |r| (offset + r) as i64),
            Reads::Count => {
                labels[..upto].iter().filter(|l| self.members.as_ref().is_none_or(|m| m.contains(l))).count() as i64
            }
            Reads::Classifier => {
                nav_position(upto, false, 0, counts(&self.members, labels)).ok().flatten().map_or(-1, |at| labels[at] as i64)
            }
        }
    }
}

impl Output {
    fn push(&mut self, row: usize, kind: u8, number: i64) {
        self.rows.push(row as i64);
        self.kinds.push(kind);
        self.numbers.push(number);
    }
}

/// Match the partitions `bounds[i] .. bounds[i + 1]` of a stretch whose rows carry the flags
/// `flags[var][row]` (1: the row may carry the variable) and give their output rows, as the
/// per-match path gives them (`suse.recognize.runner`); the first failure ends the stretch.
pub fn run_stretch(program: &Program, flags: &[&[u8]], bounds: &[usize], opts: &Options, shape: Shape,
                   measures: &[Measure]) -> Result<Output, StretchFailure> {
    let mut out = Output { measures: vec![Vec::new(); measures.len()], ..Output::default() };
    for w in bounds.windows(2) {
        let (a, b) = (w[0], w[1]);
        let n = b - a;
        let rows: Vec<&[u8]> = flags.iter().map(|f| &f[a..b]).collect();
        let (items, end, _) = run::<Infallible>(program, n, &mut Table { rows: &rows }, opts, Cursor::default());
        for (item, _) in items {
            match (item, shape) {
                (Item::Unmatched { row }, Shape::AllRows { unmatched: true, .. }) => {
                    out.push(a + row, KIND_UNMATCHED, -1);
                    out.measures.iter_mut().for_each(|m| m.push(-1));
                }
                (Item::Unmatched { .. }, _) => {}
                (Item::Match { number, start, labels, .. }, shape) if labels.is_empty() => {
                    let row = match shape {
                        Shape::OneRow => a,
                        Shape::AllRows { show_empty: false, unmatched: false } => continue,
                        Shape::AllRows { .. } => a + start,
                    };
                    out.push(row, KIND_EMPTY, number as i64);
                    for (column, m) in out.measures.iter_mut().zip(measures) {
                        column.push(m.value(start, &labels, 0, n, a));
                    }
                }
                (Item::Match { number, start, labels, .. }, Shape::OneRow) => {
                    out.push(a, KIND_MATCH, number as i64);
                    for (column, m) in out.measures.iter_mut().zip(measures) {
                        column.push(m.value(start, &labels, labels.len(), n, a));
                    }
                }
                (Item::Match { number, start, labels, excluded }, Shape::AllRows { .. }) => {
                    for (i, _) in excluded.iter().enumerate().filter(|(_, &x)| !x) {
                        out.push(a + start + i, KIND_MATCH, number as i64);
                        for (column, m) in out.measures.iter_mut().zip(measures) {
                            column.push(m.value(start, &labels, i + 1, n, a));
                        }
                    }
                }
            }
        }
        match end {
            End::Done | End::Undecided => {} // a table of flags is never open, so never undecided
            End::Failed(f) => return Err((a, f)),
        }
    }
    Ok(out)
}
