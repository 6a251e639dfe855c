//! The exact engine of a query with conditions: counts keyed by (automaton state, registers).
//!
//! A partial match is summarised by its automaton state and its registers, the values later
//! conditions can read ([`Layout`]); partial matches with equal keys extend alike, so their
//! counts (count and sum of values, a [`Dual`]) are added. Taking an event with letter c
//! extends, for every state q with a move on c, the keys whose registers satisfy c's
//! condition: one evaluation per key, or, when the condition is `current op reference` and
//! the key after the move depends on the event alone, one query of the state's
//! [`ValueIndex`] (O(log^2 w)).
//!
//! The window bounds a match's first and last timestamps. The counts are of the partial
//! matches whose first element is still in the window; when a first element leaves it, its
//! partial matches as they are now are recomputed by replaying that element alone through
//! the later events still held, and subtracted.
use super::count::Count;
use super::index::{ValueIndex, D};
use super::program::{Key, Layout, Program, Slot};
use super::value::{CmpOp, Value};
use crate::numbers::dual::Dual;
use crate::engine::error::Error;
use crate::numbers::num::Scalar;
use std::collections::hash_map::Entry;
use super::hash::FxMap;
use std::collections::VecDeque;

/// A condition in compared form: `current op reference` (or, with `null_reference`, also
/// true when the reference is NULL), the reference being the n-th last value of a slot.
#[derive(Clone, Debug)]
pub struct Compared {
    pub current: Program,
    pub op: CmpOp,
    pub slot: usize,
    pub n: usize,
    pub null_reference: bool,
}

/// Everything the engine is built from (the Python side compiles it from the query).
#[derive(Clone, Debug)]
pub struct Spec {
    pub start: usize,
    pub finals: Vec<bool>,
    /// `delta[state][letter]`: the next state, `None` when the move leads nowhere.
    pub delta: Vec<Vec<Option<usize>>>,
    /// Attribute columns each event carries.
    pub columns: usize,
    pub slots: Vec<Slot>,
    /// `live[state][slot]`: whether a condition reachable from the state reads the slot.
    pub live: Vec<Vec<bool>>,
    pub conditions: Vec<Option<Program>>,
    pub compared: Vec<Option<Compared>>,
    pub window: i64,
    /// The most register keys and held events kept at once (the counting state's size).
    pub max_keys: usize,
    /// MIN/MAX: per letter, whether its elements' values count (`of`); `None`: not asked for.
    pub extrema: Option<Vec<bool>>,
}

/// The smallest and largest counted value on some partial match of a key (`None`: its
/// partial matches have no counted element). Paths join by min/max, which has no inverse.
pub type Ext = Option<(u64, u64)>;

fn join(a: Ext, b: Ext) -> Ext {
    match (a, b) {
        (Some((l1, h1)), Some((l2, h2))) => Some((l1.min(l2), h1.max(h2))),
        (x, None) | (None, x) => x,
    }
}

/// The move of one state on one letter, decided once.
#[derive(Clone, Debug)]
struct Move {
    target: usize,
    /// Served by the source state's index number `index` (reference at key position `at`).
    index: Option<usize>,
}

#[derive(Clone)]
struct Rules {
    spec: Spec,
    layout: Layout,
    /// `moves[state][letter]`
    moves: Vec<Vec<Option<Move>>>,
    /// Per state, the key positions its indexes are keyed by (moves comparing with the same
    /// register share one index).
    indexed: Vec<Vec<usize>>,
}

#[derive(Clone, Debug, Default)]
struct Table {
    keys: FxMap<Key, D>,
    indexes: Vec<ValueIndex>,
}

/// Partial-match counts by state and registers.
#[derive(Clone, Debug)]
struct Counts {
    tables: Vec<Table>,
    keys: usize,
}

/// An event of the window: what replaying needs.
#[derive(Clone, Debug)]
struct Held {
    letter: usize,
    value: u64,
    t: i64,
    attrs: Box<[Value]>,
    /// The partial match this event starts alone (state and registers), if any.
    start: Option<(usize, Key)>,
}

/// What a step reads of an event.
#[derive(Clone, Copy)]
struct Step<'a> {
    letter: usize,
    value: u64,
    attrs: &'a [Value],
}

impl Held {
    fn step(&self) -> Step<'_> {
        Step { letter: self.letter, value: self.value, attrs: &self.attrs }
    }
}

/// [`Engine::state`]: totals, counts, held (letter, timestamp), events, skipped, last timestamp.
#[cfg(test)]
pub(crate) type EngineState = (Totals, Vec<String>, Vec<(usize, i64)>, u64, u64, Option<i64>);

/// A saved engine: see [`Engine::saved`].
#[derive(Clone, Debug, PartialEq)]
pub struct Saved {
    /// (letter, timestamp, value, attributes) of each element held, in order.
    pub held: Vec<(usize, i64, u64, Box<[Value]>)>,
    pub totals: Totals,
    pub events: u64,
    pub skipped: u64,
    pub last_timestamp: Option<i64>,
}

/// Totals over everything processed.
#[derive(Clone, Debug, PartialEq)]
pub struct Totals {
    pub matches: D,
    pub partial: Count,
    /// MIN/MAX over the elements of every match formed (with `Spec::extrema`).
    pub extrema: Ext,
}

#[derive(Clone)]
pub struct Engine {
    rules: Rules,
    counts: Counts,
    held: VecDeque<Held>,
    totals: Totals,
    pub events: u64,
    pub skipped: u64,
    pub last_timestamp: Option<i64>,
    stack: Vec<Value>,
    deltas: Vec<(usize, Key, D)>,
    /// With MIN/MAX: per state, the extremes of each key's partial matches (the same keys as
    /// the counts). Not subtractable, so an expiry rebuilds them from the elements held.
    extrema: Vec<FxMap<Key, Ext>>,
}

impl Rules {
    fn new(spec: Spec) -> Result<Rules, Error> {
        let n = spec.finals.len();
        let letters = spec.conditions.len();
        let bad = |why: &str| Error::input(format!("conditions: malformed engine specification ({why})"));
        if spec.delta.len() != n || spec.live.len() != n || spec.start >= n || spec.compared.len() != letters {
            return Err(bad("sizes differ"));
        }
        if spec.extrema.as_ref().is_some_and(|mask| mask.len() != letters) {
            return Err(bad("extrema mask"));
        }
        if spec.window < 0 {
            return Err(Error::input("the window must not be negative"));
        }
        let layout = Layout::new(spec.slots.clone());
        for row in &spec.delta {
            if row.len() != letters || row.iter().flatten().any(|&t| t >= n) {
                return Err(bad("transition table"));
            }
        }
        if spec.live.iter().any(|l| l.len() != spec.slots.len()) || spec.slots.iter().any(|s| s.letter >= letters || s.column >= spec.columns || s.size == 0) {
            return Err(bad("slots"));
        }
        for program in spec.conditions.iter().flatten() {
            program.check(&layout, spec.columns)?;
        }
        let mut moves = vec![vec![None; letters]; n];
        let mut indexed = vec![Vec::new(); n];
        for q in 0..n {
            for (c, &target) in spec.delta[q].iter().enumerate() {
                let Some(target) = target else { continue };
                let mut index = None;
                if let Some(compared) = &spec.compared[c] {
                    compared.current.check(&layout, spec.columns)?;
                    let slot = spec.slots.get(compared.slot).ok_or_else(|| bad("compared slot"))?;
                    if slot.first || compared.n == 0 || compared.n > slot.size {
                        return Err(bad("compared reference"));
                    }
                    // the key after the move must not depend on the key before it
                    let fresh = spec.slots.iter().enumerate().all(|(s, slot)| {
                        !spec.live[target][s] || (slot.letter == c && !slot.first && slot.size == 1)
                    });
                    if fresh {
                        let at = layout.last_position(compared.slot, compared.n);
                        index = Some(indexed[q].iter().position(|&p| p == at).unwrap_or_else(|| {
                            indexed[q].push(at);
                            indexed[q].len() - 1
                        }));
                    }
                }
                moves[q][c] = Some(Move { target, index });
            }
        }
        Ok(Rules { spec, layout, moves, indexed })
    }

    fn new_counts(&self) -> Counts {
        let tables = self
            .indexed
            .iter()
            .map(|idx| Table { keys: FxMap::default(), indexes: vec![ValueIndex::default(); idx.len()] })
            .collect();
        Counts { tables, keys: 0 }
    }

    fn holds(&self, letter: usize, key: &[Value], attrs: &[Value], stack: &mut Vec<Value>) -> Result<bool, Error> {
        match &self.spec.conditions[letter] {
            None => Ok(true),
            Some(program) => program.holds(&self.layout, key, attrs, stack),
        }
    }

    /// The partial match an event starts alone: its state and registers.
    fn start(&self, letter: usize, attrs: &[Value], stack: &mut Vec<Value>) -> Result<Option<(usize, Key)>, Error> {
        let Some(m) = &self.moves[self.spec.start][letter] else { return Ok(None) };
        let empty = self.layout.empty();
        if !self.holds(letter, &empty, attrs, stack)? {
            return Ok(None);
        }
        Ok(Some((m.target, self.layout.update(&empty, letter, attrs, &self.spec.live[m.target]))))
    }

    /// What taking the event adds to `counts`: (state, registers, counts), read from the
    /// counts before the event (an event is taken at most once per partial match).
    fn step(&self, counts: &Counts, ev: Step<'_>, stack: &mut Vec<Value>, out: &mut Vec<(usize, Key, D)>) -> Result<(), Error> {
        for (q, table) in counts.tables.iter().enumerate() {
            if table.keys.is_empty() {
                continue;
            }
            let Some(m) = &self.moves[q][ev.letter] else { continue };
            let live = &self.spec.live[m.target];
            match m.index {
                Some(i) => {
                    let compared = self.spec.compared[ev.letter].as_ref().expect("an indexed move has a compared form");
                    let current = compared.current.value(&self.layout, &self.layout.empty(), ev.attrs, stack)?;
                    let sum = table.indexes[i].query(compared.op, &current, compared.null_reference)?;
                    if !sum.is_zero() {
                        let key = self.layout.update(&self.layout.empty(), ev.letter, ev.attrs, live);
                        let d = sum.take(ev.value).expect("counts cannot overflow");
                        match out.last_mut() {
                            // several states moving into one fresh key (A then B+ into B+): add once
                            Some((target, last, total)) if *target == m.target && *last == key => {
                                total.add_assign(&d).expect("counts cannot overflow")
                            }
                            _ => out.push((m.target, key, d)),
                        }
                    }
                }
                None => {
                    for (key, d) in &table.keys {
                        if self.holds(ev.letter, key, ev.attrs, stack)? {
                            let next = self.layout.update(key, ev.letter, ev.attrs, live);
                            out.push((m.target, next, d.take(ev.value).expect("counts cannot overflow")));
                        }
                    }
                }
            }
        }
        Ok(())
    }

    /// The partial matches one element starting `(q, key)` alone becomes through `later`
    /// (the events after it in its window), and what they add to the totals (the matches
    /// and partial matches formed, the element's own included).
    fn alone<'a>(&self, (q, key): (usize, Key), value: u64, later: impl Iterator<Item = Step<'a>>, stack: &mut Vec<Value>) -> Result<(Counts, Totals), Error> {
        let mut alone = self.new_counts();
        let mut share = Totals { matches: D::zero(), partial: Count::zero(), extrema: None };
        let mut out = vec![(q, key, Dual::weight(value))];
        let mut later = later;
        loop {
            for (q, key, d) in out.drain(..) {
                if self.spec.finals[q] {
                    share.matches.add_assign(&d).expect("counts cannot overflow");
                } else {
                    share.partial = share.partial.add(&d.c).expect("counts cannot overflow");
                }
                self.add(&mut alone, q, key, &d)?;
            }
            let Some(ev) = later.next() else { return Ok((alone, share)) };
            self.step(&alone, ev, stack, &mut out)?;
        }
    }

    fn add(&self, counts: &mut Counts, q: usize, key: Key, d: &D) -> Result<(), Error> {
        let table = &mut counts.tables[q];
        for (i, &at) in self.indexed[q].iter().enumerate() {
            table.indexes[i].add(&key[at], d, !table.keys.contains_key(&key))?;
        }
        match table.keys.entry(key) {
            Entry::Occupied(mut e) => e.get_mut().add_assign(d).expect("counts cannot overflow"),
            Entry::Vacant(e) => {
                e.insert(d.clone());
                counts.keys += 1;
            }
        }
        Ok(())
    }

    fn sub(&self, counts: &mut Counts, q: usize, key: &Key, d: &D) -> Result<(), Error> {
        let table = &mut counts.tables[q];
        let sum = table.keys.get_mut(key).ok_or_else(|| Error::internal("expiring a partial match that is not counted"))?;
        sum.sub_assign(d).map_err(|_| Error::internal("an expired count exceeds the count"))?;
        let removed = sum.is_zero();
        if removed {
            table.keys.remove(key);
            counts.keys -= 1;
        }
        for (i, &at) in self.indexed[q].iter().enumerate() {
            table.indexes[i].sub(&key[at], d, removed)?;
        }
        Ok(())
    }
}

impl Engine {
    pub fn new(spec: Spec) -> Result<Engine, Error> {
        let rules = Rules::new(spec)?;
        let n = rules.spec.finals.len();
        let counts = rules.new_counts();
        Ok(Engine {
            rules,
            counts,
            held: VecDeque::new(),
            totals: Totals { matches: D::zero(), partial: Count::zero(), extrema: None },
            extrema: vec![FxMap::default(); n],
            events: 0,
            skipped: 0,
            last_timestamp: None,
            stack: Vec::new(),
            deltas: Vec::new(),
        })
    }

    pub fn totals(&self) -> &Totals {
        &self.totals
    }

    pub fn spec(&self) -> &Spec {
        &self.rules.spec
    }

    /// Register keys held now (the counting state's size).
    pub fn keys(&self) -> usize {
        self.counts.keys
    }

    /// Events of the window held for replaying.
    pub fn held(&self) -> usize {
        self.held.len()
    }

    /// Per automaton state (final states included), the count and sum of the partial matches
    /// whose first element is still in the window at `now` (no earlier than the last event):
    /// what `now` leaves behind expires first, as an event at `now` would expire it.
    pub fn partial_by_state(&mut self, now: i64) -> Result<Vec<D>, Error> {
        if self.last_timestamp.is_some_and(|last| now < last) {
            return Err(Error::input(format!("time {now} is earlier than the last event")));
        }
        self.expire(now)?;
        let mut out = Vec::with_capacity(self.counts.tables.len());
        for table in &self.counts.tables {
            let mut total = D::zero();
            for d in table.keys.values() {
                total.add_assign(d).expect("counts cannot overflow");
            }
            out.push(total);
        }
        Ok(out)
    }

    /// Take one event (`letter` None: a character outside the query, never an element).
    /// Timestamps must not decrease. On an error nothing of the event is counted.
    pub fn feed(&mut self, letter: Option<usize>, t: i64, value: u64, attrs: Box<[Value]>) -> Result<(), Error> {
        self.check(t, &attrs)?;
        self.expire(t)?;
        self.last_timestamp = Some(t);
        self.events += 1;
        let Some(letter) = letter else {
            self.skipped += 1;
            return Ok(());
        };
        if let Err(e) = self.take(letter, t, value, attrs, true) {
            self.events -= 1;
            return Err(e);
        }
        Ok(())
    }

    fn check(&self, t: i64, attrs: &[Value]) -> Result<(), Error> {
        if let Some(last) = self.last_timestamp {
            if t < last {
                return Err(Error::input(format!("timestamp {t} is earlier than {last}, the latest already processed")));
            }
        }
        if attrs.len() != self.rules.spec.columns {
            return Err(Error::input(format!("an event carries {} attribute values, expected {}", attrs.len(), self.rules.spec.columns)));
        }
        Ok(())
    }

    /// Extend the partial matches by an element and hold it; `count`: add what it completes
    /// to the totals (not when rebuilding the counts of a saved engine).
    fn take(&mut self, letter: usize, t: i64, value: u64, attrs: Box<[Value]>, count: bool) -> Result<(), Error> {
        if letter >= self.rules.spec.conditions.len() {
            return Err(Error::input(format!("letter {letter} outside the query")));
        }
        let start = self.rules.start(letter, &attrs, &mut self.stack)?;
        let ev = Held { letter, value, t, attrs, start };
        let mut out = std::mem::take(&mut self.deltas);
        out.clear();
        let stepped = self.rules.step(&self.counts, ev.step(), &mut self.stack, &mut out);
        if let Err(e) = stepped {
            self.deltas = out;
            return Err(e);
        }
        if let Some((q, key)) = &ev.start {
            out.push((*q, key.clone(), Dual::weight(value)));
        }
        let extremes = match self.extrema_step(&ev) {
            Ok(extremes) => extremes,
            Err(e) => {
                self.deltas = out;
                return Err(e);
            }
        };
        // held events are about as large as keys: both count against the budget
        if self.counts.keys + out.len() + self.held.len() + 1 > self.rules.spec.max_keys {
            self.deltas = out;
            return Err(Error::Limit(format!(
                "the conditions' counting state would exceed {} register keys and held events (partial matches that \
                 differ in the values later conditions read, and the window's events); raise memory_limit, shorten the \
                 window, or compare with fewer earlier elements",
                self.rules.spec.max_keys
            )));
        }
        for (q, key, d) in out.drain(..) {
            if count {
                if self.rules.spec.finals[q] {
                    self.totals.matches.add_assign(&d).expect("counts cannot overflow");
                } else {
                    self.totals.partial = self.totals.partial.add(&d.c).expect("counts cannot overflow");
                }
            }
            self.rules.add(&mut self.counts, q, key, &d)?;
        }
        self.deltas = out;
        for (q, key, e) in extremes {
            if count && self.rules.spec.finals[q] {
                self.totals.extrema = join(self.totals.extrema, e);
            }
            let slot = self.extrema[q].entry(key).or_insert(None);
            *slot = join(*slot, e);
        }
        self.held.push_back(ev);
        Ok(())
    }

    /// What taking `ev` adds to the extremes (empty without MIN/MAX): every key whose
    /// condition holds, scanned, from the extremes before the event.
    fn extrema_step(&mut self, ev: &Held) -> Result<Vec<(usize, Key, Ext)>, Error> {
        let Some(mask) = &self.rules.spec.extrema else { return Ok(Vec::new()) };
        let taken = |e: Ext| if mask[ev.letter] { join(e, Some((ev.value, ev.value))) } else { e };
        let mut out = Vec::new();
        for (q, table) in self.extrema.iter().enumerate() {
            let Some(m) = &self.rules.moves[q][ev.letter] else { continue };
            for (key, &e) in table {
                if self.rules.holds(ev.letter, key, &ev.attrs, &mut self.stack)? {
                    out.push((m.target, self.rules.layout.update(key, ev.letter, &ev.attrs, &self.rules.spec.live[m.target]), taken(e)));
                }
            }
        }
        if let Some((q, key)) = &ev.start {
            out.push((*q, key.clone(), taken(None)));
        }
        Ok(out)
    }

    /// The extremes of the partial matches of the elements held, recomputed from them.
    fn rebuild_extrema(&mut self) -> Result<(), Error> {
        self.extrema.iter_mut().for_each(|table| table.clear());
        let held = std::mem::take(&mut self.held);
        let mut result = Ok(());
        for ev in &held {
            match self.extrema_step(ev) {
                Ok(extremes) => {
                    for (q, key, e) in extremes {
                        let slot = self.extrema[q].entry(key).or_insert(None);
                        *slot = join(*slot, e);
                    }
                }
                Err(e) => {
                    result = Err(e);
                    break;
                }
            }
        }
        self.held = held;
        result
    }

    /// What saving keeps: the window's elements and the totals. The counts are not saved:
    /// they are a function of the elements held, and [`Engine::restore`] recomputes them.
    pub fn saved(&self) -> Saved {
        Saved {
            held: self.held.iter().map(|h| (h.letter, h.t, h.value, h.attrs.clone())).collect(),
            totals: self.totals.clone(),
            events: self.events,
            skipped: self.skipped,
            last_timestamp: self.last_timestamp,
        }
    }

    /// An engine as [`Engine::saved`] saw it. Every part is checked as a fed event would be
    /// (a saved state may have been edited): an error, never a panic.
    pub fn restore(spec: Spec, saved: Saved) -> Result<Engine, Error> {
        let mut engine = Engine::new(spec)?;
        let window = engine.rules.spec.window as i128;
        let held = saved.held.len() as u64;
        let bad = |why: &str| Error::state(format!("a saved conditions engine is inconsistent: {why}"));
        let last = saved.last_timestamp;
        if held + saved.skipped > saved.events || (held > 0 && last.is_none()) {
            return Err(bad("more elements than events"));
        }
        let edited = |e: Error| match e {
            Error::Input(m) => bad(&m),
            other => other,
        };
        for (letter, t, value, attrs) in saved.held {
            engine.check(t, &attrs).map_err(edited)?;
            // every held element is still inside the window of the latest event
            if last.is_some_and(|l| (l as i128) - (t as i128) > window || l < t) {
                return Err(bad("an element outside the window of the latest event"));
            }
            engine.last_timestamp = Some(t);
            engine.take(letter, t, value, attrs, false).map_err(edited)?;
        }
        engine.totals = saved.totals;
        (engine.events, engine.skipped, engine.last_timestamp) = (saved.events, saved.skipped, last);
        Ok(engine)
    }

    /// Forget the first element it was fed, as if it never had been: the state of an engine
    /// fed only the rest. `fed`: every element it was fed since it was new, in order, none
    /// outside the query (the first is the one forgotten). The partial matches of the first
    /// element all start with it, so its share of the totals and of the counts is what that
    /// element alone becomes through the later elements within its window, replayed as
    /// [`Engine::expire`] does and subtracted: O(that window's events) steps of one
    /// element's partial matches, O(1) if it starts none. `false` with MIN/MAX (extremes
    /// have no inverse): nothing changed, the caller replays the rest into a blank engine.
    pub fn forget_first(&mut self, fed: &[(usize, i64, u64, Box<[Value]>)]) -> Result<bool, Error> {
        let Some(((letter, t0, value, attrs), later)) = fed.split_first() else {
            return Err(Error::input("no element to forget"));
        };
        if self.rules.spec.extrema.is_some() || later.is_empty() || self.events != fed.len() as u64 || self.skipped != 0 {
            return Ok(false); // a blank engine is as cheap when it was the only one
        }
        let first_held = self.held.len() == fed.len(); // else it has left the window already
        if *letter >= self.rules.spec.conditions.len() {
            return Err(Error::input(format!("letter {letter} outside the query")));
        }
        if let Some((q, key)) = self.rules.start(*letter, attrs, &mut self.stack)? {
            let window = self.rules.spec.window as i128;
            let rest = later.iter().take_while(|e| e.1 as i128 - *t0 as i128 <= window);
            let steps = rest.map(|(letter, _, value, attrs)| Step { letter: *letter, value: *value, attrs });
            let (alone, share) = self.rules.alone((q, key), *value, steps, &mut self.stack)?;
            let lost = || Error::internal("a forgotten element's share exceeds the totals");
            let mut totals = self.totals.clone();
            totals.matches.sub_assign(&share.matches).map_err(|_| lost())?;
            totals.partial = totals.partial.sub(&share.partial).map_err(|_| lost())?;
            if first_held {
                // its partial matches are still counted (all later elements are in its window)
                for (q, table) in alone.tables.iter().enumerate() {
                    for (key, d) in &table.keys {
                        self.rules.sub(&mut self.counts, q, key, d)?;
                    }
                }
            }
            self.totals = totals;
        }
        if first_held {
            self.held.pop_front();
        }
        self.events -= 1;
        Ok(true)
    }

    /// Everything a later event or an evaluation reads, in a comparable form: the totals,
    /// the counts by state and registers (sorted), the held events, the event counters.
    #[cfg(test)]
    pub(crate) fn state(&self) -> EngineState {
        let mut counts: Vec<String> = self.counts.tables.iter().enumerate().flat_map(|(q, t)| t.keys.iter().map(move |(k, d)| format!("{q} {k:?} {d:?}"))).collect();
        counts.sort();
        assert_eq!(counts.len(), self.counts.keys);
        let held = self.held.iter().map(|h| (h.letter, h.t)).collect();
        (self.totals.clone(), counts, held, self.events, self.skipped, self.last_timestamp)
    }

    /// Drop the partial matches whose first element is more than the window before `t`.
    fn expire(&mut self, t: i64) -> Result<(), Error> {
        let window = self.rules.spec.window as i128;
        let expired = self.held.iter().take_while(|h| t as i128 - h.t as i128 > window).count();
        for i in 0..expired {
            let Some(start) = self.held[i].start.clone() else { continue };
            let later = self.held.range(i + 1..).map(Held::step);
            let (alone, _) = self.rules.alone(start, self.held[i].value, later, &mut self.stack)?;
            for (q, table) in alone.tables.iter().enumerate() {
                for (key, d) in &table.keys {
                    self.rules.sub(&mut self.counts, q, key, d)?;
                }
            }
        }
        let started = self.held.range(..expired).any(|h| h.start.is_some());
        self.held.drain(..expired);
        if started && self.rules.spec.extrema.is_some() {
            self.rebuild_extrema()?;
        }
        Ok(())
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::conditions::program::{rising_or_first, Instr};
    use proptest::prelude::*;

    const A: usize = 0;
    const B: usize = 1;
    const C: usize = 2;

    /// `A B+ C` with B rising (or the first B) and C below the last B; `indexed`: with the
    /// compared forms, so the value index serves both conditions (else every key is scanned).
    pub(crate) fn rising_run(window: i64, indexed: bool) -> Spec {
        let slot = Slot { letter: B, column: 0, first: false, size: 1 };
        let b = rising_or_first('B');
        let c = Program { letter: 'C', code: vec![Instr::Current(0), Instr::Last { slot: 0, n: 1 }, Instr::Compare(CmpOp::Lt)] };
        let current = |letter| Program { letter, code: vec![Instr::Current(0)] };
        let compared = vec![
            None,
            indexed.then(|| Compared { current: current('B'), op: CmpOp::Gt, slot: 0, n: 1, null_reference: true }),
            indexed.then(|| Compared { current: current('C'), op: CmpOp::Lt, slot: 0, n: 1, null_reference: false }),
        ];
        Spec {
            start: 0,
            finals: vec![false, false, false, true],
            delta: vec![
                vec![Some(1), None, None],
                vec![None, Some(2), None],
                vec![None, Some(2), Some(3)],
                vec![None, None, None],
            ],
            columns: 1,
            slots: vec![slot],
            live: vec![vec![true], vec![true], vec![true], vec![false]],
            conditions: vec![None, Some(b), Some(c)],
            compared,
            window,
            max_keys: 1 << 20,
            extrema: None,
        }
    }

    /// Every index set by enumeration: word in A B+ C, inside the window, conditions hold;
    /// (count, sum, the extremes of the values of letters in `of`).
    fn naive(events: &[(usize, i64, u64, Option<i64>)], window: i64, of: &[bool]) -> (u128, u128, Ext) {
        let (mut count, mut sum, mut extremes) = (0u128, 0u128, None);
        for mask in 1u32..(1 << events.len()) {
            let chosen: Vec<_> = (0..events.len()).filter(|i| mask >> i & 1 == 1).map(|i| events[i]).collect();
            let word: Vec<usize> = chosen.iter().map(|e| e.0).collect();
            let n = word.len();
            let shape = n >= 3 && word[0] == A && word[n - 1] == C && word[1..n - 1].iter().all(|&l| l == B);
            if !shape || chosen[n - 1].1 - chosen[0].1 > window {
                continue;
            }
            let p = |k: usize| chosen[k].3;
            let rising = (2..n - 1).all(|k| p(k - 1).is_none() || matches!((p(k), p(k - 1)), (Some(x), Some(y)) if x > y));
            let below = matches!((p(n - 1), p(n - 2)), (Some(x), Some(y)) if x < y);
            if rising && below {
                count += 1;
                sum += chosen.iter().map(|e| e.2 as u128).sum::<u128>();
                for e in chosen.iter().filter(|e| of[e.0]) {
                    extremes = join(extremes, Some((e.2, e.2)));
                }
            }
        }
        (count, sum, extremes)
    }

    fn run(spec: Spec, events: &[(usize, i64, u64, Option<i64>)]) -> (u128, u128, Ext) {
        let mut engine = Engine::new(spec).unwrap();
        for &(letter, t, v, p) in events {
            let attrs: Box<[Value]> = vec![p.map_or(Value::Null, Value::Int)].into();
            engine.feed(Some(letter), t, v, attrs).unwrap();
        }
        let d = &engine.totals().matches;
        (d.c.to_biguint().try_into().unwrap(), d.s.to_biguint().try_into().unwrap(), engine.totals().extrema)
    }

    fn with_extrema(mut spec: Spec, of: &[bool]) -> Spec {
        spec.extrema = Some(of.to_vec());
        spec
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(200))]
        /// The indexed and the scanning engine both equal an enumeration of every index set,
        /// with expiry (small windows), ties, NULLs and equal timestamps.
        #[test]
        fn engine_agrees_with_enumeration(
            raw in proptest::collection::vec((0usize..3, 0i64..3, 0u64..5, proptest::option::weighted(0.85, 0i64..4)), 0..11),
            window in 0i64..8,
            of in proptest::collection::vec(proptest::bool::ANY, 3),
        ) {
            let mut t = 0;
            let events: Vec<_> = raw.into_iter().map(|(l, gap, v, p)| { t += gap; (l, t, v, p) }).collect();
            let expected = naive(&events, window, &of);
            prop_assert_eq!(run(with_extrema(rising_run(window, true), &of), &events), expected);
            prop_assert_eq!(run(with_extrema(rising_run(window, false), &of), &events), expected);
            let (count, sum, _) = expected;
            prop_assert_eq!(run(rising_run(window, true), &events), (count, sum, None));
        }

        /// An engine saved and restored at any point goes on exactly as the one never saved:
        /// same totals after every later event, same counting state.
        #[test]
        fn a_restored_engine_goes_on_alike(
            raw in proptest::collection::vec((0usize..4, 0i64..3, 0u64..5, proptest::option::weighted(0.85, 0i64..4)), 0..14),
            window in 0i64..8,
            cut in 0usize..14,
        ) {
            let mut t = 0;
            let events: Vec<_> = raw.into_iter().map(|(l, gap, v, p)| { t += gap; (l, t, v, p) }).collect();
            let feed = |engine: &mut Engine, &(l, t, v, p): &(usize, i64, u64, Option<i64>)| {
                let attrs: Box<[Value]> = vec![p.map_or(Value::Null, Value::Int)].into();
                engine.feed((l < 3).then_some(l), t, v, attrs).unwrap();  // letter 3: outside the query
            };
            let spec = || with_extrema(rising_run(window, true), &[true, false, true]);
            let (mut whole, mut cut_one) = (Engine::new(spec()).unwrap(), Engine::new(spec()).unwrap());
            let cut = cut.min(events.len());
            for e in &events[..cut] {
                feed(&mut whole, e);
                feed(&mut cut_one, e);
            }
            let mut restored = Engine::restore(spec(), cut_one.saved()).unwrap();
            prop_assert_eq!(restored.keys(), whole.keys());
            for e in &events[cut..] {
                feed(&mut whole, e);
                feed(&mut restored, e);
                prop_assert_eq!(restored.totals(), whole.totals());
            }
            prop_assert_eq!((restored.events, restored.skipped, restored.held()), (whole.events, whole.skipped, whole.held()));
        }
    }

    #[test]
    fn an_edited_saved_engine_is_an_error() {
        let mut engine = Engine::new(rising_run(5, true)).unwrap();
        for (l, t) in [(A, 0), (B, 1), (C, 2)] {
            engine.feed(Some(l), t, 1, vec![Value::Int(t)].into()).unwrap();
        }
        let good = engine.saved();
        let edits: [fn(&mut Saved); 7] = [
            |s| s.held[0].0 = 7,                          // a letter outside the query
            |s| s.held[1].1 = -1,                         // timestamps out of order
            |s| s.held[0].1 = -10,                        // outside the window
            |s| s.held[2].3 = vec![].into(),              // attributes missing
            |s| s.events = 1,                             // fewer events than elements
            |s| s.last_timestamp = None,
            |s| s.last_timestamp = Some(1),               // the latest before an element
        ];
        for edit in edits {
            let mut saved = good.clone();
            edit(&mut saved);
            assert!(matches!(Engine::restore(rising_run(5, true), saved), Err(Error::State(_))));
        }
        assert!(Engine::restore(rising_run(5, true), good).is_ok());
    }
}
