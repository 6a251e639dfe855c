//! A summary run without Python, for profilers (callgrind) and quick before/after timing.
//! Input (written by a script): `n start alphabet`, the final flags, the transition table,
//! the letter probabilities, then one `symbol timestamp` line per event.
//! Usage: summary_bench FILE SIZE TAU [STRATEGY] [REPEAT]; STRATEGY `exact` runs the exact
//! engine over the window instead (SIZE is ignored). Prints the best wall-clock rate and the
//! best on-CPU rate (this thread's CPU time, from /proc: less disturbed by other jobs).
use std::sync::Arc;
use std::time::Instant;
use suse_kernel::engine::batch::Raw;
use suse_kernel::automaton::dfa::{Dfa, DfaSpec};
use suse_kernel::engine::ExactEngine;
use suse_kernel::engine::limits::Limits;
use suse_kernel::automaton::semantics::{AnyMatch, Ev, Policy};
use suse_kernel::summary::selection::StrategyKind;
use suse_kernel::summary::{Aggregate, Config, Summary};

/// This thread's time on a CPU so far, in seconds (Linux; NaN elsewhere).
fn cpu_seconds() -> f64 {
    let stat = std::fs::read_to_string("/proc/thread-self/schedstat").unwrap_or_default();
    stat.split(' ').next().and_then(|ns| ns.parse::<f64>().ok()).map_or(f64::NAN, |ns| ns / 1e9)
}

/// Best (wall, CPU) seconds of `repeat` runs of `run` on a fresh `make()`; `report` sees each
/// result after its timing.
fn best_of<T>(repeat: usize, make: impl Fn() -> T, run: impl Fn(&mut T), report: impl Fn(T)) -> (f64, f64) {
    let (mut wall, mut cpu) = (f64::INFINITY, f64::INFINITY);
    for _ in 0..repeat {
        let mut state = make();
        let (t0, c0) = (Instant::now(), cpu_seconds());
        run(&mut state);
        cpu = cpu.min(cpu_seconds() - c0);
        wall = wall.min(t0.elapsed().as_secs_f64());
        report(state);
    }
    (wall, cpu)
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let text = std::fs::read_to_string(&args[1]).expect("input file");
    let (size, tau): (usize, i64) = (args[2].parse().unwrap(), args[3].parse().unwrap());
    let name = args.get(4).map_or("suse", |s| s.as_str());
    let repeat: usize = args.get(5).map_or(3, |s| s.parse().unwrap());
    let mut lines = text.lines();
    let head: Vec<&str> = lines.next().unwrap().split(' ').collect();
    let words = |l: &str| l.split(' ').map(str::to_owned).collect::<Vec<_>>();
    let finals = words(lines.next().unwrap()).iter().map(|w| w == "1").collect();
    let table = words(lines.next().unwrap()).iter().map(|w| w.parse().unwrap()).collect();
    let probabilities = words(lines.next().unwrap()).iter().map(|w| w.parse().unwrap()).collect();
    let spec = DfaSpec { n: head[0].parse().unwrap(), start: head[1].parse().unwrap(), alphabet: head[2].as_bytes().to_vec(), negated: vec![], finals, table };
    let dfa = Arc::new(Dfa::new(spec).unwrap());
    let events: Vec<Ev> = lines
        .map(|l| {
            let (s, t) = l.split_once(' ').unwrap();
            Ev { sym: s.parse().unwrap(), t: t.parse().unwrap(), v: 1, gap: 0 }
        })
        .collect();
    if name == "exact" {
        let (wall, cpu) = best_of(
            repeat,
            || ExactEngine::new(dfa.clone(), tau, Policy::Any, &Limits::default()).unwrap(),
            |w| events.iter().for_each(|ev| w.feed(Raw::Element(*ev)).unwrap()),
            |w| eprintln!("totals {:?}", w.totals()),
        );
        let n = events.len() as f64;
        println!("{} events, exact, tau = {tau}: {:.0} events/s, {:.0} on CPU (best of {repeat})", events.len(), n / wall, n / cpu);
        return;
    }
    let strategy = StrategyKind::parse(name).expect("strategy");
    let cfg = Config { size, tau, strategy, aggregate: Aggregate::Count, time_to_live: None, probabilities: Some(probabilities), seed: 0 };
    let (wall, cpu) = best_of(
        repeat,
        || Summary::<AnyMatch>::new(dfa.clone(), cfg.clone()),
        |s| events.iter().for_each(|ev| s.observe(*ev).unwrap()),
        |s| {
            let r = s.readout();
            let count: num_bigint::BigUint = (0..dfa.n).filter(|&q| dfa.finals[q]).map(|q| r.g[q].c.clone()).sum();
            eprintln!("evictions {} count {} detected {}", s.evictions, count, r.detected.c);
        },
    );
    let n = events.len() as f64;
    println!("{} events, (|S|, tau) = ({size}, {tau}): {:.0} events/s, {:.0} on CPU (best of {repeat})", events.len(), n / wall, n / cpu);
}
