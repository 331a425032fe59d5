// SPDX-License-Identifier: Apache-2.0
package dev.handoff.benchmarks;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import org.openjdk.jmh.results.Result;
import org.openjdk.jmh.results.RunResult;
import org.openjdk.jmh.runner.RunnerException;
import org.openjdk.jmh.util.Statistics;

/**
 * The fair share's measurements in one JMH run, with the main report's machinery
 * ({@link JmhRuns#runJmh}, {@link LoadGuard}, {@link Report}'s rejection):
 * {@link FairShareFloodBenchmark} (a polite tenant's wait while a noisy tenant floods, against the
 * FIFO {@code Semaphore} and a per-tenant-capped {@code java.util.concurrent} design) and
 * {@link FairShareBenchmark} (the cost per acquisition against the {@code Semaphore} on one key and
 * on 1,000 active keys, and the bytes per waiter). It writes {@value #MARKDOWN} (the tables, the
 * machine, the load of other processes) and {@value #JSON} (JMH's raw results) into {@code --out}
 * (default {@code docs/benchmarks}).
 *
 * <p>A full run measures again as the main report does
 * ({@link Remeasurement#measureAgain(Settings, Map, Path, List, LoadGuard, Remeasurement.Rerun)}):
 * a flood measured while the cores were far apart (a cache line's round trip, probed after every
 * iteration, above {@linkplain Measurement#CROSS_CORE_LIMIT_NANOS 200 ns}), or a single-threaded cost
 * measurement that came out unsteady (slowest iteration above {@linkplain Measurement#STEADY_SPREAD 1.5x}
 * its fastest), is measured again alone, up to {@code --retries} times (default 3), each time once
 * the cores have been close for three probes in a row, 5 s apart (waiting at most
 * {@code --close-wait} seconds, default 600). {@value #MARKDOWN} lists what was measured again and
 * why; {@value #JSON} holds every attempt. The run is rejected as the main report's is: if other
 * processes used more than {@value OtherLoad#THRESHOLD_CPUS} CPU during a measured iteration (at
 * once: nothing is measured again then), or if a measurement still is far-cored or unsteady after
 * the last attempt. Its files then go to {@code --rejected-out} (default
 * {@code benchmarks/target/rejected-run}), {@code --out} is not touched, and the command exits with
 * status {@value BenchmarkReport#EXIT_LOADED}. A smoke run is never rejected nor measured again.
 *
 * <pre>{@code
 * ./bench.sh fairshare            # about 1.5 minutes (more if it measures again); writes docs/benchmarks/fair-share.md
 * ./bench.sh fairshare --retries 5 --close-wait 900   # more patience with a host whose cores wander apart
 * ./bench.sh fairshare --smoke    # every configuration once, seconds; writes benchmarks/target/smoke/
 * }</pre>
 */
final class FairShareReport {
    /** The benchmarks of the cost: single-threaded. */
    static final String COST_CLASS = "FairShareBenchmark.";

    static final String TRY = COST_CLASS + "tryAcquireRelease";
    static final String HAND_OFF = COST_CLASS + "queueAndHandOff";
    /** The flood: a polite tenant's wait. */
    static final String FLOOD = "FairShareFloodBenchmark.politeWait";
    /** What this report runs. */
    static final String INCLUDE = "dev\\.handoff\\.benchmarks\\.FairShare(Flood)?Benchmark\\..*";

    static final String MARKDOWN = "fair-share.md";
    static final String JSON = "fair-share-jmh.json";
    /** The key counts of {@link FairShareBenchmark#keys}. */
    static final List<Integer> KEYS = List.of(1, 1000);

    static final String USAGE = String.join(
            "\n",
            "usage: java -jar benchmarks.jar fairshare [--smoke] [--out DIR] [--rejected-out DIR] [--forks N] [--retries N]",
            "       [--close-wait S] [--include RE]",
            "  the fair share's benchmarks in one run: a polite tenant's wait while a noisy tenant floods",
            "  (FairShareFloodBenchmark) and the cost per acquisition and per waiter (FairShareBenchmark);",
            "  writes " + MARKDOWN + " and " + JSON,
            "  --smoke        every configuration once with tiny iterations in this JVM (seconds; figures meaningless)",
            "  --out DIR      where they go (default docs/benchmarks)",
            "  --rejected-out DIR  where they go instead, with exit status 3, if the run was loaded, or still unsteady",
            "                 or far-cored after the retries (default benchmarks/target/rejected-run; not for --smoke)",
            "  --forks N      override the forks of every benchmark (default: the annotations, 1)",
            Settings.RETRY_OPTIONS,
            "                 (here: a far-cored flood, an unsteady cost measurement; nothing once the run is loaded)",
            "  --include RE   JMH include pattern (default: both benchmarks)");

    private FairShareReport() {}

    /**
     * A polite tenant's wait under one peer, and what was counted while it waited.
     *
     * @param peer           the peer, one of {@link TenantPermits#ALL}
     * @param p50            the median wait, ns
     * @param p99            the 99th percentile, ns
     * @param mean           the mean, ns, with JMH's error bar
     * @param samples        the polite requests measured
     * @param behindP50      the median of the noisy grants a polite request waited behind (NaN without the profiler)
     * @param behindP99      their 99th percentile
     * @param behindMax      their maximum
     * @param noisyPerSecond the noisy tenant's grants per second
     */
    record Wait(
            String peer,
            double p50,
            double p99,
            Estimate mean,
            long samples,
            double behindP50,
            double behindP99,
            double behindMax,
            double noisyPerSecond) {
        static Wait of(RunResult run) {
            Result<?> primary = run.getPrimaryResult();
            Statistics s = primary.getStatistics();
            double toNanos = nanosPer(primary.getScoreUnit());
            var secondary = run.getSecondaryResults(); // JMH declares a raw Map<String, Result>
            return new Wait(
                    run.getParams().getParam("peer"),
                    s.getPercentile(50) * toNanos,
                    s.getPercentile(99) * toNanos,
                    new Estimate(primary.getScore() * toNanos, primary.getScoreError() * toNanos),
                    s.getN(),
                    score(secondary.get(FairShareFloodProfiler.BEHIND_P50)),
                    score(secondary.get(FairShareFloodProfiler.BEHIND_P99)),
                    score(secondary.get(FairShareFloodProfiler.BEHIND_MAX)),
                    score(secondary.get(FairShareFloodProfiler.NOISY_RATE)));
        }

        private static double score(Result<?> r) {
            return r == null ? Double.NaN : r.getScore();
        }
    }

    /**
     * A finished run.
     *
     * @param report the measurements, the machine and the load, judged as the main report's
     * @param waits  the polite tenant's waits, in the order of {@link TenantPermits#ALL}
     */
    record Run(Report report, List<Wait> waits) {
        /** @return whether the figures must not be published (see {@link Report#rejected()}) */
        boolean rejected() {
            return report.rejected();
        }

        /** @return the contents of {@value #MARKDOWN} */
        String markdown() {
            StringBuilder md = new StringBuilder("# The fair share: a polite tenant's wait, and the cost\n\n");
            md.append(ReportMarkdown.header(report, JSON).stripLeading());
            md.append(waitMarkdown());
            md.append(costMarkdown());
            md.append(ReportMarkdown.measurements(report));
            return md.toString();
        }

        private String waitMarkdown() {
            if (waits.isEmpty()) {
                return "";
            }
            StringBuilder md = new StringBuilder("\n## A polite tenant's wait while a noisy tenant floods\n\n");
            md.append(String.format(
                    Locale.ROOT,
                    "%d permits. The noisy tenant: %d threads, each in a loop: acquire one permit, hold "
                            + "it %s, release it, ask again at once (a backlog of about %d waiting requests, refilled as it is "
                            + "served). The polite tenant: one request at a time, a random %s apart on average, each held %s. "
                            + "The wait is the time from calling acquire to holding the permit, of every polite request "
                            + "(JMH SampleTime); the noisy grants it waited behind are counted, not timed. The capped "
                            + "java.util.concurrent design lets a tenant hold at most %d permits.%n%n",
                    FairShareFloodBenchmark.CAPACITY,
                    FairShareFloodBenchmark.NOISY_THREADS,
                    ReportMarkdown.duration(new Estimate(FairShareFloodBenchmark.SERVICE_NANOS, 0)),
                    FairShareFloodBenchmark.NOISY_THREADS - FairShareFloodBenchmark.CAPACITY,
                    ReportMarkdown.duration(new Estimate(FairShareFloodBenchmark.POLITE_GAP_NANOS, 0)),
                    ReportMarkdown.duration(new Estimate(FairShareFloodBenchmark.SERVICE_NANOS, 0)),
                    TenantPermits.JucCapped.cap(FairShareFloodBenchmark.CAPACITY)));
            md.append(
                    "| peer | polite wait p50 | p99 | mean | p99 / FIFO's p99 | requests | noisy grants waited behind, "
                            + "p50 / p99 / max | noisy grants per second |\n");
            md.append("|---|---:|---:|---:|---:|---:|---:|---:|\n");
            Wait fifo = waits.stream()
                    .filter(w -> w.peer().equals(TenantPermits.SEMAPHORE))
                    .findFirst()
                    .orElse(null);
            for (Wait w : waits) {
                md.append(String.format(
                        Locale.ROOT,
                        "| %s | %s | %s | %s | %s | %,d | %s / %s / %s | %s |%n",
                        label(w.peer()),
                        ReportMarkdown.duration(new Estimate(w.p50(), 0)),
                        ReportMarkdown.duration(new Estimate(w.p99(), 0)),
                        ReportMarkdown.duration(w.mean()),
                        fifo == null || fifo.p99() <= 0 ? "" : Estimate.format(w.p99() / fifo.p99()),
                        w.samples(),
                        count(w.behindP50()),
                        count(w.behindP99()),
                        count(w.behindMax()),
                        Double.isNaN(w.noisyPerSecond())
                                ? ""
                                : String.format(Locale.ROOT, "%,.0f", w.noisyPerSecond())));
            }
            return md.toString();
        }

        private String costMarkdown() {
            List<Comparison> time = costComparisons();
            if (time.isEmpty()) {
                return "";
            }
            StringBuilder md = new StringBuilder("\n## The cost of fairness, against the FIFO Semaphore\n\n");
            md.append(
                            "One thread. `tryAcquire(key, 1)` then `release(key, 1)`; and one wait: a request queued behind a ")
                    .append(String.format(
                            Locale.ROOT,
                            "full semaphore and granted by handoff (%,d per invocation). ",
                            FairShareBenchmark.WAITERS))
                    .append(
                            "With 1,000 keys, each holds a permit, so all are active. Error bars are JMH's 99.9% confidence ")
                    .append(
                            "intervals; a verdict counts only when the whole error bar is on one side of the target.\n\n");
            md.append(
                    "| operation | active keys | fair share | Semaphore | fair share / Semaphore | target | verdict |\n");
            md.append("|---|---:|---:|---:|---:|---|---|\n");
            for (Comparison c : time) {
                md.append(String.format(
                        Locale.ROOT,
                        "| %s | %s | %s %s | %s %s | %s | %s | %s |%n",
                        c.workload(),
                        c.peer(),
                        c.ours(),
                        c.metric(),
                        c.theirs(),
                        c.metric(),
                        c.ratio(),
                        c.target() == null ? "" : c.target(),
                        c.verdict()));
            }
            List<Comparison> bytes = bytesPerWaiter();
            if (!bytes.isEmpty()) {
                md.append(
                                "\nBytes allocated per wait (queued and handed off; `-prof gc`, `gc.alloc.rate.norm`): the node, ")
                        .append("and for the fair share its part of the per-key state.\n\n");
                md.append("| active keys | fair share | Semaphore | fair share / Semaphore |\n");
                md.append("|---:|---:|---:|---:|\n");
                for (Comparison c : bytes) {
                    md.append(String.format(
                            Locale.ROOT, "| %s | %s B | %s B | %s |%n", c.peer(), c.ours(), c.theirs(), c.ratio()));
                }
            }
            return md.toString();
        }

        /** @return the time per operation of the fair share against the Semaphore's, per benchmark and key count (peer = the key count) */
        List<Comparison> costComparisons() {
            List<Comparison> rows = new ArrayList<>();
            for (String benchmark : List.of(TRY, HAND_OFF)) {
                for (int keys : KEYS) {
                    Measurement ours = find(benchmark, TenantPermits.FAIR_SHARE, keys);
                    Measurement theirs = find(benchmark, TenantPermits.SEMAPHORE, keys);
                    if (ours != null && theirs != null) {
                        // The target: the immediate path on one key at most 1.3x the Semaphore's.
                        Comparison.Target target =
                                benchmark.equals(TRY) && keys == 1 ? Comparison.Target.atMost(1.3) : null;
                        rows.add(new Comparison(
                                benchmark.equals(TRY) ? "tryAcquire + release" : "one wait, queued and handed off",
                                ours.unit(),
                                String.format(Locale.ROOT, "%,d", keys),
                                ours.score(),
                                theirs.score(),
                                target,
                                true));
                    }
                }
            }
            return rows;
        }

        /** @return the bytes per waiter of the fair share against the Semaphore's, per key count (peer = the key count) */
        List<Comparison> bytesPerWaiter() {
            List<Comparison> rows = new ArrayList<>();
            for (int keys : KEYS) {
                Measurement ours = find(HAND_OFF, TenantPermits.FAIR_SHARE, keys);
                Measurement theirs = find(HAND_OFF, TenantPermits.SEMAPHORE, keys);
                if (ours != null && theirs != null && ours.bytesPerOp() != null && theirs.bytesPerOp() != null) {
                    rows.add(new Comparison(
                            "bytes per waiter",
                            "B/op",
                            String.format(Locale.ROOT, "%,d", keys),
                            ours.bytesPerOp(),
                            theirs.bytesPerOp(),
                            null,
                            true));
                }
            }
            return rows;
        }

        private Measurement find(String benchmark, String peer, int keys) {
            Map<String, Measurement> byPeer = report.measured().get(benchmark);
            return byPeer == null ? null : byPeer.get(costLabel(peer, keys));
        }
    }

    /** The peers of {@link FairShareBenchmark}. */
    static final List<String> COST_PEERS = List.of(TenantPermits.FAIR_SHARE, TenantPermits.SEMAPHORE);

    /**
     * @param m a measurement of this report
     * @return the JMH parameters that select its configuration alone: the peer, and for a cost
     *     measurement the key count its label names
     * @throws IllegalArgumentException if {@code m} is a cost measurement whose peer is no
     *     {@link #costLabel} of {@link #COST_PEERS} and {@link #KEYS}
     */
    static Map<String, String> params(Measurement m) {
        if (!m.benchmark().startsWith(COST_CLASS)) {
            return Map.of("peer", m.peer());
        }
        for (String peer : COST_PEERS) {
            for (int keys : KEYS) {
                if (costLabel(peer, keys).equals(m.peer())) {
                    return Map.of("peer", peer, "keys", Integer.toString(keys));
                }
            }
        }
        throw new IllegalArgumentException("FairShareReport.params: '" + m.peer() + "' of " + m.benchmark()
                + " is no configuration of the report (peers " + COST_PEERS + ", keys " + KEYS + ")");
    }

    /**
     * How this report records a JMH result and runs one of its measurements again.
     *
     * @param waits the polite tenant's waits by peer, to which a flood's result is put (an attempt
     *              replaces the wait of the attempt before)
     * @return the report's {@link Remeasurement.Rerun}
     */
    static Remeasurement.Rerun rerun(Map<String, Wait> waits) {
        return new Remeasurement.Rerun() {
            @Override
            public Map<String, String> params(Measurement old) {
                return FairShareReport.params(old);
            }

            @Override
            public Measurement record(RunResult result) {
                Measurement m = Measurement.of(result);
                String keys = result.getParams().getParam("keys");
                if (keys != null) { // a cost measurement: one per peer and key count
                    m = new Measurement(
                            m.benchmark(),
                            costLabel(m.peer(), Integer.parseInt(keys)),
                            m.score(),
                            m.unit(),
                            m.bytesPerOp(),
                            m.acquisitions(),
                            m.suspended(),
                            m.spread(),
                            m.crossCore(),
                            m.storm());
                }
                if (m.benchmark().equals(FLOOD)) {
                    waits.put(m.peer(), Wait.of(result));
                }
                return m;
            }
        };
    }

    /** @return how the report names a peer of the flood */
    static String label(String peer) {
        return switch (peer) {
            case TenantPermits.FAIR_SHARE -> "FairShareSemaphore, shares 1:1";
            case TenantPermits.SEMAPHORE -> "Semaphore (FIFO)";
            case TenantPermits.JUC_CAPPED -> "j.u.c. fair Semaphore + per-tenant cap";
            default -> peer;
        };
    }

    /** @return the peer of a cost measurement, e.g. {@code "fair-share, 1000 keys"} */
    static String costLabel(String peer, int keys) {
        return peer + ", " + keys + (keys == 1 ? " key" : " keys");
    }

    private static String count(double c) {
        return Double.isNaN(c) ? "n/a" : String.format(Locale.ROOT, "%.0f", c);
    }

    private static double nanosPer(String unit) {
        return switch (unit) {
            case "ns/op" -> 1;
            case "us/op" -> 1e3;
            case "ms/op" -> 1e6;
            case "s/op" -> 1e9;
            default ->
                throw new IllegalArgumentException("FairShareReport: the flood's unit '" + unit
                        + "' is not a time per operation (ns/op, us/op, ms/op, s/op)");
        };
    }

    /**
     * Runs the fair share's benchmarks, prints {@value #MARKDOWN}, writes it and {@value #JSON}; a
     * rejected run exits with status {@value BenchmarkReport#EXIT_LOADED}.
     *
     * @param args see {@link #USAGE}
     * @throws Exception if a benchmark fails or a file cannot be written
     */
    public static void main(String[] args) throws Exception {
        Settings settings = settings(args);
        if (settings == null) {
            System.out.println(USAGE);
            return;
        }
        Run run = run(settings);
        System.out.println();
        System.out.println(run.markdown());
        Path written = run.rejected() ? settings.rejectedOut : settings.out;
        System.out.println("Wrote " + written.toAbsolutePath().normalize() + "/{" + MARKDOWN + ", " + JSON + "}");
        if (run.rejected()) {
            System.out.flush();
            System.err.println(run.report().rejection(settings.out, settings.rejectedOut));
            System.exit(BenchmarkReport.EXIT_LOADED);
        }
    }

    /**
     * @param args the command line after {@code fairshare}
     * @return the settings: the main report's, running this report's benchmarks and no footprint; {@code null} for {@code --help}
     * @throws IllegalArgumentException on an unknown or incomplete argument, or one this report does not take
     */
    static Settings settings(String... args) {
        for (String a : args) {
            if (a.equals("--waiters") || a.equals("--redraw") || a.equals("--virtual-jvm")) {
                throw new IllegalArgumentException("fairshare " + a + ": not an option of this report\n" + USAGE);
            }
        }
        Settings s = new Settings();
        s.include = INCLUDE;
        s.waiters = 0;
        return Settings.parse(s, args);
    }

    /**
     * Writes {@value #MARKDOWN} and {@value #JSON} into {@code settings.out}, or, if the run is
     * {@linkplain Run#rejected() rejected}, into {@code settings.rejectedOut} without touching
     * {@code settings.out}.
     *
     * @param run      the finished run
     * @param jmhJson  JMH's results, where JMH wrote them (may be missing)
     * @param settings where to write
     * @return the directory written
     * @throws IOException if a file cannot be written
     */
    static Path publish(Run run, Path jmhJson, Settings settings) throws IOException {
        Path out = run.rejected() ? settings.rejectedOut : settings.out;
        Files.createDirectories(out);
        if (Files.exists(jmhJson)) {
            Files.copy(jmhJson, out.resolve(JSON), StandardCopyOption.REPLACE_EXISTING);
        }
        Files.writeString(out.resolve(MARKDOWN), run.markdown());
        return out;
    }

    /** @return the waits in the order of {@link TenantPermits#ALL} */
    static List<Wait> inPeerOrder(Map<String, Wait> waits) {
        return waits.values().stream()
                .sorted(java.util.Comparator.comparingInt(w -> TenantPermits.ALL.indexOf(w.peer())))
                .toList();
    }

    /**
     * Runs the benchmarks, watching the load of other processes, measuring again what was far-cored
     * or unsteady, and writes {@value #MARKDOWN} and
     * {@value #JSON} into {@code settings.out}, or into {@code settings.rejectedOut} if the run is
     * rejected (then {@code settings.out} is not touched).
     *
     * @param settings what to run and where to write
     * @return the run
     * @throws RunnerException if a benchmark fails
     * @throws IOException if a file cannot be written
     */
    static Run run(Settings settings) throws RunnerException, IOException {
        Path staging = Files.createTempDirectory("handoff-fair-share-");
        try {
            Machine machine = Machine.current();
            LoadGuard guard = LoadGuard.start();
            long start = System.nanoTime();
            Map<String, Map<String, Measurement>> measured = new LinkedHashMap<>();
            Map<String, Wait> waits = new LinkedHashMap<>();
            Remeasurement.Rerun rerun = rerun(waits);
            List<Path> jsons = new ArrayList<>(List.of(staging.resolve(JSON)));
            for (RunResult result : JmhRuns.runJmh(settings, settings.include, null, null, null, jsons.get(0), guard)) {
                BenchmarkReport.put(measured, rerun.record(result));
            }
            List<Measurement> remeasured = settings.smoke
                    ? List.of()
                    : Remeasurement.measureAgain(settings, measured, staging, jsons, guard, rerun);
            Report report = new Report(
                    machine,
                    Machine.loadAverage(),
                    (System.nanoTime() - start) / 1e9,
                    settings.smoke,
                    0,
                    measured,
                    guard.finish(),
                    remeasured);
            Run run = new Run(report, inPeerOrder(waits));
            publish(run, JmhRuns.mergeJson(jsons, staging.resolve("all-" + JSON)), settings);
            return run;
        } finally {
            JmhRuns.deleteStaging(staging);
        }
    }
}
