// SPDX-License-Identifier: Apache-2.0
package dev.handoff.benchmarks;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.openjdk.jmh.results.RunResult;
import org.openjdk.jmh.runner.RunnerException;

/**
 * The benchmark suite in one command: runs every JMH benchmark of this module (all peers in one
 * run, one benchmark at a time, forks from the annotations, {@code -prof gc}), measures the bytes
 * per suspended waiter in fresh JVMs, prints the ratios ours / peer with error bars, and writes
 * {@code results.md}, {@code results.tsv}, {@code jmh-results.json} and the chart {@code benchmarks.png}.
 *
 * <p>Load guard: while JMH measures, {@link LoadGuard} records the CPU used by other processes in
 * every measured iteration ({@link OtherLoad}). If any iteration had more than
 * {@value OtherLoad#THRESHOLD_CPUS} CPU of other load, a full run is rejected: its files go to
 * {@code --rejected-out} (default {@code benchmarks/target/rejected-run}) instead of {@code --out},
 * the report says why, and the command exits with status {@value #EXIT_LOADED}. A quiet run writes
 * to {@code --out} and results.md states the maximum load measured. A smoke run is never rejected
 * (its figures mean nothing anyway); its results.md still states the load.
 *
 * <p>This class owns the command line's dispatch, the names and labels of the workloads, and the
 * order of a run; each step lives in its own file: {@link Settings} (the command line),
 * {@link JmhRuns} (JMH's options, the JSON files), {@link VirtualPlan} (where the virtual-thread
 * storm runs), {@link Remeasurement} (measuring again what the host slowed),
 * {@link WaiterFootprintRuns} (workload 6), {@link Measurement} and {@link Report} (what was
 * measured, and whether it may be published), {@link ReportMarkdown} and {@link ReportTsv}
 * (results.md, results.tsv) and {@link ReportChart} (benchmarks.png).
 *
 * <pre>{@code
 * java -jar benchmarks/target/benchmarks.jar                    # full run, writes docs/benchmarks/
 * java -jar benchmarks/target/benchmarks.jar --smoke --out /tmp/smoke   # every benchmark once, seconds
 * java -jar benchmarks/target/benchmarks.jar jmh -prof stack WeightedBenchmark   # plain JMH
 * java -jar benchmarks/target/benchmarks.jar fairshare          # the fair share's own run: FairShareReport
 * java -jar benchmarks/target/benchmarks.jar edge               # admission at the edge over gRPC: EdgeBenchmark
 * }</pre>
 */
public final class BenchmarkReport {
    static final String TRY = "UncontendedBenchmark.tryAcquireRelease";
    static final String SUSPEND = "UncontendedSuspendBenchmark.acquireRelease";
    static final String BLOCKING4 = "BlockingContendedBenchmark.threads4";
    static final String BLOCKING8 = "BlockingContendedBenchmark.threads8";
    static final String COROUTINES = "CoroutineContendedBenchmark.tasks8permits2";
    static final String COROUTINES_LAUNCHED = "CoroutineLaunchedBenchmark.tasks8permits2";
    static final String FUTURES = "FutureContendedBenchmark.chains8permits2";
    static final String WEIGHTED = "WeightedBenchmark.capacity16weights1to8";
    static final String FOOTPRINT = "WaiterFootprint";
    static final String STORM_PLATFORM = "ManyThreadsBenchmark.platform64";
    static final String STORM_VIRTUAL = "ManyThreadsBenchmark.virtual10000";
    /** The virtual-thread storm's full JMH name, which the report may run on another JVM. */
    static final String STORM_VIRTUAL_FULL = "dev.handoff.benchmarks." + STORM_VIRTUAL;

    /** Labels of the workloads, numbered as in the issue, in report order. */
    static final Map<String, String> WORKLOADS = new LinkedHashMap<>();

    static {
        WORKLOADS.put(TRY, "1a. uncontended tryAcquire+release");
        WORKLOADS.put(SUSPEND, "1b. uncontended suspend acquire+release");
        WORKLOADS.put(BLOCKING4, "2. blocking, 4 threads, 2 permits");
        WORKLOADS.put(BLOCKING8, "2. blocking, 8 threads, 2 permits");
        WORKLOADS.put(COROUTINES, "3. coroutines, 8 tasks, 2 permits, yield inside");
        WORKLOADS.put(COROUTINES_LAUNCHED, "3b. as 3, tasks launched (no handler on their Jobs)");
        WORKLOADS.put(WEIGHTED, "4. weighted, capacity 16, weights 1..8");
        WORKLOADS.put(FOOTPRINT, "6. live bytes per suspended coroutine");
        WORKLOADS.put(FUTURES, "7. futures, 8 chains, 2 permits, hop inside");
        WORKLOADS.put(STORM_PLATFORM, "8. lock storm, 64 platform threads, 4 permits, yield inside");
        WORKLOADS.put(STORM_VIRTUAL, "8. lock storm, 10,000 virtual threads, 4 permits, yield inside");
    }

    /** The label of the diagnostic row: ours without kotlinx's cancellation, in workload 3. */
    static final String COROUTINES_UNCANCELLABLE = WORKLOADS.get(COROUTINES) + ", diagnostic: handoff not cancellable";

    /** The label of the diagnostic row: ours without kotlinx's cancellation, in workload 4. */
    static final String WEIGHTED_UNCANCELLABLE = WORKLOADS.get(WEIGHTED) + ", diagnostic: handoff not cancellable";

    /** The label of the diagnostic row: ours with a no-op WaitListener against plain ours, in workload 3. */
    static final String COROUTINES_LISTENER =
            WORKLOADS.get(COROUTINES) + ", diagnostic: handoff with a no-op WaitListener";

    /** The label of the diagnostic row: ours after a past resize against plain ours, in workload 3. */
    static final String COROUTINES_RESIZED =
            WORKLOADS.get(COROUTINES) + ", diagnostic: handoff after setCapacity(c + 1), setCapacity(c)";

    /** The label of the diagnostic row: ours with a no-op WaitListener against plain ours, in workload 4. */
    static final String WEIGHTED_LISTENER = WORKLOADS.get(WEIGHTED) + ", diagnostic: handoff with a no-op WaitListener";

    /** The label of the diagnostic row: ours after a past resize against plain ours, in workload 4. */
    static final String WEIGHTED_RESIZED =
            WORKLOADS.get(WEIGHTED) + ", diagnostic: handoff after setCapacity(c + 1), setCapacity(c)";

    /** How the diagnostic rows against plain ours name their peer. */
    static final String PLAIN_HANDOFF = "handoff plain";

    /** Short labels of the workloads, for the chart's axis. */
    static final Map<String, String> SHORT = Map.ofEntries(
            Map.entry(COROUTINES_UNCANCELLABLE, "3 diagnostic: not cancellable"),
            Map.entry(WEIGHTED_UNCANCELLABLE, "4 diagnostic: not cancellable"),
            Map.entry(COROUTINES_LISTENER, "3 diagnostic: listener"),
            Map.entry(COROUTINES_RESIZED, "3 diagnostic: resized"),
            Map.entry(WEIGHTED_LISTENER, "4 diagnostic: listener"),
            Map.entry(WEIGHTED_RESIZED, "4 diagnostic: resized"),
            Map.entry(WORKLOADS.get(TRY), "1a try"),
            Map.entry(WORKLOADS.get(SUSPEND), "1b suspend"),
            Map.entry(WORKLOADS.get(BLOCKING4), "2 blocking 4 thr"),
            Map.entry(WORKLOADS.get(BLOCKING8), "2 blocking 8 thr"),
            Map.entry(WORKLOADS.get(COROUTINES), "3 coroutines 8/2"),
            Map.entry(WORKLOADS.get(COROUTINES_LAUNCHED), "3b launched 8/2"),
            Map.entry(WORKLOADS.get(WEIGHTED), "4 weighted"),
            Map.entry(WORKLOADS.get(FOOTPRINT), "6 per waiter"),
            Map.entry(WORKLOADS.get(FUTURES), "7 futures 8/2"),
            Map.entry(WORKLOADS.get(STORM_PLATFORM), "8 storm 64 platform"),
            Map.entry(WORKLOADS.get(STORM_VIRTUAL), "8 storm 10k virtual"));

    /** The exit status of a rejected full run: other processes loaded the machine, it was unsteady, or the cores were far apart. */
    static final int EXIT_LOADED = 3;

    private BenchmarkReport() {}

    /**
     * Runs the suite, prints the table, writes the files. See the class comment for arguments;
     * {@code --help} lists them. {@code jmh ...} hands the rest of the line to JMH's own main.
     *
     * @param args the command line
     * @throws Exception if a benchmark fails or a file cannot be written
     */
    public static void main(String[] args) throws Exception {
        System.setProperty("java.awt.headless", "true");
        if (args.length > 0 && args[0].equals("jmh")) {
            org.openjdk.jmh.Main.main(Arrays.copyOfRange(args, 1, args.length));
            return;
        }
        if (args.length > 0 && args[0].equals("interleave")) {
            Interleaved.main(Arrays.copyOfRange(args, 1, args.length));
            return;
        }
        if (args.length > 0 && args[0].equals("edge")) {
            EdgeBenchmark.main(Arrays.copyOfRange(args, 1, args.length));
            return;
        }
        if (args.length > 0 && args[0].equals("fairshare")) {
            FairShareReport.main(Arrays.copyOfRange(args, 1, args.length));
            return;
        }
        Settings settings = Settings.parse(args);
        if (settings == null) {
            System.out.println(Settings.USAGE);
            return;
        }
        Report report = settings.redraw
                ? write(Report.parseTsv(Files.readString(settings.out.resolve("results.tsv"))), settings.out)
                : run(settings);
        System.out.println();
        System.out.println(report.markdown());
        Path written = settings.redraw || !report.rejected() ? settings.out : settings.rejectedOut;
        System.out.println("Wrote " + written.toAbsolutePath().normalize()
                + "/{results.md, results.tsv, jmh-results.json, benchmarks.png}");
        if (!settings.redraw && report.rejected()) {
            System.out.flush();
            System.err.println(report.rejection(settings.out, settings.rejectedOut));
            System.exit(EXIT_LOADED);
        }
    }

    /**
     * Runs the benchmarks and the footprint, watching the load of other processes, and writes
     * {@code results.md}, {@code results.tsv}, {@code jmh-results.json} and {@code benchmarks.png}
     * into {@code settings.out}, or into {@code settings.rejectedOut} if the run is
     * {@linkplain Report#rejected() rejected} (then {@code settings.out} is not touched).
     *
     * @param settings what to run
     * @return the report
     * @throws RunnerException if a benchmark fails
     * @throws IOException if a file cannot be written or a footprint JVM fails
     * @throws InterruptedException if interrupted while waiting for a footprint JVM
     */
    public static Report run(Settings settings) throws RunnerException, IOException, InterruptedException {
        // JMH writes its JSON while it runs, before the load is judged: into a staging directory.
        Path staging = Files.createTempDirectory("handoff-bench-");
        try {
            Machine machine = Machine.current();
            LoadGuard guard = LoadGuard.start();
            long start = System.nanoTime();
            Map<String, Map<String, Measurement>> measured = new LinkedHashMap<>();
            List<Path> jsons = new ArrayList<>();
            jsons.add(staging.resolve("jmh-results.json"));
            List<String> notes = new ArrayList<>();
            boolean virtualIncluded = java.util.regex.Pattern.compile(settings.include)
                    .matcher(STORM_VIRTUAL_FULL)
                    .find();
            VirtualPlan virtual = virtualIncluded ? VirtualPlan.of(settings) : new VirtualPlan(true, null, "");
            if (virtualIncluded && !virtual.here()) {
                notes.add(virtual.note());
                System.out.println("# " + virtual.note());
            }
            // The virtual-thread storm runs here only if this JVM has virtual threads; else apart, or not at all.
            String exclude = virtualIncluded && !virtual.here()
                    ? "^" + java.util.regex.Pattern.quote(STORM_VIRTUAL_FULL) + "$"
                    : null;
            if (JmhRuns.anyBenchmark(settings.include, exclude)) {
                for (RunResult result :
                        JmhRuns.runJmh(settings, settings.include, exclude, null, null, jsons.get(0), guard)) {
                    put(measured, Measurement.of(result));
                }
            }
            if (virtualIncluded && virtual.java() != null) {
                Path json = staging.resolve("jmh-results-" + jsons.size() + ".json");
                jsons.add(json);
                String only = "^" + java.util.regex.Pattern.quote(STORM_VIRTUAL_FULL) + "$";
                for (RunResult result : JmhRuns.runJmh(settings, only, null, null, virtual.java(), json, guard)) {
                    put(measured, Measurement.of(result));
                }
            }
            Remeasurement.Rerun rerun = new Remeasurement.Rerun() {
                @Override
                public Map<String, String> params(Measurement old) {
                    return Map.of("peer", old.peer());
                }

                @Override
                public String jvm(Measurement old) {
                    return old.benchmark().equals(STORM_VIRTUAL) ? virtual.java() : null;
                }

                @Override
                public Measurement record(RunResult result) {
                    return Measurement.of(result);
                }
            };
            List<Measurement> remeasured = settings.smoke
                    ? List.of()
                    : Remeasurement.measureAgain(settings, measured, staging, jsons, guard, rerun);
            if (settings.waiters > 0) {
                WaiterFootprintRuns.measure(settings, measured);
            }
            Report report = new Report(
                    machine,
                    Machine.loadAverage(),
                    (System.nanoTime() - start) / 1e9,
                    settings.smoke,
                    settings.waiters,
                    measured,
                    guard.finish(),
                    remeasured,
                    notes);
            publish(report, JmhRuns.mergeJson(jsons, staging.resolve("all-jmh-results.json")), settings);
            return report;
        } finally {
            JmhRuns.deleteStaging(staging);
        }
    }

    /** Adds {@code m} to {@code measured} (benchmark → peer → measurement), replacing an earlier attempt of the same benchmark and peer. */
    static void put(Map<String, Map<String, Measurement>> measured, Measurement m) {
        measured.computeIfAbsent(m.benchmark(), k -> new LinkedHashMap<>()).put(m.peer(), m);
    }

    /**
     * Writes all four files of a finished run into {@code settings.out}, or, if the run is
     * {@linkplain Report#rejected() rejected}, into {@code settings.rejectedOut} without touching
     * {@code settings.out}.
     *
     * @param report  the report
     * @param jmhJson JMH's results, where JMH wrote them (may be missing)
     * @param settings where to write
     * @return the directory written
     * @throws IOException if a file cannot be written
     */
    static Path publish(Report report, Path jmhJson, Settings settings) throws IOException {
        Path out = report.rejected() ? settings.rejectedOut : settings.out;
        Files.createDirectories(out);
        if (Files.exists(jmhJson)) {
            Files.copy(jmhJson, out.resolve("jmh-results.json"), StandardCopyOption.REPLACE_EXISTING);
        }
        Files.writeString(out.resolve("results.tsv"), report.tsv());
        write(report, out);
        return out;
    }

    /**
     * Writes {@code results.md} and {@code benchmarks.png} for a report.
     *
     * @param report the report
     * @param out    the directory
     * @return the report
     * @throws IOException if a file cannot be written
     */
    static Report write(Report report, Path out) throws IOException {
        Files.writeString(out.resolve("results.md"), report.markdown());
        ReportChart.write(
                out.resolve("benchmarks.png"),
                report.machine(),
                report.load().shortText(),
                report.timeComparisons(),
                report.memoryComparisons());
        return report;
    }
}
