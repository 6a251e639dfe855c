//! A summary run without Python, for profilers (callgrind) and quick before/after timing.
//! Input (written by a script): `n start alphabet`, the final flags, the transition table,
//! the letter probabilities, then one `symbol timestamp` line per event.
//! Usage: summary_bench FILE SIZE TAU [STRATEGY] [REPEAT]; STRATEGY `exact` runs the exact
//! engine over the window instead (SIZE is ignored).
use std::sync::Arc;
use std::time::Instant;
use suse_kernel::engine::batch::Raw;
use suse_kernel::automaton::dfa::{Dfa, DfaSpec};
use suse_kernel::engine::ExactEngine;
use suse_kernel::engine::limits::Limits;
use suse_kernel::automaton::semantics::{AnyMatch, Ev, Policy};
use suse_kernel::summary::selection::StrategyKind;
use suse_kernel::summary::{Aggregate, Config, Summary};

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
        let mut best = f64::INFINITY;
        for _ in 0..repeat {
            let mut w = ExactEngine::new(dfa.clone(), tau, Policy::Any, &Limits::default()).unwrap();
            let t0 = Instant::now();
            for ev in &events {
                w.feed(Raw::Element(*ev)).unwrap();
            }
            best = best.min(t0.elapsed().as_secs_f64());
            eprintln!("totals {:?}", w.totals());
        }
        println!("{} events, exact, tau = {tau}: {:.0} events/s (best of {repeat})", events.len(), events.len() as f64 / best);
        return;
    }
    let strategy = StrategyKind::parse(name).expect("strategy");
    let cfg = Config { size, tau, strategy, aggregate: Aggregate::Count, time_to_live: None, probabilities: Some(probabilities), seed: 0 };
    let mut best = f64::INFINITY;
    for _ in 0..repeat {
        let mut s = Summary::<AnyMatch>::new(dfa.clone(), cfg.clone());
        let t0 = Instant::now();
        for ev in &events {
            s.observe(*ev).unwrap();
        }
        best = best.min(t0.elapsed().as_secs_f64());
        let r = s.readout();
        let count: num_bigint::BigUint = (0..dfa.n).filter(|&q| dfa.finals[q]).map(|q| r.g[q].c.clone()).sum();
        eprintln!("evictions {} count {} detected {}", s.evictions, count, r.detected.c);
    }
    println!("{} events, (|S|, tau) = ({size}, {tau}): {:.0} events/s (best of {repeat})", events.len(), events.len() as f64 / best);
}
