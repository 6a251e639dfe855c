//! A condition compiled to a postfix program, evaluated over the registers a partial match
//! carries and the attributes of the event it is about to take (SQL three-valued logic; every
//! operand is evaluated, as in the Python evaluator, so errors do not depend on shortcuts).
use super::value::{compare, show, CmpOp, Value};
use crate::engine::error::Error;

/// What one register slot keeps of the match's elements with letter `letter`: the last
/// `size` values of attribute column `column`, or (`first`) its first `size` values.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Slot {
    pub letter: usize,
    pub column: usize,
    pub first: bool,
    pub size: usize,
}

/// The registers of a partial match, all slots side by side. A "last" slot holds its values
/// newest first (NULL where no element was taken); a "first" slot holds the number taken so
/// far (capped at its size) and then its values in order.
pub type Key = Box<[Value]>;

#[derive(Clone, Debug)]
pub struct Layout {
    pub slots: Vec<Slot>,
    offsets: Vec<usize>,
    pub width: usize,
}

impl Layout {
    pub fn new(slots: Vec<Slot>) -> Layout {
        let mut offsets = Vec::with_capacity(slots.len());
        let mut width = 0;
        for s in &slots {
            offsets.push(width);
            width += s.size + usize::from(s.first);
        }
        Layout { slots, offsets, width }
    }

    pub fn empty(&self) -> Key {
        let mut key = vec![Value::Null; self.width];
        for (s, slot) in self.slots.iter().enumerate() {
            if slot.first {
                key[self.offsets[s]] = Value::Int(0);
            }
        }
        key.into_boxed_slice()
    }

    /// Position of the n-th last value (n >= 1) of a "last" slot.
    pub fn last_position(&self, slot: usize, n: usize) -> usize {
        self.offsets[slot] + n - 1
    }

    fn taken(&self, key: &[Value], slot: usize) -> usize {
        match key[self.offsets[slot]] {
            Value::Int(n) => n as usize,
            _ => 0,
        }
    }

    /// The registers after taking an element with letter `letter` and attributes `attrs`,
    /// with the slots no later condition reads (`live[s]` false) cleared.
    pub fn update(&self, key: &[Value], letter: usize, attrs: &[Value], live: &[bool]) -> Key {
        let mut out: Vec<Value> = key.to_vec();
        for (s, slot) in self.slots.iter().enumerate() {
            let at = self.offsets[s];
            if !live[s] {
                out[at..at + slot.size + usize::from(slot.first)].fill(Value::Null);
                if slot.first {
                    out[at] = Value::Int(0);
                }
                continue;
            }
            if slot.letter != letter {
                continue;
            }
            if slot.first {
                let taken = self.taken(key, s);
                if taken < slot.size {
                    out[at + 1 + taken] = attrs[slot.column].clone();
                    out[at] = Value::Int(taken as i64 + 1);
                }
            } else {
                out[at..at + slot.size].rotate_right(1);
                out[at] = attrs[slot.column].clone();
            }
        }
        out.into_boxed_slice()
    }
}

/// One instruction of a postfix program.
#[derive(Clone, Debug)]
pub enum Instr {
    Const(Value),
    /// An attribute column of the element being judged.
    Current(usize),
    /// The n-th last value (n >= 1) of a "last" slot.
    Last { slot: usize, n: usize },
    /// Index n of a "first" slot; `current`: the column to read when the slot's letter is the
    /// condition's own and the element being judged is that n-th element.
    First { slot: usize, n: usize, current: Option<usize> },
    Negate,
    Arithmetic(u8),
    Compare(CmpOp),
    IsNull { negated: bool },
    Not,
    And(usize),
    Or(usize),
}

#[derive(Clone, Debug)]
pub struct Program {
    pub code: Vec<Instr>,
    /// Named in error messages ("condition of B").
    pub letter: char,
}

impl Program {
    /// Check the program is well formed: every instruction finds its operands and one value
    /// is left; references stay inside the layout.
    pub fn check(&self, layout: &Layout, columns: usize) -> Result<(), Error> {
        let mut depth: usize = 0;
        let bad = |why: &str| Error::input(format!("condition of {}: malformed program ({why})", self.letter));
        for instr in &self.code {
            let (pops, pushes) = match instr {
                Instr::Const(_) => (0, 1),
                Instr::Current(c) => {
                    if *c >= columns {
                        return Err(bad("column out of range"));
                    }
                    (0, 1)
                }
                Instr::Last { slot, n } => {
                    let s = layout.slots.get(*slot).ok_or_else(|| bad("slot out of range"))?;
                    if s.first || *n == 0 || *n > s.size {
                        return Err(bad("LAST outside its slot"));
                    }
                    (0, 1)
                }
                Instr::First { slot, n, current } => {
                    let s = layout.slots.get(*slot).ok_or_else(|| bad("slot out of range"))?;
                    if !s.first || *n >= s.size || current.is_some_and(|c| c >= columns) {
                        return Err(bad("FIRST outside its slot"));
                    }
                    (0, 1)
                }
                Instr::Negate | Instr::Not | Instr::IsNull { .. } => (1, 1),
                Instr::Arithmetic(_) | Instr::Compare(_) => (2, 1),
                Instr::And(k) | Instr::Or(k) => (*k, 1),
            };
            depth = depth.checked_sub(pops).ok_or_else(|| bad("stack underflow"))? + pushes;
        }
        if depth != 1 {
            return Err(bad("does not leave one value"));
        }
        Ok(())
    }

    /// The value of the program for an element with `attrs` taken after a partial match
    /// with registers `key`.
    pub fn value(&self, layout: &Layout, key: &[Value], attrs: &[Value], stack: &mut Vec<Value>) -> Result<Value, Error> {
        stack.clear();
        let context = |e: Error| Error::input(format!("condition of {}: {e}", self.letter));
        for instr in &self.code {
            let v = match instr {
                Instr::Const(v) => v.clone(),
                Instr::Current(c) => attrs[*c].clone(),
                Instr::Last { slot, n } => key[layout.last_position(*slot, *n)].clone(),
                Instr::First { slot, n, current } => {
                    let taken = layout.taken(key, *slot);
                    if *n < taken {
                        key[layout.offsets[*slot] + 1 + n].clone()
                    } else if *n == taken {
                        current.map_or(Value::Null, |c| attrs[c].clone())
                    } else {
                        Value::Null
                    }
                }
                Instr::Negate => stack.pop().unwrap().negate().map_err(context)?,
                Instr::Arithmetic(op) => {
                    let right = stack.pop().unwrap();
                    stack.pop().unwrap().arithmetic(*op, &right).map_err(context)?
                }
                Instr::Compare(op) => {
                    let right = stack.pop().unwrap();
                    compare(*op, &stack.pop().unwrap(), &right).map_err(context)?
                }
                Instr::IsNull { negated } => Value::Bool(stack.pop().unwrap().is_null() != *negated),
                Instr::Not => match truth(stack.pop().unwrap()).map_err(context)? {
                    None => Value::Null,
                    Some(b) => Value::Bool(!b),
                },
                Instr::And(k) | Instr::Or(k) => {
                    let decisive = matches!(instr, Instr::Or(_));
                    let (mut seen_decisive, mut seen_null) = (false, false);
                    for v in stack.drain(stack.len() - k..) {
                        match truth(v).map_err(context)? {
                            None => seen_null = true,
                            Some(b) => seen_decisive |= b == decisive,
                        }
                    }
                    if seen_decisive {
                        Value::Bool(decisive)
                    } else if seen_null {
                        Value::Null
                    } else {
                        Value::Bool(!decisive)
                    }
                }
            };
            stack.push(v);
        }
        Ok(stack.pop().unwrap())
    }

    /// Whether the condition holds (a NULL condition does not).
    pub fn holds(&self, layout: &Layout, key: &[Value], attrs: &[Value], stack: &mut Vec<Value>) -> Result<bool, Error> {
        match self.value(layout, key, attrs, stack)? {
            Value::Bool(b) => Ok(b),
            Value::Null => Ok(false),
            other => Err(Error::input(format!("condition of {}: the value {} is not true or false", self.letter, show(&other)))),
        }
    }
}

fn truth(v: Value) -> Result<Option<bool>, Error> {
    match v {
        Value::Null => Ok(None),
        Value::Bool(b) => Ok(Some(b)),
        other => Err(Error::input(format!("{} is not true or false", show(&other)))),
    }
}

/// `LAST(X.p, 1) IS NULL OR X.p > LAST(X.p, 1)` with X.p in column 0 and slot 0 (tests).
#[cfg(test)]
pub(crate) fn rising_or_first(letter: char) -> Program {
    Program {
        letter,
        code: vec![
            Instr::Last { slot: 0, n: 1 },
            Instr::IsNull { negated: false },
            Instr::Current(0),
            Instr::Last { slot: 0, n: 1 },
            Instr::Compare(CmpOp::Gt),
            Instr::Or(2),
        ],
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn registers_shift_and_fill() {
        let layout = Layout::new(vec![
            Slot { letter: 1, column: 0, first: false, size: 2 },
            Slot { letter: 1, column: 0, first: true, size: 1 },
        ]);
        let live = [true, true];
        let mut key = layout.empty();
        for p in [5, 7, 9] {
            key = layout.update(&key, 1, &[Value::Int(p)], &live);
        }
        assert_eq!(&key[..], &[Value::Int(9), Value::Int(7), Value::Int(1), Value::Int(5)]);
        let cleared = layout.update(&key, 0, &[Value::Null], &[false, true]);
        assert_eq!(&cleared[..2], &[Value::Null, Value::Null]);
    }

    #[test]
    fn rising_or_first_is_three_valued() {
        // LAST(B.p, 1) IS NULL OR B.p > LAST(B.p, 1)
        let layout = Layout::new(vec![Slot { letter: 0, column: 0, first: false, size: 1 }]);
        let program = rising_or_first('B');
        program.check(&layout, 1).unwrap();
        let mut stack = Vec::new();
        let holds = |before: Value, now: Value, stack: &mut Vec<Value>| program.holds(&layout, &[before], &[now], stack).unwrap();
        assert!(holds(Value::Null, Value::Int(1), &mut stack));
        assert!(holds(Value::Int(1), Value::Int(2), &mut stack));
        assert!(!holds(Value::Int(2), Value::Int(2), &mut stack));
        assert!(!holds(Value::Int(2), Value::Null, &mut stack));
    }
}
