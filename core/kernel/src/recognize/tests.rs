use super::*;

const A: u32 = 0;
const B: u32 = 1;

/// `A B+` with B greedy (or reluctant): VAR A; VAR B; SPLIT loop/exit; JMP back; MATCH.
fn a_b_plus(greedy: bool) -> Program {
    let (take, leave) = if greedy { (3, 4) } else { (4, 3) };
    Program { code: vec![(VAR, A, 0), (VAR, B, 0), (SPLIT, take, leave), (JMP, 1, 0), (MATCH, 0, 0)], registers: 0 }
}

fn flags(word: &str) -> (Vec<u8>, Vec<u8>) {
    (word.bytes().map(|c| (c == b'a') as u8).collect(), word.bytes().map(|c| (c == b'b') as u8).collect())
}

fn options(skip: SkipMode) -> Options {
    Options { memo: MemoScope::Partition, max_steps: 1000, base: 0, skip }
}

fn matches_of(program: &Program, word: &str, skip: SkipMode) -> (Vec<Item>, End<()>) {
    let (a, b) = flags(word);
    let rows = [&a[..], &b[..]];
    let (items, end, _) = run::<()>(program, word.len(), &mut Table { rows: &rows }, &options(skip), Cursor::default());
    (items.into_iter().map(|(item, _)| item).collect(), end)
}

fn m(number: u64, start: usize, labels: &[u32]) -> Item {
    Item::Match { number, start, labels: labels.to_vec(), excluded: vec![false; labels.len()] }
}

#[test]
fn greedy_takes_every_b_and_reluctant_one() {
    let (items, end) = matches_of(&a_b_plus(true), "abbxab", SkipMode::PastLastRow);
    assert!(matches!(end, End::Done));
    assert_eq!(items, vec![m(1, 0, &[A, B, B]), Item::Unmatched { row: 3 }, m(2, 4, &[A, B])]);
    let (items, _) = matches_of(&a_b_plus(false), "abb", SkipMode::PastLastRow);
    assert_eq!(items, vec![m(1, 0, &[A, B]), Item::Unmatched { row: 2 }]);
}

#[test]
fn a_skip_to_the_first_row_is_refused_by_name() {
    let skip = SkipMode::ToFirst { targets: vec![A], name: "A".into() };
    let (items, end) = matches_of(&a_b_plus(true), "ab", skip);
    assert!(items.is_empty());
    assert!(matches!(end, End::Failed(Failure::Skip(m)) if m.contains("would resume at its own first row")));
}

#[test]
fn without_the_memo_the_steps_are_bounded() {
    // (A|A)* A* ... exponential without the memo: a loop of two alternatives that both take A
    let code = vec![(SPLIT, 1, 6), (SPLIT, 2, 4), (VAR, A, 0), (JMP, 5, 0), (VAR, A, 0), (JMP, 0, 0), (VAR, B, 0), (MATCH, 0, 0)];
    let program = Program { code, registers: 0 };
    let word = "a".repeat(40);
    let (a, b) = flags(&word);
    let rows = [&a[..], &b[..]];
    let opts = Options { memo: MemoScope::None, max_steps: 10_000, base: 0, skip: SkipMode::PastLastRow };
    let (_, end, _) = run::<()>(&program, word.len(), &mut Table { rows: &rows }, &opts, Cursor::default());
    assert!(matches!(end, End::Failed(Failure::Limit(m)) if m.contains("more than 10000 backtracking steps")));
    let memo = Options { memo: MemoScope::Partition, ..opts };
    let (items, end, last) = run::<()>(&program, word.len(), &mut Table { rows: &rows }, &memo, Cursor::default());
    assert!(matches!(end, End::Done) && items.len() == 40 && last.pos == 40);
}

#[test]
fn nav_position_counts_the_rows_of_the_qualifier_from_either_end() {
    let labels = [A, B, B, A, B];
    let of = |var: u32| move |i: usize| Ok::<bool, ()>(labels[i] == var);
    assert_eq!(nav_position(5, true, 0, of(B)), Ok(Some(1)));
    assert_eq!(nav_position(5, true, 2, of(B)), Ok(Some(4)));
    assert_eq!(nav_position(5, false, 0, of(B)), Ok(Some(4)));
    assert_eq!(nav_position(5, false, 1, of(A)), Ok(Some(0)));
    assert_eq!(nav_position(5, false, 2, of(A)), Ok(None));
    assert_eq!(nav_position(3, false, 0, of(A)), Ok(Some(0))); // running: only the first 3 rows
    assert_eq!(nav_position(0, true, 0, |_| Ok::<bool, ()>(true)), Ok(None));
    assert_eq!(nav_position(5, false, 4, |_| Ok::<bool, ()>(true)), Ok(Some(0)));
    assert_eq!(nav_position(5, true, 5, |_| Ok::<bool, ()>(true)), Ok(None));
}
