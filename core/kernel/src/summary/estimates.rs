//! Selection estimates kept per retained element (floats, never reported).
use crate::numbers::dual::{Dual, DualX};
use crate::numbers::xf::{Counts, Real, Xf};
use super::neighbourhood::JointWork;
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(bound = "")]
pub struct Estimates<F: Real> {
    /// Present benefit per element: complete matches containing it (count, sum).
    pub pres: Vec<Dual<F>>,
    /// Active local counters per element, flat |Z| each (zero outside the active window).
    pub al: Vec<Dual<F>>,
    /// The active local counters need a recomputation before they are read.
    pub al_dirty: bool,
    /// Working space of that recomputation, kept between events (not state).
    #[serde(skip)]
    pub(crate) fwd: Vec<Dual<F>>,
    /// The elements `fwd`'s rows were built over, from the first active one (not state).
    #[serde(skip)]
    pub(crate) fwd_over: Vec<crate::automaton::semantics::Ev>,
    #[serde(skip)]
    pub(crate) back: Vec<Dual<F>>,
    #[serde(skip)]
    pub(crate) scratch: Vec<Dual<F>>,
    /// What a next element completes from each state, pulled back by that sweep (not state).
    #[serde(skip)]
    pub(crate) completes: Vec<Dual<F>>,
    /// The sets a candidate element would form (not state).
    #[serde(skip)]
    pub(crate) formed: Vec<Dual<F>>,
    /// Working space of the joint matches of an evicted element (not state).
    #[serde(skip)]
    pub(crate) joint: JointWork<F>,
    /// The lowest present benefit before the active window, `(index, value)` in the
    /// aggregate's unit, the first of equal ones; `None` when not known. Those benefits only
    /// fall (an element leaving takes its joint matches), so selection keeps this up to date
    /// instead of scanning every inactive element per decision (not state).
    #[serde(skip)]
    pub(crate) inactive_min: Option<(usize, F)>,
}

impl<F: Real> Estimates<F> {
    /// Element `p` leaves; `active_start` is where the active window starts before it does.
    pub fn drop_element(&mut self, p: usize, z: usize, active_start: usize) {
        self.pres.remove(p);
        self.inactive_min = match self.inactive_min {
            Some((i, _)) if i == p => None,
            Some((i, v)) => Some((if i > p { i - 1 } else { i }, v)),
            None => None,
        };
        if self.al_dirty {
            // Every active row is recomputed before it is read and the rows before the active
            // window are all zero, so one row fewer at the end is the same as moving the rest.
            self.al.truncate(self.al.len() - z);
        } else {
            let row = zero_row_to_drop(p, active_start);
            self.al.drain(row * z..(row + 1) * z);
        }
    }

    pub fn push(&mut self, pres: Dual<F>, al: &[Dual<F>]) {
        self.pres.push(pres);
        self.al.extend_from_slice(al);
    }

    /// Element `k` before the active window has present benefit `value`: lowered (an evicted
    /// neighbour took matches), or `k` just left the active window (after every element kept
    /// so far). It is the lowest if below the lowest, or equal to it and earlier, or if it was
    /// the lowest (it only fell).
    pub fn lowered(&mut self, k: usize, value: F) {
        if let Some((i, v)) = self.inactive_min {
            if value < v || (value == v && k < i) || k == i {
                self.inactive_min = Some((k, value));
            }
        }
    }

    pub fn row(&self, i: usize, z: usize) -> &[Dual<F>] {
        &self.al[i * z..(i + 1) * z]
    }

    pub fn validate(&self, n: usize, z: usize) -> Result<(), String> {
        if self.pres.len() != n || self.al.len() != n * z {
            return Err("selection estimates do not match the retained elements".into());
        }
        Ok(())
    }

    fn convert<G: Real>(&self) -> Estimates<G> {
        let f = |d: &Dual<F>| Dual { c: G::from_xf(d.c.to_xf()), s: if G::SUMS { G::from_xf(d.s.to_xf()) } else { G::zero() } };
        Estimates { pres: self.pres.iter().map(f).collect(), al: self.al.iter().map(f).collect(), al_dirty: self.al_dirty, ..Estimates::default() }
    }
}

/// Which row of a per-element table whose rows before the active window are all zero to take
/// out when element `p` leaves: `p` itself if it is active, else the last row before the
/// window (a zero row like `p`'s), which moves only the active rows after it, not every row
/// after `p` (in a summary much larger than its active window most rows lie before it).
pub fn zero_row_to_drop(p: usize, active_start: usize) -> usize {
    if p < active_start {
        active_start - 1
    } else {
        p
    }
}

/// The estimates in `f64` or, once values may leave its range, in [`Xf`]; with sums, or
/// ([`Counts`]) without them where the aggregate is not SUM and nothing reads them. Saved
/// state holds the [`Xf`] form with sums (0 in the count-only forms), so the format does not
/// depend on the form.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(into = "Estimates<Xf>", from = "Estimates<Xf>")]
pub enum Est {
    Narrow(Estimates<f64>),
    Wide(Estimates<Xf>),
    NarrowCount(Estimates<Counts<f64>>),
    WideCount(Estimates<Counts<Xf>>),
}

impl Default for Est {
    fn default() -> Self {
        Est::Narrow(Estimates::default())
    }
}

impl From<Est> for Estimates<Xf> {
    fn from(e: Est) -> Self {
        match e {
            Est::Wide(w) => w,
            other => crate::on_est!(&other, e => e.convert()),
        }
    }
}

impl From<Estimates<Xf>> for Est {
    fn from(w: Estimates<Xf>) -> Self {
        Est::Wide(w)
    }
}

/// Run `$body` with `$e` bound to the estimates in whichever float type they are held.
#[macro_export]
macro_rules! on_est {
    ($est:expr, $e:ident => $body:expr) => {
        match $est {
            $crate::summary::estimates::Est::Narrow($e) => $body,
            $crate::summary::estimates::Est::Wide($e) => $body,
            $crate::summary::estimates::Est::NarrowCount($e) => $body,
            $crate::summary::estimates::Est::WideCount($e) => $body,
        }
    };
}

/// Run `$body` with `$e` bound to the estimates of summary `$s` taken out of it, in whichever
/// float type they are held: `$body` may read the rest of the summary and write the estimates
/// (their working space too). They are put back after.
#[macro_export]
macro_rules! with_est_taken {
    ($s:ident, $e:ident => $body:expr) => {{
        let mut taken = std::mem::take(&mut $s.est);
        let out = $crate::on_est!(&mut taken, $e => { let $s = &*$s; $body });
        // What stood in holds no allocation: forgetting it skips a drop of ~20 empty buffers.
        std::mem::forget(std::mem::replace(&mut $s.est, taken));
        out
    }};
}

impl Est {
    pub fn is_wide(&self) -> bool {
        matches!(self, Est::Wide(_) | Est::WideCount(_))
    }

    /// Whether the estimates carry sums (the count-only forms do not).
    pub fn has_sums(&self) -> bool {
        matches!(self, Est::Narrow(_) | Est::Wide(_))
    }

    /// Hold the estimates in [`Xf`] if `wide`, else back in `f64` when every value is inside
    /// its range (after loading saved state); with sums if `sums`. Every count keeps its value.
    pub fn fit(&mut self, wide: bool, sums: bool) {
        let wide = wide || (self.is_wide() && !self.fits_f64());
        if (wide, sums) == (self.is_wide(), self.has_sums()) {
            return;
        }
        *self = on_est!(&*self, e => match (wide, sums) {
            (false, true) => Est::Narrow(e.convert()),
            (true, true) => Est::Wide(e.convert()),
            (false, false) => Est::NarrowCount(e.convert()),
            (true, false) => Est::WideCount(e.convert()),
        });
    }

    fn fits_f64(&self) -> bool {
        let fits = |d: DualX| d.c.to_f64() < f64::MAX && d.s.to_f64() < f64::MAX;
        on_est!(self, e => e.pres.iter().chain(&e.al).all(|d| fits(Dual { c: d.c.to_xf(), s: d.s.to_xf() })))
    }

    pub fn drop_element(&mut self, p: usize, z: usize, active_start: usize) {
        on_est!(self, e => e.drop_element(p, z, active_start))
    }

    pub fn validate(&self, n: usize, z: usize) -> Result<(), String> {
        on_est!(self, e => e.validate(n, z))
    }

    pub fn al_dirty(&self) -> bool {
        on_est!(self, e => e.al_dirty)
    }

    pub fn set_al_dirty(&mut self) {
        on_est!(self, e => e.al_dirty = true)
    }

    /// Both estimates in [`Xf`], for reading.
    pub fn wide(&self) -> Estimates<Xf> {
        self.clone().into()
    }
}
