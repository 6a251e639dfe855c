//! Condition values: exact numbers (machine integers with an exact-rational fallback),
//! strings, booleans and NULL, with SQL's arithmetic (division by zero is NULL).
use crate::engine::error::Error;
use num_bigint::BigInt;
use num_rational::BigRational;
use num_traits::{ToPrimitive, Zero};
use std::cmp::Ordering;
use std::sync::Arc;

/// A value of a condition. Numbers are normalised (an integer that fits `i64` is always
/// `Int`), so structural equality is numeric equality and the derived hash agrees with it.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Value {
    Null,
    Int(i64),
    Rat(Arc<BigRational>),
    Str(Arc<str>),
    Bool(bool),
}

/// The kind of a non-NULL value: 0 number, 1 string, 2 boolean.
pub const KINDS: usize = 3;

impl Value {
    pub fn ratio(r: BigRational) -> Value {
        if r.is_integer() {
            if let Some(i) = r.numer().to_i64() {
                return Value::Int(i);
            }
        }
        Value::Rat(Arc::new(r))
    }

    pub fn big_int(i: BigInt) -> Value {
        match i.to_i64() {
            Some(v) => Value::Int(v),
            None => Value::Rat(Arc::new(BigRational::from_integer(i))),
        }
    }

    pub fn is_null(&self) -> bool {
        matches!(self, Value::Null)
    }

    /// `None` for NULL.
    pub fn kind(&self) -> Option<usize> {
        match self {
            Value::Null => None,
            Value::Int(_) | Value::Rat(_) => Some(0),
            Value::Str(_) => Some(1),
            Value::Bool(_) => Some(2),
        }
    }

    pub fn kind_name(kind: usize) -> &'static str {
        ["number", "string", "boolean"][kind]
    }

    fn to_ratio(&self) -> BigRational {
        match self {
            Value::Int(i) => BigRational::from_integer(BigInt::from(*i)),
            Value::Rat(r) => (**r).clone(),
            _ => unreachable!("to_ratio of a non-number"),
        }
    }

    /// `-self` (NULL stays NULL).
    pub fn negate(&self) -> Result<Value, Error> {
        match self {
            Value::Null => Ok(Value::Null),
            Value::Int(i) => Ok(i.checked_neg().map(Value::Int).unwrap_or_else(|| Value::ratio(-self.to_ratio()))),
            Value::Rat(r) => Ok(Value::ratio(-(**r).clone())),
            other => Err(not_a_number(other)),
        }
    }

    /// `self op other` for op in `+ - * /`; NULL if either is NULL or on division by zero.
    pub fn arithmetic(&self, op: u8, other: &Value) -> Result<Value, Error> {
        if self.kind().is_some_and(|k| k != 0) {
            return Err(not_a_number(self));
        }
        if other.kind().is_some_and(|k| k != 0) {
            return Err(not_a_number(other));
        }
        if self.is_null() || other.is_null() {
            return Ok(Value::Null);
        }
        if let (Value::Int(a), Value::Int(b)) = (self, other) {
            let fast = match op {
                b'+' => a.checked_add(*b),
                b'-' => a.checked_sub(*b),
                b'*' => a.checked_mul(*b),
                _ if *b == 0 => return Ok(Value::Null),
                _ if a.checked_rem(*b) == Some(0) => a.checked_div(*b),
                _ => None,
            };
            if let Some(v) = fast {
                return Ok(Value::Int(v));
            }
        }
        let (a, b) = (self.to_ratio(), other.to_ratio());
        Ok(Value::ratio(match op {
            b'+' => a + b,
            b'-' => a - b,
            b'*' => a * b,
            _ if b.is_zero() => return Ok(Value::Null),
            _ => a / b,
        }))
    }
}

fn not_a_number(v: &Value) -> Error {
    Error::input(format!("arithmetic on {}, which is not a number", show(v)))
}

/// A value as a message shows it.
pub fn show(v: &Value) -> String {
    match v {
        Value::Null => "NULL".into(),
        Value::Int(i) => i.to_string(),
        Value::Rat(r) => r.to_string(),
        Value::Str(s) => format!("{s:?}"),
        Value::Bool(b) => if *b { "TRUE" } else { "FALSE" }.into(),
    }
}

/// Numbers by value, strings by code point, FALSE < TRUE; kinds (and NULL) in the order
/// NULL < numbers < strings < booleans, which the value index relies on.
impl Ord for Value {
    fn cmp(&self, other: &Self) -> Ordering {
        let rank = |v: &Value| v.kind().map_or(0, |k| k + 1);
        match (self, other) {
            (Value::Int(a), Value::Int(b)) => a.cmp(b),
            (Value::Str(a), Value::Str(b)) => a.cmp(b),
            (Value::Bool(a), Value::Bool(b)) => a.cmp(b),
            _ if self.kind() == Some(0) && other.kind() == Some(0) => self.to_ratio().cmp(&other.to_ratio()),
            _ => rank(self).cmp(&rank(other)),
        }
    }
}

impl PartialOrd for Value {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

/// A comparison operator.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CmpOp {
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
}

impl CmpOp {
    pub fn parse(text: &str) -> Option<CmpOp> {
        Some(match text {
            "=" => CmpOp::Eq,
            "<>" => CmpOp::Ne,
            "<" => CmpOp::Lt,
            "<=" => CmpOp::Le,
            ">" => CmpOp::Gt,
            ">=" => CmpOp::Ge,
            _ => return None,
        })
    }

    pub fn holds(self, ordering: Ordering) -> bool {
        match self {
            CmpOp::Eq => ordering == Ordering::Equal,
            CmpOp::Ne => ordering != Ordering::Equal,
            CmpOp::Lt => ordering == Ordering::Less,
            CmpOp::Le => ordering != Ordering::Greater,
            CmpOp::Gt => ordering == Ordering::Greater,
            CmpOp::Ge => ordering != Ordering::Less,
        }
    }
}

/// `left op right` with three-valued logic: NULL if either side is NULL; comparing values of
/// different kinds is an error (as in the Python evaluator).
pub fn compare(op: CmpOp, left: &Value, right: &Value) -> Result<Value, Error> {
    match (left.kind(), right.kind()) {
        (None, _) | (_, None) => Ok(Value::Null),
        (Some(a), Some(b)) if a != b => Err(Error::input(format!(
            "a condition compares {} ({}) with {} ({})",
            show(left),
            Value::kind_name(a),
            show(right),
            Value::kind_name(b)
        ))),
        _ => Ok(Value::Bool(op.holds(left.cmp(right)))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rat(n: i64, d: i64) -> Value {
        Value::ratio(BigRational::new(BigInt::from(n), BigInt::from(d)))
    }

    #[test]
    fn numbers_are_exact_and_normalised() {
        assert_eq!(rat(4, 2), Value::Int(2));
        assert_eq!(Value::Int(1).arithmetic(b'/', &Value::Int(10)).unwrap(), rat(1, 10));
        assert_eq!(rat(1, 10).arithmetic(b'+', &rat(2, 10)).unwrap(), rat(3, 10));
        assert_eq!(Value::Int(1).arithmetic(b'/', &Value::Int(0)).unwrap(), Value::Null);
        assert_eq!(Value::Int(i64::MAX).arithmetic(b'+', &Value::Int(1)).unwrap().arithmetic(b'-', &Value::Int(1)).unwrap(), Value::Int(i64::MAX));
        assert!(rat(1, 3) < Value::Int(1) && Value::Int(-1) < rat(-1, 3));
    }

    #[test]
    fn comparisons_are_three_valued_and_typed() {
        assert_eq!(compare(CmpOp::Lt, &Value::Null, &Value::Int(1)).unwrap(), Value::Null);
        assert_eq!(compare(CmpOp::Ge, &rat(3, 2), &Value::Int(1)).unwrap(), Value::Bool(true));
        assert!(compare(CmpOp::Eq, &Value::Str("a".into()), &Value::Int(1)).is_err());
        assert!(Value::Str("x".into()).arithmetic(b'+', &Value::Int(1)).is_err());
    }
}
