-- Standard MATCH_RECOGNIZE (SQL:2016, as Trino runs it) over the bundled daily stock prices:
-- a V shape is a day, a fall of at least two days, then a rise back above the starting close.
--   suse sql - < examples/v_shape.sql
SELECT * FROM stocks MATCH_RECOGNIZE (
  PARTITION BY ticker
  ORDER BY date
  MEASURES FIRST(date) AS start_day, LAST(date) AS end_day, A.close AS start_close,
           min(B.close) AS bottom, LAST(C.close) AS end_close, count(*) AS days, MATCH_NUMBER() AS n
  ONE ROW PER MATCH
  AFTER MATCH SKIP PAST LAST ROW
  PATTERN (A B{2,} C+? D)
  DEFINE B AS close < PREV(close),
         C AS close > PREV(close) AND close <= A.close,
         D AS close > A.close
)
