//! Numbers: exact counters that never wrap and the floats that rank elements.
//!
//! [`num`]: checked `u128`, 256-bit and big integers behind one trait; [`xf`]: the
//! extended-range float of estimates; [`dual`]: count + sum·ε over any of them; [`tier`]: the
//! promotion ladder u128 → U256 → BigUint, written once for every exact structure.
pub mod dual;
pub mod num;
pub mod tier;
pub mod xf;
