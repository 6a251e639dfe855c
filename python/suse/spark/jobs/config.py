"""Job files' model: the TOML tables as pydantic models (strict types, unknown keys refused),
and the `JobSpec` a job describes. Reading and checking a file is suse.spark.jobs.load.

A full, commented example is in docs/SPARK.md ("Job files"); examples/*.toml run as they are.
"""
from __future__ import annotations

from typing import Any, Literal, Optional, Union

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from suse.api import STRATEGIES
from suse.errors import InputError
from suse.spec import ENGINES, InputSpec, JobSpec, OutputSpec, QuerySpec, SummarySpec, matches_spec

Format = Literal["parquet", "csv", "json"]
DATASETS = ("flights", "stocks", "synthetic")


class ConfigError(InputError):
    """A job file that cannot be read or does not validate."""


class _Strict(BaseModel):
    # strict: TOML has real types, so `exact = "yes"` or `size = "20"` is a mistake, not a bool/int.
    model_config = ConfigDict(extra="forbid", populate_by_name=True, strict=True)


class SyntheticInput(_Strict):
    """The paper's synthetic workload: i.i.d. characters, timestamp = index."""

    n: int = Field(10_000, ge=1, description="events per stream")
    streams: int = Field(1, ge=1, description="independent streams (partitions), seeds seed, seed+1, ...")
    distribution: Literal["zipf", "uniform", "normal"] = "zipf"
    zipf_s: float = Field(2.0, ge=0)
    seed: int = Field(0, ge=0)
    alphabet: Optional[str] = Field(None, description="default: the letters of the first query")
    values: Optional[Literal["uniform"]] = None


class InputConfig(_Strict):
    dataset: Optional[Literal["flights", "stocks", "synthetic"]] = None
    path: Optional[str] = None
    format: Optional[Format] = None
    options: dict[str, Union[str, int, float, bool]] = {}
    schema_: Optional[str] = Field(None, alias="schema", description="DDL, e.g. 'k string, t timestamp'")
    synthetic: SyntheticInput = SyntheticInput()
    columns: dict[str, str] = Field({}, description="derived columns: name = Spark SQL expression")
    filter: Optional[str] = None
    timestamp: str
    timestamp_format: Optional[str] = None
    partition_by: list[str] = []
    value: Optional[str] = None
    op: Optional[str] = Field(None, description="column of '+' (an event) or '-' (a retraction of an equal event)")
    large_partitions: Optional[bool] = Field(
        None, description="stream sorted events instead of gathering each partition in memory (unset: chosen from "
        "the largest partition's size)")

    @field_validator("partition_by", mode="before")
    @classmethod
    def _one_name(cls, v: Any) -> Any:
        return [v] if isinstance(v, str) else v

    @model_validator(mode="after")
    def _one_source(self) -> InputConfig:
        if (self.dataset is None) == (self.path is None):
            raise ValueError("give exactly one of 'dataset' (flights, stocks, synthetic) or 'path'")
        return self


class QueryConfig(_Strict):
    name: Optional[str] = None
    regex: str
    window: Union[int, str]
    aggregate: Literal["count", "sum", "avg", "min", "max"] = "count"
    policy: Literal["any", "next", "contiguous"] = "any"
    #: Letters whose values SUM/AVG/MIN/MAX aggregate (e.g. "C"); COUNT ignores it.
    of: Optional[str] = None
    replicate: list[str] = []
    max_missing: int = Field(0, ge=0, description="approximate matching: pattern letters a match may miss")
    where: dict[str, str] = Field({}, description="conditions between a match's events, letter = condition "
                                  "(docs/QUERY.md); counted by the summaries and by [evaluate] engine = 'exact'")

    @property
    def label(self) -> str:
        return self.name or self.regex


class SummaryConfig(_Strict):
    size: int = Field(500, ge=1)
    strategy: Literal[STRATEGIES] = "suse"  # type: ignore[valid-type]  # the kernel's list
    probabilities: Union[Literal["online", "estimate"], dict[str, float]] = "online"
    seed: int = Field(0, ge=0)


class EvaluateConfig(_Strict):
    at: Any = Field("end", description="'end', 'every N events', [timestamps] or {poisson, per, seed}")
    exact: bool = False
    engine: Literal[ENGINES] = Field(  # type: ignore[valid-type]  # suse.spec's list
        "summary", description="'summary' (a bounded summary per partition) or 'exact' (the exact engine alone)")

    @model_validator(mode="after")
    def _one_exact(self) -> EvaluateConfig:
        if self.engine == "exact" and self.exact:
            raise ValueError("exact = true adds the exact engine's counts beside a summary's; with engine = 'exact' "
                             "the counts are already exact: leave exact out")
        return self


class OutputConfig(_Strict):
    path: str
    format: Format = "parquet"
    mode: Literal["overwrite", "append", "error", "ignore"] = "overwrite"
    show: int = Field(10, ge=0, description="rows in the closing table")
    elements: bool = Field(True, description="batch: write each row's retained elements (false: leave the column out)")
    matches: Optional[int] = Field(None, description="batch: list each row's first N matches (a matches column)")
    sample_matches: Optional[int] = Field(None, description="batch: list N of each row's matches drawn uniformly")


class SparkConfig(_Strict):
    master: Optional[str] = Field(None, description="default: spark-submit's master, else local[2]")
    app_name: str = "suse"
    options: dict[str, Union[str, int, float, bool]] = {}


class StreamingConfig(_Strict):
    checkpoint: str
    lateness: Union[int, str] = 0
    trigger: str = Field("available_now", description="'available_now' or an interval such as '10 seconds'")
    max_files_per_trigger: Optional[int] = Field(None, ge=1)
    timeout: Optional[float] = Field(None, gt=0, description="seconds to run an interval trigger for")
    on_change: Literal["error", "replay"] = Field(
        "error", description="a checkpoint written under another configuration: stop, or migrate its state by replay")


class JobConfig(_Strict):
    name: str = "suse job"
    mode: Literal["batch", "streaming"] = "batch"
    input: InputConfig
    characters: Union[dict[str, str], str]
    query: Union[QueryConfig, list[QueryConfig]]
    summary: SummaryConfig = SummaryConfig()
    evaluate: EvaluateConfig = EvaluateConfig()
    output: OutputConfig
    spark: SparkConfig = SparkConfig()
    streaming: Optional[StreamingConfig] = None

    @property
    def queries(self) -> list[QueryConfig]:
        return self.query if isinstance(self.query, list) else [self.query]

    def spec(self, replicate: Optional[list[str]] = None) -> JobSpec:
        """The job as the one specification every path runs (suse.spec); `replicate`: the
        characters every partition also receives (each query's own in a job file)."""
        inp, summ, ev = self.input, self.summary, self.evaluate
        queries = tuple(QuerySpec(q.regex, q.window, q.aggregate, q.policy, q.of, q.max_missing, name=q.label,
                                  where=q.where or None)
                        for q in self.queries)
        lateness = self.streaming.lateness if self.streaming is not None else 0
        summary = SummarySpec(summ.size, summ.strategy, None if summ.probabilities == "online" else summ.probabilities,
                              summ.seed, lateness=lateness)
        given = InputSpec(inp.timestamp, self.characters, tuple(inp.partition_by), inp.value, inp.op,
                          inp.timestamp_format, tuple(replicate or ()), inp.large_partitions)
        output = OutputSpec(ev.at, ev.exact, self.output.elements,
                            matches_spec(self.output.matches, self.output.sample_matches), ev.engine)
        return JobSpec(queries, given, summary, output, query_set=len(queries) > 1)

    @model_validator(mode="after")
    def _consistent(self) -> JobConfig:
        labels = [q.label for q in self.queries]
        if not labels:
            raise ValueError("query: give at least one query")
        if len(set(labels)) != len(labels):
            raise ValueError("query: two queries have the same name; give each a distinct 'name'")
        if self.mode == "batch" and self.streaming is not None:
            raise ValueError("streaming: a batch job sorts each partition by timestamp, so no event is late and "
                             "there is no checkpoint; the [streaming] table is for mode = 'streaming'")
        if self.mode == "streaming":
            if self.streaming is None:
                raise ValueError("mode = 'streaming' needs a [streaming] table with at least 'checkpoint'")
            if self.input.path is None:
                raise ValueError("input: a streaming job watches a directory: give 'path', not 'dataset'")
            if not self.output.elements:
                raise ValueError("output: elements = false is for batch jobs; a streaming job writes each "
                                 "partition's retained elements")
            if self.output.matches is not None or self.output.sample_matches is not None:
                raise ValueError("output: matches and sample_matches are for batch jobs; a streaming job's rows "
                                 "carry each partition's retained elements")
            if self.input.large_partitions:
                raise ValueError("input: large_partitions is for batch jobs; a streaming job keeps each "
                                 "partition's summary, never its whole input")
        return self
