// FlinkCEP peer for suse's benchmarks: counts the matches of a pattern over a stream file.
//
// Usage: java -cp CLASSES:FLINK_LIB/* FlinkPeer [--timeout SECONDS] [--one-job [--distinct]] CASES_FILE
//
// CASES_FILE has one case per line, tab-separated: NAME, PATTERN SPEC, WITHIN (milliseconds,
// or "-" for none), STREAM FILE. A stream file has one event per line: "CHAR TIMESTAMP"
// or "CHAR TIMESTAMP P", P an integer attribute (or "null") that conditions compare.
// Timestamps must increase strictly. Each case runs as its own job (with --one-job, all cases
// share one) in a local environment (parallelism 1, event time, the timestamp of an event is
// its TIMESTAMP in ms), and prints one JSON line on stdout:
//   {"name": ..., "status": "ok", "count": N, "seconds": S, "wall_seconds": W, "events": E}
// "seconds" is the job's net runtime as Flink reports it (not with --one-job); "wall_seconds"
// adds job submission and the local cluster's start. With --distinct, every match is also
// collected as the set of its events' timestamps, and "distinct" counts the different sets
// (a check for duplicates).
// Status "timeout" or "error" (with "error") replaces the count; after a timeout the JVM ends
// and the cases left print status "skipped". A malformed case or bad arguments exit with 2.
//
// Pattern spec (a small text form so that a new pattern is one line on the Python side):
//   seq   := step (' '+ op step)*         the first step has no op
//   step  := LETTERS quant cond | '(' seq ')' quant
//   cond  := '' | '[p' ('<' | '>') REF ']'    an IterativeCondition on the event's P
//   op    := '>>' followedByAny | '>' followedBy | '.' next | '!>' notFollowedBy | '!.' notNext
//   quant := '' | '?' | ('+' | '*') ':' ('any' | 'strict' | 'relaxed')
// LETTERS is a set of characters (an event matches when its CHAR is one of them); '+' is
// oneOrMore(), '*' oneOrMore().optional(), '?' optional(); ':any' adds allowCombinations(),
// ':strict' consecutive(), ':relaxed' keeps Flink's default loop contiguity.
// Example: "A >>B+:any >>C" is A followedByAny B.oneOrMore().allowCombinations() followedByAny C.
// A condition compares P with the last event of the partial match in a step, read through
// ctx.getEventsForPattern: REF 'prev' is the step's own previous event (a loop's last element
// so far; true when there is none or its P is null: SQL's `LAST(B.p, 1) IS NULL OR B.p >
// LAST(B.p, 1)`), REF LETTERS the last event of the earlier step with exactly those letters
// (false when there is none or a P is null: `C.p < B.p`).
// Example: "A >>B+:any[p>prev] >>C[p<B]" is the rising run AB+C.

import java.io.BufferedReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

import org.apache.flink.api.common.JobExecutionResult;
import org.apache.flink.api.common.accumulators.LongCounter;
import org.apache.flink.api.common.eventtime.WatermarkStrategy;
import org.apache.flink.api.common.functions.OpenContext;
import org.apache.flink.api.common.functions.RichFlatMapFunction;
import org.apache.flink.api.common.typeinfo.TypeInformation;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.cep.CEP;
import org.apache.flink.cep.PatternStream;
import org.apache.flink.cep.functions.PatternProcessFunction;
import org.apache.flink.cep.pattern.Pattern;
import org.apache.flink.cep.pattern.conditions.IterativeCondition;
import org.apache.flink.cep.pattern.conditions.SimpleCondition;
import org.apache.flink.core.execution.JobClient;
import org.apache.flink.streaming.api.datastream.DataStream;
import org.apache.flink.streaming.api.datastream.SingleOutputStreamOperator;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.streaming.api.functions.sink.v2.DiscardingSink;
import org.apache.flink.util.CloseableIterator;
import org.apache.flink.util.Collector;

public class FlinkPeer {

    /** One event; public fields and a no-argument constructor make it a Flink POJO. */
    public static class Ev {
        public String c;
        public long t;
        public Long p; // null: no value

        public Ev() {}

        public Ev(String c, long t, Long p) {
            this.c = c;
            this.t = t;
            this.p = p;
        }
    }

    /** P compared with the last event so far of step `step` (see the header for NULLs). */
    public static class CompareP extends IterativeCondition<Ev> {
        private final String step;
        private final boolean greater;
        private final boolean ownPrevious;

        public CompareP(String step, boolean greater, boolean ownPrevious) {
            this.step = step;
            this.greater = greater;
            this.ownPrevious = ownPrevious;
        }

        @Override
        public boolean filter(Ev e, Context<Ev> ctx) throws Exception {
            Ev last = null;
            for (Ev x : ctx.getEventsForPattern(step)) last = x;
            if (last == null || last.p == null) return ownPrevious;
            if (e.p == null) return false;
            return greater ? e.p > last.p : e.p < last.p;
        }
    }

    /** An event matches when its character is one of `letters`. */
    public static class CharIn extends SimpleCondition<Ev> {
        private final String letters;

        public CharIn(String letters) {
            this.letters = letters;
        }

        @Override
        public boolean filter(Ev e) {
            return letters.contains(e.c);
        }
    }

    /** Emits one mark per match; CEP's runtime context refuses accumulators, so Count sums them. */
    public static class MarkMatches extends PatternProcessFunction<Ev, Long> {
        @Override
        public void processMatch(Map<String, List<Ev>> match, Context ctx, Collector<Long> out) {
            out.collect(1L);
        }
    }

    /** Counts its input in an accumulator and emits nothing (printing would dominate). */
    public static class Count<T> extends RichFlatMapFunction<T, Long> {
        private final String accumulator;
        private transient LongCounter counter;

        public Count(String accumulator) {
            this.accumulator = accumulator;
        }

        @Override
        public void open(OpenContext ctx) {
            counter = getRuntimeContext().getLongCounter(accumulator);
        }

        @Override
        public void flatMap(T element, Collector<Long> out) {
            counter.add(1L);
        }
    }

    /** Emits each match as the sorted timestamps of its events, to count distinct sets. */
    public static class MatchSets extends PatternProcessFunction<Ev, String> {
        private final String tag;

        public MatchSets(String tag) {
            this.tag = tag;
        }

        @Override
        public void processMatch(Map<String, List<Ev>> match, Context ctx, Collector<String> out) {
            TreeSet<Long> ts = new TreeSet<>();
            int n = 0;
            for (List<Ev> evs : match.values()) {
                for (Ev e : evs) {
                    ts.add(e.t);
                    n++;
                }
            }
            // A set smaller than the match means one event filled two steps: flag it.
            out.collect(tag + "\t" + (ts.size() == n ? "" : "!") + ts);
        }
    }

    static final class BadSpec extends Exception {
        BadSpec(String spec, int pos, String what) {
            super("pattern spec '" + spec + "', column " + (pos + 1) + ": " + what);
        }
    }

    /** Recursive-descent reader of the pattern spec, building the Flink Pattern directly. */
    static final class SpecParser {
        private final String s;
        private int i = 0;
        private int names = 0;
        // Letters of the steps read so far -> their names, for a condition's REF.
        private final Map<String, String> steps = new HashMap<>();

        SpecParser(String s) {
            this.s = s;
        }

        Pattern<Ev, ?> parse() throws BadSpec {
            Pattern<Ev, ?> p = seq();
            skipSpaces();
            if (i < s.length()) throw new BadSpec(s, i, "unexpected '" + s.charAt(i) + "'");
            return p;
        }

        private void skipSpaces() {
            while (i < s.length() && s.charAt(i) == ' ') i++;
        }

        private Pattern<Ev, ?> seq() throws BadSpec {
            skipSpaces();
            Pattern<Ev, Ev> p;
            if (peek() == '(') {
                p = quant(Pattern.begin(group()));
            } else {
                String name = name();
                String letters = letters();
                p = cond(quant(Pattern.<Ev>begin(name).where(new CharIn(letters))), name);
                steps.putIfAbsent(letters, name);
            }
            while (true) {
                skipSpaces();
                if (i >= s.length() || peek() == ')') return p;
                int at = i;
                String op = op();
                if (peek() == '(') {
                    if (op.startsWith("!")) throw new BadSpec(s, at, "a negated step must be letters, not a group");
                    Pattern<Ev, Ev> g = group();
                    switch (op) {
                        case ">>": p = p.followedByAny(g); break;
                        case ">": p = p.followedBy(g); break;
                        default: p = p.next(g); break;
                    }
                    p = quant(p);
                } else {
                    String name = name();
                    switch (op) {
                        case ">>": p = p.followedByAny(name); break;
                        case ">": p = p.followedBy(name); break;
                        case ".": p = p.next(name); break;
                        case "!>": p = p.notFollowedBy(name); break;
                        default: p = p.notNext(name); break;
                    }
                    String letters = letters();
                    p = p.where(new CharIn(letters));
                    if (op.startsWith("!")) {
                        if (i < s.length() && "?+*".indexOf(peek()) >= 0) throw new BadSpec(s, i, "a negated step takes no quantifier");
                    } else {
                        p = quant(p);
                    }
                    p = cond(p, name);
                    if (!op.startsWith("!")) steps.putIfAbsent(letters, name);
                }
            }
        }

        @SuppressWarnings("unchecked")
        private Pattern<Ev, Ev> group() throws BadSpec {
            i++; // '('
            Pattern<Ev, Ev> inner = (Pattern<Ev, Ev>) seq();
            if (peek() != ')') throw new BadSpec(s, i, "expected ')'");
            i++;
            return inner;
        }

        private String op() throws BadSpec {
            for (String op : new String[] {">>", "!>", "!.", ">", "."}) {
                if (s.startsWith(op, i)) {
                    i += op.length();
                    return op;
                }
            }
            throw new BadSpec(s, i, "expected an operator (>>, >, ., !>, !.)");
        }

        private String letters() throws BadSpec {
            int start = i;
            while (i < s.length() && Character.isLetterOrDigit(s.charAt(i))) i++;
            if (i == start) throw new BadSpec(s, start, "expected letters");
            return s.substring(start, i);
        }

        /** An optional '[p<REF]' / '[p>REF]' after the step named `name`. */
        private Pattern<Ev, Ev> cond(Pattern<Ev, Ev> p, String name) throws BadSpec {
            if (peek() != '[') return p;
            int at = i;
            boolean greater;
            if (s.startsWith("[p>", i)) greater = true;
            else if (s.startsWith("[p<", i)) greater = false;
            else throw new BadSpec(s, at, "a condition is '[p<REF]' or '[p>REF]'");
            i += 3;
            int close = s.indexOf(']', i);
            if (close < 0) throw new BadSpec(s, i, "expected ']'");
            String ref = s.substring(i, close);
            i = close + 1;
            if (ref.equals("prev")) return p.where(new CompareP(name, greater, true));
            String step = steps.get(ref);
            if (step == null) throw new BadSpec(s, at, "no earlier step with letters '" + ref + "'");
            return p.where(new CompareP(step, greater, false));
        }

        private String name() {
            return "s" + (names++);
        }

        private char peek() {
            return i < s.length() ? s.charAt(i) : '\0';
        }

        private Pattern<Ev, Ev> quant(Pattern<Ev, Ev> p) throws BadSpec {
            char q = peek();
            if (q == '?') {
                i++;
                return p.optional();
            }
            if (q != '+' && q != '*') return p;
            i++;
            p = p.oneOrMore();
            if (q == '*') p = p.optional();
            if (peek() != ':') throw new BadSpec(s, i, "a loop needs ':any', ':strict' or ':relaxed'");
            i++;
            if (s.startsWith("any", i)) {
                i += 3;
                return p.allowCombinations();
            }
            if (s.startsWith("strict", i)) {
                i += 6;
                return p.consecutive();
            }
            if (s.startsWith("relaxed", i)) {
                i += 7;
                return p;
            }
            throw new BadSpec(s, i, "expected 'any', 'strict' or 'relaxed'");
        }
    }

    static List<Ev> readStream(Path path) throws Exception {
        List<Ev> events = new ArrayList<>();
        try (BufferedReader r = Files.newBufferedReader(path, StandardCharsets.UTF_8)) {
            String line;
            int lineNo = 0;
            while ((line = r.readLine()) != null) {
                lineNo++;
                String[] f = line.trim().split(" +");
                if (f.length != 2 && f.length != 3) {
                    throw new IllegalArgumentException(path + ", line " + lineNo + ": expected 'CHAR TIMESTAMP' or 'CHAR TIMESTAMP P'");
                }
                long t;
                try {
                    t = Long.parseLong(f[1]);
                } catch (NumberFormatException e) {
                    throw new IllegalArgumentException(path + ", line " + lineNo + ": timestamp '" + f[1] + "' is not an integer");
                }
                // Event-time CEP drops an event behind the watermark as late, and orders ties
                // its own way: strictly increasing timestamps rule out both.
                if (!events.isEmpty() && t <= events.get(events.size() - 1).t) {
                    throw new IllegalArgumentException(path + ", line " + lineNo + ": timestamp " + t + " does not increase");
                }
                Long p = null;
                if (f.length == 3 && !f[2].equals("null")) {
                    try {
                        p = Long.parseLong(f[2]);
                    } catch (NumberFormatException e) {
                        throw new IllegalArgumentException(path + ", line " + lineNo + ": P '" + f[2] + "' is not an integer");
                    }
                }
                events.add(new Ev(f[0], t, p));
            }
        }
        return events;
    }

    static String json(String s) {
        StringBuilder b = new StringBuilder("\"");
        for (char ch : s.toCharArray()) {
            if (ch == '"' || ch == '\\') b.append('\\').append(ch);
            else if (ch < 0x20) b.append(String.format("\\u%04x", (int) ch));
            else b.append(ch);
        }
        return b.append('"').toString();
    }

    /** One line of the cases file, with its stream read and its pattern built. */
    static final class Case {
        final String name;
        final Pattern<Ev, ?> pattern;
        final List<Ev> events;

        Case(String line) throws Exception {
            String[] f = line.split("\t", -1);
            if (f.length != 4) throw new IllegalArgumentException("expected NAME, SPEC, WITHIN, STREAM separated by tabs: " + line);
            name = f[0];
            Pattern<Ev, ?> p = new SpecParser(f[1]).parse();
            if (!f[2].equals("-")) p = p.within(Duration.ofMillis(Long.parseLong(f[2])));
            pattern = p;
            events = readStream(Path.of(f[3]));
        }

        String head() {
            return "{\"name\": " + json(name) + ", \"events\": " + events.size();
        }

        /** Source -> event-time timestamps and watermarks -> CEP, on `env`. */
        PatternStream<Ev> build(StreamExecutionEnvironment env) {
            DataStream<Ev> input = env.fromData(events, TypeInformation.of(Ev.class))
                    .name(name)
                    .assignTimestampsAndWatermarks(WatermarkStrategy.<Ev>forMonotonousTimestamps()
                            .withTimestampAssigner((e, previous) -> e.t));
            return CEP.pattern(input, pattern).inEventTime();
        }
    }

    static String error(String head, Throwable e) {
        Throwable root = e;
        while (root.getCause() != null) root = root.getCause();
        return head + ", \"status\": \"error\", \"error\": " + json(root.getClass().getSimpleName() + ": " + root.getMessage()) + "}";
    }

    /** Runs the job on env; null on timeout (the job is then cancelled). */
    static JobExecutionResult run(StreamExecutionEnvironment env, String jobName, long timeoutMs) throws Exception {
        JobClient job = env.executeAsync(jobName);
        try {
            return job.getJobExecutionResult().get(timeoutMs, TimeUnit.MILLISECONDS);
        } catch (TimeoutException e) {
            job.cancel().get(30, TimeUnit.SECONDS);
            return null;
        }
    }

    static final String TIMEOUT = "\"status\": \"timeout\"";

    static String timedOut(String head, long timeoutMs) {
        return head + ", " + TIMEOUT + ", \"timeout_seconds\": " + timeoutMs / 1000.0 + "}";
    }

    /** One job per case: the benchmark's mode, so each case is timed (and capped) alone. */
    static String runAlone(Case c, long timeoutMs) {
        try {
            StreamExecutionEnvironment env = StreamExecutionEnvironment.createLocalEnvironment(1);
            var marks = c.build(env).process(new MarkMatches(), Types.LONG);
            marks.flatMap(new Count<Long>("matches")).returns(Types.LONG).sinkTo(new DiscardingSink<>());
            long t0 = System.nanoTime();
            JobExecutionResult result = run(env, c.name, timeoutMs);
            if (result == null) return timedOut(c.head(), timeoutMs);
            double wall = (System.nanoTime() - t0) / 1e9;
            Long count = result.getAccumulatorResult("matches");
            return c.head() + ", \"status\": \"ok\", \"count\": " + (count == null ? 0 : count)
                    + ", \"seconds\": " + result.getNetRuntime(TimeUnit.NANOSECONDS) / 1e9
                    + ", \"wall_seconds\": " + wall + "}";
        } catch (Exception e) {
            return error(c.head(), e);
        }
    }

    /**
     * All cases in one job (the tests' mode: one local cluster start for many tiny cases).
     * With `distinct`, every match is collected as "case TAB sorted timestamps".
     */
    static List<String> runTogether(List<Case> cases, long timeoutMs, boolean distinct) throws Exception {
        StreamExecutionEnvironment env = StreamExecutionEnvironment.createLocalEnvironment(1);
        List<String> out = new ArrayList<>();
        Map<String, Long> counts = new HashMap<>();
        Map<String, Set<String>> sets = new HashMap<>();
        Map<String, Long> overlapping = new HashMap<>();
        long t0 = System.nanoTime();
        JobExecutionResult result;
        if (distinct) {
            DataStream<String> all = null;
            for (Case c : cases) {
                SingleOutputStreamOperator<String> m = c.build(env).process(new MatchSets(c.name), Types.STRING);
                all = all == null ? m : all.union(m);
                counts.put(c.name, 0L);
                sets.put(c.name, new HashSet<>());
                overlapping.put(c.name, 0L);
            }
            // Collecting every match costs more than counting; only tests use this.
            CloseableIterator<String> it = all.collectAsync();
            JobClient job = env.executeAsync("cases");
            try (it) {
                while (it.hasNext()) {
                    String[] m = it.next().split("\t", 2);
                    counts.merge(m[0], 1L, Long::sum);
                    if (m[1].startsWith("!")) overlapping.merge(m[0], 1L, Long::sum);
                    sets.get(m[0]).add(m[1]);
                }
            }
            result = job.getJobExecutionResult().get(timeoutMs, TimeUnit.MILLISECONDS);
        } else {
            for (Case c : cases) {
                var marks = c.build(env).process(new MarkMatches(), Types.LONG);
                marks.flatMap(new Count<Long>("matches:" + c.name)).returns(Types.LONG).sinkTo(new DiscardingSink<>());
            }
            result = run(env, "cases", timeoutMs);
            if (result == null) {
                for (Case c : cases) out.add(timedOut(c.head(), timeoutMs));
                return out;
            }
            for (Case c : cases) {
                Long n = result.getAccumulatorResult("matches:" + c.name);
                counts.put(c.name, n == null ? 0L : n);
            }
        }
        double wall = (System.nanoTime() - t0) / 1e9;
        for (Case c : cases) {
            String line = c.head() + ", \"status\": \"ok\", \"count\": " + counts.get(c.name);
            if (distinct) line += ", \"distinct\": " + sets.get(c.name).size() + ", \"overlapping\": " + overlapping.get(c.name);
            out.add(line + ", \"wall_seconds\": " + wall + "}");
        }
        return out;
    }

    static final String USAGE = "usage: FlinkPeer [--timeout SECONDS] [--one-job [--distinct]] CASES_FILE";

    public static void main(String[] args) throws Exception {
        long timeoutMs = 60_000;
        boolean distinct = false;
        boolean oneJob = false;
        String casesFile = null;
        for (int a = 0; a < args.length; a++) {
            if (args[a].equals("--timeout") && a + 1 < args.length) timeoutMs = (long) (Double.parseDouble(args[++a]) * 1000);
            else if (args[a].equals("--distinct")) distinct = true;
            else if (args[a].equals("--one-job")) oneJob = true;
            else if (casesFile == null && !args[a].startsWith("--")) casesFile = args[a];
            else usage();
        }
        if (casesFile == null || (distinct && !oneJob)) usage();
        List<String> lines = Files.readAllLines(Path.of(casesFile), StandardCharsets.UTF_8);
        List<Case> cases = new ArrayList<>();
        Set<String> names = new HashSet<>();
        for (String line : lines) {
            if (line.isBlank()) continue;
            try {
                Case c = new Case(line);
                if (!names.add(c.name)) throw new IllegalArgumentException("duplicate case name " + c.name);
                cases.add(c);
            } catch (Exception e) {
                // A malformed case is a caller's bug: say which, and run nothing.
                System.err.println("FlinkPeer: " + casesFile + ": " + e.getMessage());
                System.exit(2);
            }
        }
        boolean timedOut = false;
        if (oneJob) {
            for (String line : runTogether(cases, timeoutMs, distinct)) {
                System.out.println(line);
                timedOut |= line.contains(TIMEOUT);
            }
        } else {
            for (Case c : cases) {
                if (timedOut) {
                    System.out.println(c.head() + ", \"status\": \"skipped\", \"error\": \"an earlier case timed out\"}");
                    continue;
                }
                String line = runAlone(c, timeoutMs);
                System.out.println(line);
                System.out.flush();
                timedOut = line.contains(TIMEOUT);
            }
        }
        System.out.flush();
        // A cancelled CEP task does not stop (its loops never look at interrupts) and would
        // eat the CPU of later cases and block shutdown: end the JVM at once instead.
        if (timedOut) Runtime.getRuntime().halt(0);
        System.exit(0);
    }

    static void usage() {
        System.err.println(USAGE);
        System.exit(2);
    }
}
