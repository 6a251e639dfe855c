//! Selection estimates kept per retained element (extended-range floats, never reported).
use crate::dual::DualX;
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Estimates {
    /// Present benefit per element: complete matches containing it (count, sum).
    pub pres: Vec<DualX>,
    /// Active local counters per element, flat |Z| each (zero outside the active window).
    pub al: Vec<DualX>,
    /// The active local counters need a recomputation before they are read.
    pub al_dirty: bool,
}

impl Estimates {
    pub fn drop_element(&mut self, p: usize, z: usize) {
        self.pres.remove(p);
        self.al.drain(p * z..(p + 1) * z);
    }

    pub fn push(&mut self, pres: DualX, al: &[DualX]) {
        self.pres.push(pres);
        self.al.extend_from_slice(al);
    }

    pub fn row(&self, i: usize, z: usize) -> &[DualX] {
        &self.al[i * z..(i + 1) * z]
    }

    pub fn validate(&self, n: usize, z: usize) -> Result<(), String> {
        if self.pres.len() != n || self.al.len() != n * z {
            return Err("selection estimates do not match the retained elements".into());
        }
        Ok(())
    }
}
