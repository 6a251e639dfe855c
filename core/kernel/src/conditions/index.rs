//! The value-keyed index of one automaton state: the partial-match counts (count and sum, as
//! [`Dual`]s) summed by the value of one register, so that a comparison `current op reference`
//! is answered for all partial matches at once: a hash map for `=`/`<>`, Fenwick trees over
//! value ranks for `<`, `<=`, `>`, `>=`.
//!
//! New values keep arriving, so ranks cannot be fixed in advance. The ordered part is a
//! logarithmic collection of static Fenwick trees (Bentley and Saxe): a new value makes a tree
//! of one, and trees of equal size merge, so a value is re-ranked O(log n) times; a query sums
//! O(log n) trees. Values whose count fell to zero are dropped when their tree merges, and
//! everything is compacted into one tree when more than half of what is stored is zero.
use super::count::Count;
use super::value::{CmpOp, Value, KINDS};
use crate::numbers::dual::Dual;
use crate::engine::error::Error;
use super::hash::FxMap;

pub type D = Dual<Count>;

fn internal(what: &str) -> Error {
    Error::internal(format!("value index: {what}"))
}

/// One static Fenwick tree over sorted, distinct values.
#[derive(Clone, Debug)]
struct Level {
    values: Vec<Value>,
    points: Vec<D>,
    tree: Vec<D>, // 1-based
}

impl Level {
    fn build(entries: Vec<(Value, D)>) -> Level {
        let n = entries.len();
        let mut tree = vec![D::zero(); n + 1];
        let (mut values, mut points) = (Vec::with_capacity(n), Vec::with_capacity(n));
        for (i, (v, d)) in entries.into_iter().enumerate() {
            tree[i + 1] = d.clone();
            values.push(v);
            points.push(d);
        }
        for i in 1..=n {
            let parent = i + (i & i.wrapping_neg());
            if parent <= n {
                let child = tree[i].clone();
                tree[parent].add_assign(&child).expect("counts cannot fail to add");
            }
        }
        Level { values, points, tree }
    }

    fn update(&mut self, rank: usize, d: &D, add: bool) -> Result<(), Error> {
        let apply = |x: &mut D| if add { x.add_assign(d) } else { x.sub_assign(d) };
        apply(&mut self.points[rank]).map_err(|_| internal("a count went below zero"))?;
        let mut i = rank + 1;
        while i < self.tree.len() {
            apply(&mut self.tree[i]).map_err(|_| internal("a tree sum went below zero"))?;
            i += i & i.wrapping_neg();
        }
        Ok(())
    }

    /// Sum of the values `< bound` (`<= bound` when inclusive).
    fn below(&self, bound: &Value, inclusive: bool) -> D {
        let mut i = self.values.partition_point(|v| if inclusive { v <= bound } else { v < bound });
        let mut sum = D::zero();
        while i > 0 {
            sum.add_assign(&self.tree[i]).expect("counts cannot fail to add");
            i &= i - 1;
        }
        sum
    }
}

/// Sums by value in order, for any number of distinct values arriving over time.
#[derive(Clone, Debug, Default)]
pub struct Ordered {
    levels: Vec<Option<Level>>,
    at: FxMap<Value, (usize, usize)>,
    live: usize,
    stored: usize,
}

impl Ordered {
    pub fn add(&mut self, v: &Value, d: &D) -> Result<(), Error> {
        if let Some(&(level, rank)) = self.at.get(v) {
            let l = self.levels[level].as_mut().ok_or_else(|| internal("missing level"))?;
            if l.points[rank].is_zero() {
                self.live += 1;
            }
            return l.update(rank, d, true);
        }
        self.live += 1;
        self.stored += 1;
        let mut carry = vec![(v.clone(), d.clone())];
        let mut k = 0;
        while let Some(Some(level)) = self.levels.get_mut(k).map(Option::take) {
            carry = self.merge(level, carry);
            k += 1;
        }
        self.place(k, carry);
        Ok(())
    }

    pub fn sub(&mut self, v: &Value, d: &D) -> Result<(), Error> {
        let &(level, rank) = self.at.get(v).ok_or_else(|| internal("subtracting an absent value"))?;
        let l = self.levels[level].as_mut().ok_or_else(|| internal("missing level"))?;
        l.update(rank, d, false)?;
        if l.points[rank].is_zero() {
            self.live -= 1;
            if self.stored > 2 * self.live + 32 {
                self.compact();
            }
        }
        Ok(())
    }

    /// Sum of the values `< bound` (`<= bound` when inclusive).
    pub fn below(&self, bound: &Value, inclusive: bool) -> D {
        let mut sum = D::zero();
        for level in self.levels.iter().flatten() {
            sum.add_assign(&level.below(bound, inclusive)).expect("counts cannot fail to add");
        }
        sum
    }

    /// Distinct values stored (zeros not yet dropped included).
    pub fn stored(&self) -> usize {
        self.stored
    }

    /// The entries of `level` and `other` (sorted), without zeros, sorted.
    fn merge(&mut self, level: Level, other: Vec<(Value, D)>) -> Vec<(Value, D)> {
        let mine: Vec<(Value, D)> = level.values.into_iter().zip(level.points).collect();
        let mut out = Vec::with_capacity(mine.len() + other.len());
        let (mut a, mut b) = (mine.into_iter().peekable(), other.into_iter().peekable());
        loop {
            let next = match (a.peek(), b.peek()) {
                (Some(x), Some(y)) => if x.0 < y.0 { a.next() } else { b.next() },
                (Some(_), None) => a.next(),
                (None, Some(_)) => b.next(),
                (None, None) => break,
            };
            let (v, d) = next.unwrap();
            if d.is_zero() {
                self.at.remove(&v);
                self.stored -= 1;
            } else {
                out.push((v, d));
            }
        }
        out
    }

    fn place(&mut self, k: usize, entries: Vec<(Value, D)>) {
        if self.levels.len() <= k {
            self.levels.resize_with(k + 1, || None);
        }
        for (rank, (v, _)) in entries.iter().enumerate() {
            self.at.insert(v.clone(), (k, rank));
        }
        self.levels[k] = if entries.is_empty() { None } else { Some(Level::build(entries)) };
    }

    fn compact(&mut self) {
        let mut all = Vec::new();
        for level in std::mem::take(&mut self.levels).into_iter().flatten() {
            all = self.merge(level, all);
        }
        // one tree, at the level its size belongs to
        let k = all.len().next_power_of_two().trailing_zeros() as usize;
        self.place(k, all);
    }
}

/// Everything one state needs to answer `current op reference` for all its partial matches.
#[derive(Clone, Debug, Default)]
pub struct ValueIndex {
    ordered: Ordered,
    equal: FxMap<Value, D>,
    /// Partial matches whose reference is NULL.
    null: D,
    /// Partial matches whose reference is not NULL.
    total: D,
    /// Keys (not counts) with a non-NULL reference, by kind: comparing with another kind is
    /// an error, as it is when the condition is evaluated key by key.
    kinds: [usize; KINDS],
}

impl ValueIndex {
    /// Add `d` to the partial matches with reference `v`; `new_key`: a register key appeared.
    pub fn add(&mut self, v: &Value, d: &D, new_key: bool) -> Result<(), Error> {
        let Some(kind) = v.kind() else {
            return self.null.add_assign(d).map_err(|_| internal("overflow"));
        };
        self.kinds[kind] += usize::from(new_key);
        self.total.add_assign(d).map_err(|_| internal("overflow"))?;
        self.equal.entry(v.clone()).or_default().add_assign(d).map_err(|_| internal("overflow"))?;
        self.ordered.add(v, d)
    }

    /// Take `d` back; `removed_key`: a register key disappeared.
    pub fn sub(&mut self, v: &Value, d: &D, removed_key: bool) -> Result<(), Error> {
        let below_zero = |_| internal("a count went below zero");
        let Some(kind) = v.kind() else {
            return self.null.sub_assign(d).map_err(below_zero);
        };
        self.kinds[kind] -= usize::from(removed_key);
        self.total.sub_assign(d).map_err(below_zero)?;
        let sum = self.equal.get_mut(v).ok_or_else(|| internal("subtracting an absent value"))?;
        sum.sub_assign(d).map_err(below_zero)?;
        if sum.is_zero() {
            self.equal.remove(v);
        }
        self.ordered.sub(v, d)
    }

    /// The partial matches whose reference r satisfies `current op r`, plus (when
    /// `null_reference`) those whose reference is NULL.
    pub fn query(&self, op: CmpOp, current: &Value, null_reference: bool) -> Result<D, Error> {
        let mut sum = if null_reference { self.null.clone() } else { D::zero() };
        let Some(kind) = current.kind() else {
            return Ok(sum);
        };
        if let Some(other) = (0..KINDS).find(|&k| k != kind && self.kinds[k] > 0) {
            return Err(Error::input(format!(
                "a condition compares a {} with a {} of an earlier element",
                Value::kind_name(kind),
                Value::kind_name(other)
            )));
        }
        let equal = || self.equal.get(current).cloned().unwrap_or_default();
        let rest = |part: D| self.total.sub(&part).expect("a part is below its total");
        // `current op r` for the references r: `current > r` sums the r below current
        let matched = match op {
            CmpOp::Eq => equal(),
            CmpOp::Ne => rest(equal()),
            CmpOp::Gt => self.ordered.below(current, false),
            CmpOp::Ge => self.ordered.below(current, true),
            CmpOp::Lt => rest(self.ordered.below(current, true)),
            CmpOp::Le => rest(self.ordered.below(current, false)),
        };
        sum.add_assign(&matched).map_err(|_| internal("overflow"))?;
        Ok(sum)
    }

    pub fn stored(&self) -> usize {
        self.ordered.stored()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::numbers::num::Scalar;
    use proptest::prelude::*;

    fn d(c: u64, s: u64) -> D {
        Dual { c: Count::from_u64(c), s: Count::from_u64(s) }
    }

    fn naive(entries: &[(Value, u64, u64)], op: CmpOp, current: &Value, null_reference: bool) -> D {
        let mut sum = d(0, 0);
        for (v, c, s) in entries {
            let take = if v.is_null() { null_reference } else { !current.is_null() && op.holds(current.cmp(v)) };
            if take {
                sum.add_assign(&d(*c, *s)).unwrap();
            }
        }
        sum
    }

    #[derive(Debug, Clone)]
    enum Op {
        Add(Option<i64>, u64),
        Sub(usize),
        Query(usize, Option<i64>, bool),
    }

    fn op() -> impl Strategy<Value = Op> {
        prop_oneof![
            4 => (proptest::option::weighted(0.9, -20i64..20), 1u64..5).prop_map(|(v, c)| Op::Add(v, c)),
            3 => any::<usize>().prop_map(Op::Sub),
            2 => (0usize..6, proptest::option::weighted(0.9, -22i64..22), any::<bool>()).prop_map(|(o, v, n)| Op::Query(o, v, n)),
        ]
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(300))]
        /// Inserts, removals (down to zero, so compaction runs) and range sums agree with a
        /// plain list of (value, count, sum).
        #[test]
        fn index_agrees_with_a_list(ops in proptest::collection::vec(op(), 1..200)) {
            let mut index = ValueIndex::default();
            let mut list: Vec<(Value, u64, u64)> = Vec::new();
            let ops_by_code = [CmpOp::Eq, CmpOp::Ne, CmpOp::Lt, CmpOp::Le, CmpOp::Gt, CmpOp::Ge];
            let value = |v: Option<i64>| v.map_or(Value::Null, Value::Int);
            for op in ops {
                match op {
                    Op::Add(v, c) => {
                        let v = value(v);
                        let new_key = !list.iter().any(|e| e.0 == v);
                        index.add(&v, &d(c, c * 3), new_key).unwrap();
                        match list.iter_mut().find(|e| e.0 == v) {
                            Some(e) => { e.1 += c; e.2 += c * 3; }
                            None => list.push((v, c, c * 3)),
                        }
                    }
                    Op::Sub(i) if !list.is_empty() => {
                        let i = i % list.len();
                        let (v, c, _) = list[i].clone();
                        let (tc, ts) = (c.div_ceil(2), c.div_ceil(2) * 3);
                        index.sub(&v, &d(tc, ts), tc == c).unwrap();
                        if tc == c { list.remove(i); } else { list[i].1 -= tc; list[i].2 -= ts; }
                    }
                    Op::Sub(_) => {}
                    Op::Query(o, v, n) => {
                        let (op, current) = (ops_by_code[o], value(v));
                        prop_assert_eq!(index.query(op, &current, n).unwrap(), naive(&list, op, &current, n));
                    }
                }
                prop_assert!(index.stored() <= 2 * list.len() + 33);
            }
        }
    }

    #[test]
    fn mixed_kinds_are_an_error() {
        let mut index = ValueIndex::default();
        index.add(&Value::Int(1), &d(1, 0), true).unwrap();
        assert!(index.query(CmpOp::Lt, &Value::Str("a".into()), false).is_err());
        assert_eq!(index.query(CmpOp::Lt, &Value::Null, true).unwrap(), d(0, 0));
    }
}
