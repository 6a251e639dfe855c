//! The standard's row-pattern matcher (MATCH_RECOGNIZE, SQL:2016 as Trino implements it): the
//! preferred match at each start row, and the AFTER MATCH SKIP rules. Python compiles the
//! pattern (`suse.recognize.matcher.compile_pattern`) and decides the DEFINE conditions; this
//! runs the compiled program, a backtracking interpreter that tries the alternatives of each
//! `SPLIT` in order of preference, so the first accepting path is the preferred match.
//!
//! With conditions that depend on their own row only, a state (instruction, row, progress
//! registers) reached a second time has already failed, so it is dropped (the memo): the work
//! per start is bounded by program size times rows. Without the memo, `max_steps` bounds it.
use crate::conditions::hash::Fx;
use std::collections::HashSet;
use std::hash::BuildHasherDefault;

pub const VAR: u32 = 0;
pub const SPLIT: u32 = 1;
pub const JMP: u32 = 2;
pub const START: u32 = 3;
pub const END: u32 = 4;
pub const EXCL_ON: u32 = 5;
pub const EXCL_OFF: u32 = 6;
pub const MARK: u32 = 7;
pub const PROGRESS: u32 = 8;
pub const MATCH: u32 = 9;

/// The compiled pattern: `(op, a, b)` instructions and the number of progress registers.
pub struct Program {
    pub code: Vec<(u32, u32, u32)>,
    pub registers: usize,
}

/// Whether a row may carry a variable, asked with the labels of the match so far (the row's
/// own last). The caller mirrors the labels through `pushed`/`truncated` when it needs them.
pub trait Acceptor<E> {
    fn accept(&mut self, var: u32, row: usize, start: usize, labels: &[u32]) -> Result<bool, E>;
    fn pushed(&mut self, _var: u32) {}
    fn truncated(&mut self, _len: usize) {}
    /// Streaming: the partition goes on after the known rows.
    fn open(&self) -> bool {
        false
    }
    /// Streaming: whether a row after the known ones could still be accepted by a match
    /// starting at `start`.
    fn beyond(&mut self, _start: usize) -> Result<bool, E> {
        Ok(false)
    }
}

/// Row-local conditions as a table: `rows[var][row]` is 1 where the row may carry the variable.
pub struct Table<'a> {
    pub rows: &'a [&'a [u8]],
}

impl<E> Acceptor<E> for Table<'_> {
    #[inline]
    fn accept(&mut self, var: u32, row: usize, _start: usize, _labels: &[u32]) -> Result<bool, E> {
        Ok(self.rows[var as usize][row] != 0)
    }
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum MemoScope {
    /// Conditions depend on the row alone: states are remembered across start rows.
    Partition,
    /// They depend on the row and the start row (WITHIN): remembered within one start.
    Start,
    None,
}

#[derive(Clone, Debug)]
pub enum SkipMode {
    PastLastRow,
    NextRow,
    /// TO FIRST / TO LAST of the variables in `targets`; `name` for the message.
    ToFirst { targets: Vec<u32>, name: String },
    ToLast { targets: Vec<u32>, name: String },
}

/// Where matching of a partition stands (rows counted from row 0 given; streaming drops rows
/// before the cursor, so the end of the rows covered may lie before row 0).
#[derive(Clone, Copy, Default, Debug, PartialEq, Eq)]
pub struct Cursor {
    pub pos: usize,
    pub covered: i64,
    pub number: u64,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Item {
    Match { number: u64, start: usize, labels: Vec<u32>, excluded: Vec<bool> },
    Unmatched { row: usize },
}

#[derive(Debug)]
pub enum Failure<E> {
    /// More backtracking steps for one start than allowed.
    Limit(String),
    /// An AFTER MATCH SKIP that cannot be followed.
    Skip(String),
    /// The acceptor failed.
    Caller(E),
}

/// How a run ended after its items.
#[derive(Debug)]
pub enum End<E> {
    Done,
    /// Streaming: the match at the cursor needs rows not known yet.
    Undecided,
    Failed(Failure<E>),
}

pub struct Options {
    pub memo: MemoScope,
    pub max_steps: u64,
    /// The partition row that row 0 is (`^` holds at partition row 0).
    pub base: i64,
    pub skip: SkipMode,
}

enum Stop<E> {
    Undecided,
    Failed(Failure<E>),
}

#[derive(PartialEq, Eq, Hash)]
enum MemoKey {
    Plain(u64),
    Registers(u32, usize, Box<[i64]>),
}

/// The states (instruction, row, registers) already tried. Without registers and for a small
/// enough program times partition, a dense table of stamps: clearing it is one increment.
enum Memo {
    Dense { stamps: Vec<u32>, stamp: u32 },
    Sparse(HashSet<MemoKey, BuildHasherDefault<Fx>>),
}

/// The most cells a dense memo takes (4 bytes each).
const DENSE_MEMO: usize = 1 << 22;

impl Memo {
    fn new(program: &Program, n: usize) -> Memo {
        let cells = program.code.len().saturating_mul(n + 1);
        if program.registers == 0 && cells <= DENSE_MEMO {
            Memo::Dense { stamps: vec![0; cells], stamp: 1 }
        } else {
            Memo::Sparse(HashSet::default())
        }
    }

    /// Whether the state is new (and remember it).
    fn insert(&mut self, pc: usize, pos: usize, stride: u64, regs: &[i64]) -> bool {
        match self {
            Memo::Dense { stamps, stamp } => {
                let cell = &mut stamps[pc * stride as usize + pos];
                let new = *cell != *stamp;
                *cell = *stamp;
                new
            }
            Memo::Sparse(seen) if regs.is_empty() => seen.insert(MemoKey::Plain(pc as u64 * stride + pos as u64)),
            Memo::Sparse(seen) => seen.insert(MemoKey::Registers(pc as u32, pos, regs.to_vec().into_boxed_slice())),
        }
    }

    /// Forget every state.
    fn clear(&mut self) {
        match self {
            Memo::Dense { stamps, stamp } => {
                *stamp = stamp.wrapping_add(1);
                if *stamp == 0 {
                    stamps.fill(0);
                    *stamp = 1;
                }
            }
            Memo::Sparse(seen) => seen.clear(),
        }
    }
}

/// A match's rows by their variables, and whether each sits in `{- -}`.
type Labelled = (Vec<u32>, Vec<bool>);

/// The preferred match starting at row `start` of `n` rows, or None.
fn match_at<E>(program: &Program, start: usize, n: usize, acc: &mut impl Acceptor<E>, memo: Option<&mut Memo>,
               opts: &Options) -> Result<Option<Labelled>, Stop<E>> {
    let code = &program.code;
    let (mut pc, mut pos, mut depth) = (0usize, start, 0u32);
    let mut regs: Vec<i64> = vec![-1; program.registers];
    let (mut labels, mut excluded): (Vec<u32>, Vec<bool>) = (Vec::new(), Vec::new());
    let mut stack: Vec<(usize, usize, Vec<i64>, u32)> = Vec::new();
    let mut steps: u64 = 0;
    let stride = n as u64 + 1;
    let mut memo = memo;
    acc.truncated(0);
    loop {
        let (op, a, b) = code[pc];
        steps += 1;
        if memo.is_none() && steps > opts.max_steps {
            return Err(Stop::Failed(Failure::Limit(format!(
                "more than {} backtracking steps for the match starting at row {} of the partition: simplify the pattern \
                 or the DEFINE conditions that look at other rows of the match",
                opts.max_steps,
                start + 1
            ))));
        }
        let mut ok = true;
        if let Some(seen) = memo.as_deref_mut() {
            if op <= SPLIT {
                ok = seen.insert(pc, pos, stride, &regs);
            }
        }
        if ok {
            match op {
                VAR => {
                    if pos >= n {
                        if acc.open() && acc.beyond(start).map_err(|e| Stop::Failed(Failure::Caller(e)))? {
                            return Err(Stop::Undecided);
                        }
                    } else {
                        labels.push(a);
                        excluded.push(depth > 0);
                        acc.pushed(a);
                        if acc.accept(a, pos, start, &labels).map_err(|e| Stop::Failed(Failure::Caller(e)))? {
                            pos += 1;
                            pc += 1;
                            continue;
                        }
                        labels.pop();
                        excluded.pop();
                        acc.truncated(labels.len());
                    }
                    ok = false;
                }
                SPLIT => {
                    stack.push((b as usize, pos, regs.clone(), depth));
                    pc = a as usize;
                    continue;
                }
                JMP => {
                    pc = a as usize;
                    continue;
                }
                START => ok = pos as i64 + opts.base == 0,
                END => {
                    if pos == n && acc.open() {
                        return Err(Stop::Undecided);
                    }
                    ok = pos == n;
                }
                EXCL_ON => depth += 1,
                EXCL_OFF => depth -= 1,
                MARK => regs[a as usize] = pos as i64,
                PROGRESS => ok = regs[a as usize] != pos as i64,
                _ => return Ok(Some((labels, excluded))), // MATCH
            }
            if ok {
                pc += 1;
                continue;
            }
        }
        let Some((to, at, saved, d)) = stack.pop() else { return Ok(None) };
        (pc, pos, regs, depth) = (to, at, saved, d);
        labels.truncate(pos - start);
        excluded.truncate(pos - start);
        acc.truncated(labels.len());
    }
}

fn skip_target<E>(skip: &SkipMode, start: usize, labels: &[u32], number: u64) -> Result<usize, Failure<E>> {
    let (targets, name, first) = match skip {
        SkipMode::PastLastRow => return Ok(start + labels.len()),
        SkipMode::NextRow => return Ok(start + 1),
        SkipMode::ToFirst { targets, name } => (targets, name, true),
        SkipMode::ToLast { targets, name } => (targets, name, false),
    };
    let mode = if first { "FIRST" } else { "LAST" };
    let mut rows = labels.iter().enumerate().filter(|(_, v)| targets.contains(v)).map(|(i, _)| start + i);
    let target = if first { rows.next() } else { rows.next_back() };
    let Some(target) = target else {
        return Err(Failure::Skip(format!(
            "AFTER MATCH SKIP TO {mode} {name}: match {number} (starting at row {} of the partition) has no row of {name}",
            start + 1
        )));
    };
    if target == start {
        return Err(Failure::Skip(format!(
            "AFTER MATCH SKIP TO {mode} {name}: match {number} would resume at its own first row (row {} of the \
             partition), which would find the same match again",
            start + 1
        )));
    }
    Ok(target)
}

/// Every match of a partition of `n` rows in order from `cursor`, and between them the rows
/// no match covers, each with the cursor after it; then how the run ended and the cursor
/// there. The items before a failure or an undecided start are the ones a run over the whole
/// partition yields too.
pub fn run<E>(program: &Program, n: usize, acc: &mut impl Acceptor<E>, opts: &Options, cursor: Cursor)
              -> (Vec<(Item, Cursor)>, End<E>, Cursor) {
    let mut cur = cursor;
    let mut items = Vec::new();
    let mut memo: Option<Memo> = (opts.memo != MemoScope::None).then(|| Memo::new(program, n));
    while cur.pos < n {
        if opts.memo == MemoScope::Start {
            if let Some(m) = memo.as_mut() {
                m.clear();
            }
        }
        let pos = cur.pos;
        let found = match match_at(program, pos, n, acc, memo.as_mut(), opts) {
            Ok(found) => found,
            Err(Stop::Undecided) => return (items, End::Undecided, cur),
            Err(Stop::Failed(f)) => return (items, End::Failed(f), cur),
        };
        let Some((labels, excluded)) = found else {
            let unmatched = pos as i64 >= cur.covered;
            cur.pos = pos + 1;
            if unmatched {
                items.push((Item::Unmatched { row: pos }, cur));
            }
            continue;
        };
        let number = cur.number + 1;
        let target = if labels.is_empty() {
            pos + 1
        } else {
            match skip_target(&opts.skip, pos, &labels, number) {
                Ok(t) => t,
                Err(f) => return (items, End::Failed(f), cur),
            }
        };
        if opts.memo == MemoScope::Partition {
            if let Some(m) = memo.as_mut() {
                m.clear(); // states on the accepting path did not fail
            }
        }
        (cur.number, cur.pos) = (number, target);
        if !labels.is_empty() {
            cur.covered = cur.covered.max((pos + labels.len()) as i64);
        }
        items.push((Item::Match { number, start: pos, labels, excluded }, cur));
    }
    (items, End::Done, cur)
}

pub mod stretch;
#[cfg(test)]
mod tests;

/// Which row of a match a navigation measure (`FIRST`/`LAST(qual.x, index)`) reads: among the
/// first `upto` rows of the match those for which `counts(i)` holds (the rows of `qual`: a
/// variable, a subset, or every row), the `index`-th from the first (`first`) or from the last.
/// Its position in the match, or None when there are not that many. The one implementation of
/// this choice: the runner asks it for the final rows of every match (with the matches) and,
/// through Python, for the running rows and the conditions that read other rows.
pub fn nav_position<E>(upto: usize, first: bool, index: usize, mut counts: impl FnMut(usize) -> Result<bool, E>)
    -> Result<Option<usize>, E> {
    let mut left = index;
    for k in 0..upto {
        let at = if first { k } else { upto - 1 - k };
        if counts(at)? {
            if left == 0 {
                return Ok(Some(at));
            }
            left -= 1;
        }
    }
    Ok(None)
}
