//! Summaries of a query set answered by one exact pass.
//!
//! A summary that never had to evict holds every element it was given, so its counters are
//! the exact engine's over them. Over a group of events no longer than a summary's size, the
//! summaries whose semantics is plain (skip-till-any-match) without negation and without a
//! time-to-live can therefore read their counts from one [`MultiExact`] pass, which merges
//! prefix-sharing queries, instead of each running alone.
use crate::engine::limits::Limits;
use crate::engine::SummaryEngine;
use crate::exact::multi::{Merge, MultiExact};

pub struct SharedPass {
    /// The summaries (positions in the query set) the pass answers, in its query order.
    pub members: Vec<usize>,
    pub engine: MultiExact,
}

/// Whether a summary's counts can come from the exact pass while it holds its whole input.
fn shareable(s: &SummaryEngine) -> bool {
    s.policy().plain() && s.dfa().negated.is_empty() && s.config().time_to_live.is_none()
}

impl SharedPass {
    /// The pass over every summary that can share it; `own[q]`: summary `q` must run on its
    /// own anyway (the caller needs something only it gives). `None` when fewer than two can
    /// share, or when the pass would be over `limits` (then each summary runs alone).
    pub fn plan(summaries: &[&SummaryEngine], own: &[bool], limits: &Limits) -> Option<SharedPass> {
        let members: Vec<usize> = (0..summaries.len()).filter(|&q| !own[q] && shareable(summaries[q])).collect();
        if members.len() < 2 {
            return None;
        }
        let queries: Vec<_> = members.iter().map(|&q| (summaries[q].dfa().clone(), summaries[q].config().tau, summaries[q].policy())).collect();
        let engine = MultiExact::new(&queries, limits, Merge::Auto).ok()?;
        Some(SharedPass { members, engine })
    }

    /// The members (positions in [`members`](Self::members)) that hold their input of one
    /// group whole: `fed(q)` events for summary `q`, no more than its size.
    pub fn holding(&self, summaries: &[&SummaryEngine], fed: impl Fn(usize) -> usize) -> Vec<usize> {
        (0..self.members.len()).filter(|&k| fed(self.members[k]) <= summaries[self.members[k]].config().size).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::automaton::dfa::tests::{negation, paper};
    use crate::automaton::dfa::Dfa;
    use crate::automaton::semantics::Policy;
    use crate::engine::batch::Batch;
    use crate::exact::window::split_totals;
    use crate::summary::selection::StrategyKind;
    use crate::summary::{Aggregate, Config};
    use std::sync::Arc;

    fn summary(dfa: Dfa, policy: Policy, size: usize, tau: i64, ttl: Option<i64>) -> SummaryEngine {
        let cfg = Config { size, tau, strategy: StrategyKind::Suse, aggregate: Aggregate::Count, time_to_live: ttl, probabilities: None, seed: 7 };
        SummaryEngine::new(Arc::new(dfa), policy, cfg, &Limits::default()).unwrap()
    }

    #[test]
    fn only_plain_summaries_without_negation_or_ttl_share_and_only_while_they_hold_everything() {
        let all = [
            summary(paper(), Policy::Any, 10, 5, None),
            summary(paper(), Policy::Next, 10, 5, None),
            summary(paper(), Policy::Contiguous, 10, 5, None),
            summary(negation(), Policy::Any, 10, 5, None),
            summary(paper(), Policy::Any, 10, 5, Some(3)),
            summary(paper(), Policy::Any, 3, 2, None),
            summary(paper(), Policy::Any, 10, 5, None),
        ];
        let refs: Vec<&SummaryEngine> = all.iter().collect();
        let own = [false, false, false, false, false, false, true];
        let pass = SharedPass::plan(&refs, &own, &Limits::default()).unwrap();
        assert_eq!(pass.members, vec![0, 5]);
        assert_eq!(pass.holding(&refs, |_| 3), vec![0, 1]);
        assert_eq!(pass.holding(&refs, |_| 4), vec![0]);
        // Alone, a shareable summary shares nothing.
        assert!(SharedPass::plan(&refs, &[false, true, true, true, true, true, true], &Limits::default()).is_none());
        // Over the memory limit each runs alone.
        assert!(SharedPass::plan(&refs, &own, &Limits { max_bytes: 1 }).is_none());

        // What the sharing rests on: while a member holds its whole input, the pass gives its counts.
        let (chars, ts, evals) = (b"abcde", [0, 1, 1, 2, 2], [1, 2]);
        let holding = pass.holding(&refs, |_| chars.len());
        assert_eq!(holding, vec![0]);
        let rows = pass.engine.clone().extend(chars, &ts, None, &evals).unwrap();
        let q = pass.members[0];
        let dfa = refs[q].dfa().clone();
        let mut s = refs[q].clone();
        let alone = Batch::new(chars, &ts, None, &evals, None).unwrap().run(&mut s, &dfa, |s, raw| s.feed(raw), |s, _| split_totals(s.dfa(), &s.readout().g)).unwrap();
        let shared: Vec<_> = rows[0].iter().map(|(_, (c, s, _))| (c.clone(), s.clone())).collect();
        let alone: Vec<_> = alone.into_iter().map(|(c, s, _)| (c, s)).collect();
        assert_eq!(shared, alone);
        assert!(shared.iter().any(|(c, _)| *c > 0u32.into()), "a test without matches cannot fail");
    }

    #[test]
    fn a_summary_reads_its_letters_and_negated_characters_and_under_contiguity_every_event() {
        let any = summary(negation(), Policy::Any, 10, 5, None);
        let contiguous = summary(negation(), Policy::Contiguous, 10, 5, None);
        assert!(b"abcdeg".iter().all(|&b| any.reads(b)));
        assert!(!any.reads(b'z') && contiguous.reads(b'z'));
    }
}
