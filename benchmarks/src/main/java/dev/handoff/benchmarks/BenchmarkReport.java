// SPDX-License-Identifier: Apache-2.0
package dev.handoff.benchmarks;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collection;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;
import java.util.function.DoubleSupplier;
import java.util.function.LongSupplier;
import java.util.stream.Stream;
import org.openjdk.jmh.profile.GCProfiler;
import org.openjdk.jmh.results.Result;
import org.openjdk.jmh.results.BenchmarkResult;
import org.openjdk.jmh.results.IterationResult;
import org.openjdk.jmh.results.RunResult;
import org.openjdk.jmh.results.format.ResultFormatType;
import org.openjdk.jmh.runner.Runner;
import org.openjdk.jmh.runner.RunnerException;
import org.openjdk.jmh.runner.format.OutputFormatFactory;
import org.openjdk.jmh.runner.options.ChainedOptionsBuilder;
import org.openjdk.jmh.runner.options.OptionsBuilder;
import org.openjdk.jmh.runner.options.TimeValue;
import org.openjdk.jmh.runner.options.VerboseMode;

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
 * <pre>{@code
 * java -jar benchmarks/target/benchmarks.jar                    # full run, writes docs/benchmarks/
 * java -jar benchmarks/target/benchmarks.jar --smoke --out /tmp/smoke   # every benchmark once, seconds
 * java -jar benchmarks/target/benchmarks.jar jmh -prof stack WeightedBenchmark   # plain JMH
 * java -jar benchmarks/target/benchmarks.jar fairshare          # the fair share's own run: FairShareReport
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
    static final String COROUTINES_LISTENER = WORKLOADS.get(COROUTINES) + ", diagnostic: handoff with a no-op WaitListener";

    /** The label of the diagnostic row: ours after a past resize against plain ours, in workload 3. */
    static final String COROUTINES_RESIZED = WORKLOADS.get(COROUTINES)
            + ", diagnostic: handoff after setCapacity(c + 1), setCapacity(c)";

    /** The label of the diagnostic row: ours with a no-op WaitListener against plain ours, in workload 4. */
    static final String WEIGHTED_LISTENER = WORKLOADS.get(WEIGHTED) + ", diagnostic: handoff with a no-op WaitListener";

    /** The label of the diagnostic row: ours after a past resize against plain ours, in workload 4. */
    static final String WEIGHTED_RESIZED = WORKLOADS.get(WEIGHTED) + ", diagnostic: handoff after setCapacity(c + 1), setCapacity(c)";

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

    /**
     * The most a measurement's slowest measured iteration may exceed its fastest (forks together)
     * before a full run is rejected, outside the blocking workloads. Quiet runs stay within 1.45;
     * the slow minutes of a shared host, which the load guard cannot see, make 2-3x.
     */
    static final double STEADY_SPREAD = 1.5;

    /**
     * The slowest cross-core round trip ({@link CrossCoreProbe}, in ns) after any measured iteration
     * of a workload whose threads hand permits to each other, before a full run is rejected. Close
     * cores take 50-100 ns; the host's slow placement of the virtual CPUs, 400-500.
     */
    static final double CROSS_CORE_LIMIT_NANOS = 200;

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
        System.out.println("Wrote " + written.toAbsolutePath().normalize() + "/{results.md, results.tsv, jmh-results.json, benchmarks.png}");
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
            boolean virtualIncluded = java.util.regex.Pattern.compile(settings.include).matcher(STORM_VIRTUAL_FULL).find();
            VirtualPlan virtual = virtualIncluded ? VirtualPlan.of(settings) : new VirtualPlan(true, null, "");
            if (virtualIncluded && !virtual.here()) {
                notes.add(virtual.note());
                System.out.println("# " + virtual.note());
            }
            // The virtual-thread storm runs here only if this JVM has virtual threads; else apart, or not at all.
            String exclude = virtualIncluded && !virtual.here() ? "^" + java.util.regex.Pattern.quote(STORM_VIRTUAL_FULL) + "$" : null;
            if (anyBenchmark(settings.include, exclude)) {
                for (RunResult result : runJmh(settings, settings.include, exclude, null, null, jsons.get(0), guard)) {
                    put(measured, Measurement.of(result));
                }
            }
            if (virtualIncluded && virtual.java() != null) {
                Path json = staging.resolve("jmh-results-" + jsons.size() + ".json");
                jsons.add(json);
                String only = "^" + java.util.regex.Pattern.quote(STORM_VIRTUAL_FULL) + "$";
                for (RunResult result : runJmh(settings, only, null, null, virtual.java(), json, guard)) {
                    put(measured, Measurement.of(result));
                }
            }
            Rerun rerun = new Rerun() {
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
            List<Measurement> remeasured = settings.smoke ? List.of()
                    : measureAgain(settings, measured, staging, jsons, guard, rerun);
            if (settings.waiters > 0) {
                measureFootprint(settings, measured);
            }
            Report report = new Report(machine, Machine.loadAverage(),
                    (System.nanoTime() - start) / 1e9, settings.smoke, settings.waiters, measured, guard.finish(), remeasured,
                    notes);
            publish(report, mergeJson(jsons, staging.resolve("all-jmh-results.json")), settings);
            return report;
        } finally {
            deleteStaging(staging);
        }
    }

    /** Deletes a run's staging directory (JMH's JSON files as it wrote them) and all in it. */
    static void deleteStaging(Path staging) throws IOException {
        try (Stream<Path> files = Files.walk(staging)) {
            for (Path p : files.sorted(java.util.Comparator.reverseOrder()).toList()) {
                Files.deleteIfExists(p);
            }
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
        ReportChart.write(out.resolve("benchmarks.png"), report.machine(), report.load().shortText(),
                report.timeComparisons(), report.memoryComparisons());
        return report;
    }

    /**
     * How a report runs one of its measurements again ({@link #measureAgain(Settings, Map, Path, List,
     * LoadGuard, Rerun)}): which JMH parameters select that configuration alone, on which JVM, and
     * how a result becomes a measurement as the report names it. The report may keep more of a
     * result as it records it (the fair share's report keeps the polite tenant's wait).
     */
    interface Rerun {
        /**
         * @param old a measurement of this report
         * @return the JMH parameters ({@code @Param} name → value) that select its configuration and no other
         * @throws IllegalArgumentException if this report did not make such a measurement
         */
        Map<String, String> params(Measurement old);

        /**
         * @param old a measurement of this report
         * @return the {@code java} binary its forks run on, or {@code null} for this JVM's
         */
        default String jvm(Measurement old) {
            return null;
        }

        /**
         * @param result a JMH result of this report's benchmarks
         * @return the measurement, named as the report names it
         */
        Measurement record(RunResult result);
    }

    /**
     * Measures again, up to {@code settings.retries} times each, every measurement taken while the
     * cores were far apart ({@link Measurement#farCores()}) or that came out unsteady
     * ({@link Measurement#unsteady()}): both are the host's slow stretches, which last minutes.
     * Before each attempt it waits until the cores have been close for a while
     * ({@link #awaitCloseCores}, at most {@code settings.closeWaitSeconds}), so that an attempt does
     * not land in the same stretch. Each attempt is one JMH run of that benchmark and configuration
     * alone, watched by {@code guard}, its JSON in a new file of {@code staging} added to
     * {@code jsons}. The full run and the fair share's report measure again with this.
     *
     * @param settings how to run JMH, {@code retries} and {@code closeWaitSeconds}
     * @param measured benchmark → peer → measurement, in which every attempt replaces the one before
     * @param staging  where JMH writes its JSON
     * @param jsons    JMH's JSON files so far, to which the attempts' are added
     * @param guard    the run's load guard
     * @param rerun    how this report selects a configuration and records a result
     * @return the attempts that were replaced, in order, for the report (their raw data stays in the JSON)
     * @throws RunnerException if a benchmark fails
     */
    static List<Measurement> measureAgain(Settings settings, Map<String, Map<String, Measurement>> measured, Path staging,
                                          List<Path> jsons, LoadGuard guard, Rerun rerun) throws RunnerException {
        return measureAgain(settings.retries, measured, guard::loaded, () -> awaitCloseCores(settings.closeWaitSeconds), old -> {
            Path json = staging.resolve("jmh-results-" + jsons.size() + ".json");
            jsons.add(json);
            String only = "^" + java.util.regex.Pattern.quote("dev.handoff.benchmarks." + old.benchmark()) + "$";
            List<Measurement> again = new ArrayList<>();
            for (RunResult result : runJmh(settings, only, null, rerun.params(old), rerun.jvm(old), json, guard)) {
                again.add(rerun.record(result));
            }
            return again;
        });
    }

    /** One more attempt at a measurement ({@link #measureAgain(int, Map, BooleanSupplier, Runnable, Attempt)}). */
    @FunctionalInterface
    interface Attempt {
        /**
         * @param old the measurement to take again
         * @return the new measurements (normally one: the same benchmark and peer)
         * @throws RunnerException if the benchmark fails
         */
        List<Measurement> measure(Measurement old) throws RunnerException;
    }

    /**
     * The rounds of {@link #measureAgain(Settings, Map, Path, List, LoadGuard, Rerun)}, with the
     * load, the wait for close cores and the attempt given (the tests pass their own). In each of
     * at most {@code retries} rounds, every measurement {@link #toMeasureAgain to measure again} is
     * taken again once the cores are close, and what the attempt gives replaces it in
     * {@code measured}, whatever it gives; the rounds end early when nothing is left to measure
     * again. Once other processes have loaded a measured iteration the run is rejected whatever
     * comes next, so nothing more is measured again.
     *
     * @param retries    the rounds at most
     * @param measured   benchmark → peer → measurement (its maps mutable), changed in place
     * @param loaded     whether other processes have loaded a measured iteration so far
     * @param awaitClose waits until the cores are close (or gives up), before each attempt
     * @param attempt    measures one again
     * @return the measurements replaced, in order
     * @throws RunnerException if a benchmark fails
     */
    static List<Measurement> measureAgain(int retries, Map<String, Map<String, Measurement>> measured, BooleanSupplier loaded,
                                          Runnable awaitClose, Attempt attempt) throws RunnerException {
        List<Measurement> replaced = new ArrayList<>();
        for (int round = 1; round <= retries; round++) {
            List<Measurement> slowed = toMeasureAgain(measured);
            if (slowed.isEmpty()) {
                break;
            }
            for (Measurement old : slowed) {
                if (loaded.getAsBoolean()) {
                    System.out.println("# other processes loaded a measured iteration: the run is rejected, "
                            + "nothing more is measured again");
                    return replaced;
                }
                System.out.printf(Locale.ROOT, "# %s %s was %s: again, attempt %d of %d%n", old.benchmark(), old.peer(),
                        old.whyMeasuredAgain(), round + 1, retries + 1);
                awaitClose.run();
                for (Measurement m : attempt.measure(old)) {
                    put(measured, m);
                }
                replaced.add(old);
            }
        }
        return replaced;
    }

    /**
     * @return the measurements to take again: those taken while the cores were far apart, or whose
     *     iterations disagree by more than {@link #STEADY_SPREAD} (the blocking workloads excepted,
     *     as in {@link Measurement#unsteady()}), in the order of the run
     */
    static List<Measurement> toMeasureAgain(Map<String, Map<String, Measurement>> measured) {
        List<Measurement> slowed = new ArrayList<>();
        measured.values().forEach(byPeer -> byPeer.values().stream()
                .filter(m -> m.farCores() || m.unsteady()).forEach(slowed::add));
        return slowed;
    }

    /** How many probes in a row, {@link #CLOSE_PROBE_INTERVAL_MILLIS} apart, must find the cores close. */
    static final int CLOSE_PROBES = 3;
    static final long CLOSE_PROBE_INTERVAL_MILLIS = 5_000;

    /**
     * Waits until {@link #CLOSE_PROBES} cross-core probes in a row, {@link #CLOSE_PROBE_INTERVAL_MILLIS}
     * apart, found the cores close ({@link #CROSS_CORE_LIMIT_NANOS} or less), or until
     * {@code maxSeconds} have passed (then it goes on anyway: the attempt is judged like any other).
     * The probes run in this JVM while no benchmark runs; each takes a few milliseconds of both cores.
     *
     * @return the seconds waited
     */
    static long awaitCloseCores(long maxSeconds) {
        return awaitCloseCores(maxSeconds, System::nanoTime, CrossCoreProbe::roundTripNanos, Thread::sleep);
    }

    /** How {@link #awaitCloseCores(long, LongSupplier, DoubleSupplier, Pause)} waits between probes. */
    @FunctionalInterface
    interface Pause {
        /** As {@link Thread#sleep(long)}, which it is outside the tests. */
        void sleep(long millis) throws InterruptedException;
    }

    /**
     * {@link #awaitCloseCores(long)} with its clock ({@code System.nanoTime}), its probe
     * ({@link CrossCoreProbe#roundTripNanos}) and its pause between probes ({@code Thread.sleep})
     * given. The tests pass a clock of their own that only the probe and the pause move, so that
     * they check the logic (which probes end the wait, how many are taken, what is returned) and
     * not how fast the machine running them is: a real probe takes milliseconds on a quiet machine
     * but up to a second on a loaded one (five batches, each patient for 200 ms), and that time is
     * part of the seconds waited (a test that expected 0 s of a real wait failed in CI so).
     *
     * @param clock the time in ns, as {@link System#nanoTime()}
     * @param probe one cross-core probe, its round trip in ns
     * @param pause sleeps between probes
     * @return the seconds waited by {@code clock}, the probes included
     */
    static long awaitCloseCores(long maxSeconds, LongSupplier clock, DoubleSupplier probe, Pause pause) {
        long start = clock.getAsLong();
        long deadline = start + TimeUnit.SECONDS.toNanos(maxSeconds);
        int closeInARow = 0;
        double ns = probe.getAsDouble();
        boolean told = false;
        while (true) {
            closeInARow = ns <= CROSS_CORE_LIMIT_NANOS ? closeInARow + 1 : 0; // a busy core probes far
            long now = clock.getAsLong();
            if (closeInARow >= CLOSE_PROBES || now >= deadline) {
                long waited = TimeUnit.NANOSECONDS.toSeconds(now - start);
                if (closeInARow < CLOSE_PROBES) {
                    System.out.printf(Locale.ROOT, "# the cores were not close %d probes in a row within %d s (last probe %.0f ns): "
                            + "measuring anyway%n", CLOSE_PROBES, waited, ns);
                } else if (told) {
                    System.out.printf(Locale.ROOT, "# the cores are close again (%.0f ns) after %d s%n", ns, waited);
                }
                return waited;
            }
            if (closeInARow == 0 && !told) {
                System.out.printf(Locale.ROOT, "# waiting for the cores to be close (now %.0f ns), at most %d s%n", ns, maxSeconds);
                told = true;
            }
            try {
                pause.sleep(CLOSE_PROBE_INTERVAL_MILLIS);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return TimeUnit.NANOSECONDS.toSeconds(clock.getAsLong() - start);
            }
            ns = probe.getAsDouble();
        }
    }

    /**
     * Writes the JMH JSON arrays {@code parts} (those that exist) as one array into {@code merged};
     * returns it (or the only part, unmerged).
     */
    static Path mergeJson(List<Path> parts, Path merged) throws IOException {
        List<Path> present = parts.stream().filter(Files::exists).toList();
        if (present.size() <= 1) {
            return parts.get(0);
        }
        List<String> bodies = new ArrayList<>();
        for (Path part : present) {
            String text = Files.readString(part).strip();
            if (!text.startsWith("[") || !text.endsWith("]")) {
                throw new IOException(part + ": not a JMH JSON array");
            }
            String body = text.substring(1, text.length() - 1).strip();
            if (!body.isEmpty()) {
                bodies.add(body);
            }
        }
        Files.writeString(merged, "[\n" + String.join(",\n", bodies) + "\n]\n");
        return merged;
    }

    /**
     * @return whether any benchmark of this jar matches {@code include} and not {@code exclude}
     *     (JMH refuses a run with none)
     */
    static boolean anyBenchmark(String include, String exclude) {
        return !org.openjdk.jmh.runner.BenchmarkList.defaultList()
                .find(OutputFormatFactory.createFormatInstance(System.out, VerboseMode.SILENT), List.of(include),
                        exclude == null ? List.of() : List.of(exclude))
                .isEmpty();
    }

    /**
     * Runs JMH on the benchmarks matching {@code include} (and not {@code exclude}, if given), in
     * the configurations with {@code params} ({@code @Param} name → value; {@code null}: all), with
     * their forks on {@code jvm} (a {@code java} binary) or on this JVM's, writing JMH's JSON to
     * {@code json}.
     */
    static Collection<RunResult> runJmh(Settings settings, String include, String exclude, Map<String, String> params,
                                        String jvm, Path json, LoadGuard guard)
            throws RunnerException {
        ChainedOptionsBuilder options = new OptionsBuilder()
                .include(include)
                .addProfiler(GCProfiler.class)
                .addProfiler(CrossCoreProbe.class)
                .addProfiler(ManyThreadsProfiler.class)
                .addProfiler(FairShareFloodProfiler.class)
                .shouldFailOnError(true)
                .result(json.toString())
                .resultFormat(ResultFormatType.JSON)
                .jvmArgsAppend("-Xms1g", "-Xmx1g", "-Djava.awt.headless=true");
        if (exclude != null) {
            options.exclude(exclude);
        }
        if (jvm != null) {
            options.jvm(jvm);
        }
        if (settings.smoke) {
            // Every benchmark once, in this JVM (in one fork if it needs another JVM), for a few
            // milliseconds (a storm: one invocation): it must run, nothing more.
            options.forks(jvm == null ? 0 : 1)
                    .verbosity(VerboseMode.SILENT)
                    .warmupIterations(0)
                    .measurementIterations(1)
                    .measurementTime(TimeValue.milliseconds(20));
        } else if (settings.forks >= 0) {
            options.forks(jvm == null ? settings.forks : Math.max(1, settings.forks)); // another JVM needs a fork
        }
        if (params != null) {
            params.forEach(options::param);
        }
        // JMH's console output, as new Runner(options) would make it, wrapped to hear the measured
        // iterations (also those of the forks, which report them to this JVM).
        VerboseMode verbosity = settings.smoke ? VerboseMode.SILENT : VerboseMode.NORMAL;
        return new Runner(options.build(), guard.watching(OutputFormatFactory.createFormatInstance(System.out, verbosity)))
                .run();
    }

    /**
     * Workload 6. Full run: fresh JVMs with a stop-the-world collector, alternating the peers, two
     * runs each. Smoke run: once each in this JVM.
     */
    private static void measureFootprint(Settings settings, Map<String, Map<String, Measurement>> measured)
            throws IOException, InterruptedException {
        List<String> peers = List.of(WaiterFootprint.BASELINE, Peers.HANDOFF, Peers.KOTLINX);
        Map<String, List<Double>> samples = new LinkedHashMap<>();
        int repeats = settings.smoke ? 1 : 2;
        for (int i = 0; i < repeats; i++) {
            for (String peer : peers) {
                double bytes = settings.smoke
                        ? WaiterFootprint.bytesPerWaiter(peer, settings.waiters)
                        : footprintInFreshJvm(peer, settings.waiters);
                System.out.printf(Locale.ROOT, "# footprint %s, %,d waiters: %.1f B/waiter%n", peer, settings.waiters, bytes);
                samples.computeIfAbsent(peer, k -> new ArrayList<>()).add(bytes);
            }
        }
        Map<String, Measurement> whole = new LinkedHashMap<>();
        for (String peer : peers) {
            whole.put(peer, new Measurement(FOOTPRINT, peer, spread(samples.get(peer)), "B/waiter", null, -1, -1, Double.NaN,
                    Double.NaN));
        }
        measured.put(FOOTPRINT, whole);
    }

    private static double footprintInFreshJvm(String peer, int waiters) throws IOException, InterruptedException {
        Path java = Path.of(System.getProperty("java.home"), "bin", "java");
        Process process = new ProcessBuilder(java.toString(), "-XX:+UseParallelGC", "-Xms2g", "-Xmx2g",
                "-cp", System.getProperty("java.class.path"),
                WaiterFootprint.class.getName(), peer, Integer.toString(waiters))
                .redirectErrorStream(true).start();
        String result = null;
        StringBuilder output = new StringBuilder();
        try (BufferedReader in = new BufferedReader(new InputStreamReader(process.getInputStream(), StandardCharsets.UTF_8))) {
            for (String line; (line = in.readLine()) != null; ) {
                output.append(line).append('\n');
                if (line.startsWith("footprint ")) {
                    result = line;
                }
            }
        }
        if (!process.waitFor(10, TimeUnit.MINUTES) || process.exitValue() != 0 || result == null) {
            throw new IOException("footprint JVM for " + peer + " failed:\n" + output);
        }
        String[] parts = result.split(" ");
        return Double.parseDouble(parts[3]);
    }

    /** The mean of the samples, with half their range as the error bar. */
    private static Estimate spread(List<Double> samples) {
        double sum = 0;
        double min = Double.POSITIVE_INFINITY;
        double max = Double.NEGATIVE_INFINITY;
        for (double s : samples) {
            sum += s;
            min = Math.min(min, s);
            max = Math.max(max, s);
        }
        return new Estimate(sum / samples.size(), (max - min) / 2);
    }

    /**
     * One benchmark for one peer.
     *
     * @param benchmark    "Class.method", or {@link #FOOTPRINT}
     * @param peer         the peer
     * @param score        the primary score
     * @param unit         its unit
     * @param bytesPerOp   {@code gc.alloc.rate.norm}, or {@code null} without {@code -prof gc}
     * @param acquisitions the acquisitions counted, or -1 if not counted
     * @param suspended    the acquisitions that suspended, or -1 if not counted
     * @param spread       the slowest measured iteration over the fastest, all forks together
     *                     (1 = all alike), or NaN if not known (the footprint)
     * @param crossCore    the slowest cross-core round trip probed after a measured iteration
     *                     ({@link CrossCoreProbe}), in ns, or NaN if not probed
     * @param storm        the lock storm's figures ({@link ManyThreadsProfiler}), or {@code null}
     *                     outside workload 8
     */
    public record Measurement(String benchmark, String peer, Estimate score, String unit, Estimate bytesPerOp,
                              long acquisitions, long suspended, double spread, double crossCore, Storm storm) {
        /** A measurement outside the lock storm. */
        public Measurement(String benchmark, String peer, Estimate score, String unit, Estimate bytesPerOp,
                           long acquisitions, long suspended, double spread, double crossCore) {
            this(benchmark, peer, score, unit, bytesPerOp, acquisitions, suspended, spread, crossCore, null);
        }

        static Measurement of(RunResult run) {
            String name = run.getParams().getBenchmark();
            String benchmark = name.substring(name.lastIndexOf('.', name.lastIndexOf('.') - 1) + 1);
            Result<?> primary = run.getPrimaryResult();
            var secondary = run.getSecondaryResults(); // JMH declares a raw Map<String, Result>
            Result<?> alloc = secondary.get("gc.alloc.rate.norm");
            Result<?> acquisitions = secondary.get("acquisitions");
            Result<?> suspended = secondary.get("suspended");
            Result<?> crossCore = secondary.get(CrossCoreProbe.RESULT);
            return new Measurement(benchmark, run.getParams().getParam("peer"),
                    new Estimate(primary.getScore(), primary.getScoreError()), primary.getScoreUnit(),
                    alloc == null ? null : new Estimate(alloc.getScore(), alloc.getScoreError()),
                    acquisitions == null ? -1 : Math.round(acquisitions.getScore()),
                    suspended == null ? -1 : Math.round(suspended.getScore()), slowestOverFastest(run),
                    crossCore == null ? Double.NaN : crossCore.getScore(), Storm.of(run));
        }

        /** The slowest measured iteration of every fork over the fastest (a ratio of scores, so for any unit). */
        private static double slowestOverFastest(RunResult run) {
            double min = Double.POSITIVE_INFINITY;
            double max = 0;
            for (BenchmarkResult fork : run.getBenchmarkResults()) {
                for (IterationResult iteration : fork.getIterationResults()) {
                    double score = iteration.getPrimaryResult().getScore();
                    min = Math.min(min, score);
                    max = Math.max(max, score);
                }
            }
            return min > 0 && max >= min ? max / min : Double.NaN;
        }

        /**
         * @return whether this measurement's iterations disagree by more than {@link #STEADY_SPREAD}
         *     in a workload where they should not (every one but the blocking workloads, the lock
         *     storms and the fair share's flood, whose peers park and unpark threads and are erratic
         *     by nature)
         */
        boolean unsteady() {
            return !BLOCKING4.equals(benchmark) && !BLOCKING8.equals(benchmark) && !STORM_PLATFORM.equals(benchmark)
                    && !STORM_VIRTUAL.equals(benchmark) && !FairShareReport.FLOOD.equals(benchmark) && spread > STEADY_SPREAD;
        }

        /**
         * @return whether threads hand permits to each other in this workload (every one but the
         *     single-threaded uncontended ones, the fair share's single-threaded cost and the
         *     footprint), so that it slows down when the cores are far apart
         */
        boolean crossesCores() {
            return !TRY.equals(benchmark) && !SUSPEND.equals(benchmark) && !FOOTPRINT.equals(benchmark)
                    && !benchmark.startsWith(FairShareReport.COST_CLASS);
        }

        /**
         * @return whether the cores were far apart ({@link #CROSS_CORE_LIMIT_NANOS}) around a measured
         *     iteration of a workload that {@linkplain #crossesCores() crosses them}
         */
        boolean farCores() {
            return crossesCores() && crossCore > CROSS_CORE_LIMIT_NANOS;
        }

        /**
         * @return why it is {@linkplain BenchmarkReport#toMeasureAgain measured again}, e.g.
         *     {@code "measured while the cores were far apart (455 ns)"} or {@code "unsteady (2.80x)"}
         *     (both if both; its probe and spread if neither)
         */
        String whyMeasuredAgain() {
            String far = String.format(Locale.ROOT, "measured while the cores were far apart (%.0f ns)", crossCore);
            String slowed = String.format(Locale.ROOT, "unsteady (%.2fx)", spread);
            if (farCores()) {
                return unsteady() ? far + " and " + slowed : far;
            }
            return unsteady() ? slowed : String.format(Locale.ROOT, "probe %.0f ns, spread %.2fx", crossCore, spread);
        }

        /** @return the share of acquisitions that suspended, as text, or "" if not counted */
        String suspendedShare() {
            if (acquisitions <= 0 || suspended < 0) {
                return "";
            }
            return String.format(Locale.ROOT, "%,d of %,d (%.1f%%)", suspended, acquisitions, 100.0 * suspended / acquisitions);
        }
    }

    /**
     * The lock storm's figures beyond the time per operation, from {@link ManyThreadsProfiler}.
     *
     * @param cpuPerOp the CPU time of the whole JVM per operation, ns, or {@code null} if the platform
     *                 does not say
     * @param cpus     the CPUs kept busy on average (CPU time over wall time), or NaN if not known
     * @param p99      the 99th percentile of the time from calling acquire to holding the permit, ns
     *                 (the mean over the iterations, with its error bar)
     * @param max      the longest such time in any measured iteration, ns
     * @param jdk      the JDK version the forks ran on
     */
    public record Storm(Estimate cpuPerOp, double cpus, Estimate p99, double max, String jdk) {
        /** @return the storm figures of a JMH run, or {@code null} if it has none (not a storm, or no profiler) */
        static Storm of(RunResult run) {
            var secondary = run.getSecondaryResults(); // JMH declares a raw Map<String, Result>
            Result<?> p99 = secondary.get(ManyThreadsProfiler.P99);
            Result<?> max = secondary.get(ManyThreadsProfiler.MAX);
            if (p99 == null || max == null) {
                return null;
            }
            Result<?> cpu = secondary.get(ManyThreadsProfiler.CPU);
            Result<?> cpus = secondary.get(ManyThreadsProfiler.CPUS);
            return new Storm(cpu == null ? null : new Estimate(cpu.getScore(), cpu.getScoreError()),
                    cpus == null ? Double.NaN : cpus.getScore(), new Estimate(p99.getScore(), p99.getScoreError()),
                    max.getScore(), run.getParams().getJdkVersion());
        }
    }

    /**
     * Where the virtual-thread storm ({@link #STORM_VIRTUAL}) runs: in this JVM and its forks
     * ({@code here}), in forks on another {@code java} binary, or nowhere. This module is compiled for
     * Java 17 and the rest of the suite runs on whatever JVM runs the report; virtual threads need
     * JDK 21+.
     *
     * @param here whether this JVM can run it (the forks use this JVM's java)
     * @param java the {@code java} binary its forks run on instead, or {@code null}
     * @param note for the console and results.md, where it ran or why not; empty if here
     */
    record VirtualPlan(boolean here, String java, String note) {
        /**
         * {@code --virtual-jvm none}: not run. {@code --virtual-jvm PATH}: on that java (or JDK home).
         * Otherwise here if this JVM has virtual threads, else on the newest JDK 21+ installed beside
         * this one ({@link VirtualThreads#javaBeside()}), else not run.
         *
         * @throws IllegalArgumentException if {@code --virtual-jvm} names no java binary
         */
        static VirtualPlan of(Settings settings) {
            String label = WORKLOADS.get(STORM_VIRTUAL);
            String current = "this JVM, JDK " + Runtime.version();
            if ("none".equals(settings.virtualJvm)) {
                return new VirtualPlan(false, null, label + ": not run (--virtual-jvm none)");
            }
            if (settings.virtualJvm != null) {
                Path binary = Path.of(settings.virtualJvm);
                if (Files.isDirectory(binary)) {
                    binary = binary.resolve("bin").resolve("java");
                }
                if (!Files.isExecutable(binary)) {
                    throw new IllegalArgumentException("--virtual-jvm " + settings.virtualJvm + ": no java binary there");
                }
                return new VirtualPlan(false, binary.toString(), label + ": run in forks on " + binary
                        + " (--virtual-jvm); everything else on " + current);
            }
            if (VirtualThreads.available()) {
                return new VirtualPlan(true, null, "");
            }
            java.util.Optional<Path> beside = VirtualThreads.javaBeside();
            if (beside.isPresent()) {
                return new VirtualPlan(false, beside.get().toString(), label + ": run in forks on " + beside.get()
                        + ", a JDK " + VirtualThreads.FIRST_FEATURE + "+ found beside this one (" + current
                        + ", has no virtual threads); everything else on " + current);
            }
            return new VirtualPlan(false, null, label + ": NOT RUN: " + current + " has no virtual threads and no JDK "
                    + VirtualThreads.FIRST_FEATURE + "+ was found beside it; pass --virtual-jvm /path/to/jdk/bin/java");
        }
    }

    /**
     * The outcome of a run: the measurements and the comparisons derived from them.
     *
     * @param machine   where and when
     * @param loadAfter the 1-minute load average at the end
     * @param seconds   how long the benchmarks took
     * @param smoke     whether this was a smoke run (figures meaningless)
     * @param waiters   the suspended coroutines of the footprint (0: not measured)
     * @param measured  benchmark → peer → measurement
     * @param load      the load of other processes while it measured
     * @param remeasured the attempts replaced by a later one because the cores were far apart or the
     *                  measurement unsteady, in order
     * @param notes     one-line notes on how the run was made (e.g. the JVM of the virtual-thread storm, or why it
     *                  did not run), printed with the lock storm
     */
    public record Report(Machine machine, double loadAfter, double seconds, boolean smoke, int waiters,
                         Map<String, Map<String, Measurement>> measured, OtherLoad.Summary load,
                         List<Measurement> remeasured, List<String> notes) {

        /** A report in which nothing was measured again. */
        public Report(Machine machine, double loadAfter, double seconds, boolean smoke, int waiters,
                      Map<String, Map<String, Measurement>> measured, OtherLoad.Summary load) {
            this(machine, loadAfter, seconds, smoke, waiters, measured, load, List.of());
        }

        /** A report without notes. */
        public Report(Machine machine, double loadAfter, double seconds, boolean smoke, int waiters,
                      Map<String, Map<String, Measurement>> measured, OtherLoad.Summary load, List<Measurement> remeasured) {
            this(machine, loadAfter, seconds, smoke, waiters, measured, load, remeasured, List.of());
        }

        /**
         * @return whether the figures must not be published: a full run during which other
         *     processes used more than {@value OtherLoad#THRESHOLD_CPUS} CPU in a measured iteration,
         *     or with an {@linkplain #unsteady() unsteady} measurement, or one taken while the cores
         *     were {@linkplain #farCores() far apart}
         */
        public boolean rejected() {
            return !smoke && (load.loaded() || !unsteady().isEmpty() || !farCores().isEmpty());
        }

        /** @return the measurements taken while the cores were far apart (see {@link Measurement#farCores()}) */
        public List<Measurement> farCores() {
            return measurements(Measurement::farCores);
        }

        /**
         * @return the measurements whose iterations disagree by more than {@link #STEADY_SPREAD}
         *     (see {@link Measurement#unsteady()}): a fork or a minute of the run was slowed by
         *     something the load guard cannot see, such as a stretch in which the cores were far apart
         */
        public List<Measurement> unsteady() {
            return measurements(Measurement::unsteady);
        }

        private List<Measurement> measurements(java.util.function.Predicate<Measurement> which) {
            List<Measurement> found = new ArrayList<>();
            for (Map<String, Measurement> byPeer : measured.values()) {
                for (Measurement m : byPeer.values()) {
                    if (which.test(m)) {
                        found.add(m);
                    }
                }
            }
            return found;
        }

        /** @return why this run is rejected, one line, or "" if it is not */
        String rejectionReason() {
            if (!rejected()) {
                return "";
            }
            List<String> why = new ArrayList<>();
            if (load.loaded()) {
                why.add(String.format(Locale.ROOT, "other processes used up to %.2f CPU while the benchmarks measured "
                        + "(limit %.2f CPU)", load.worst().otherCpus(), OtherLoad.THRESHOLD_CPUS));
            }
            List<Measurement> unsteady = unsteady();
            if (!unsteady.isEmpty()) {
                why.add(String.format(Locale.ROOT, "the iterations of %s disagree by more than %.1fx (slowest / fastest), "
                        + "so something outside the VM slowed part of the run", unsteady.stream()
                        .map(m -> String.format(Locale.ROOT, "%s %s (%.2fx)", m.benchmark(), m.peer(), m.spread()))
                        .collect(java.util.stream.Collectors.joining(", ")), STEADY_SPREAD));
            }
            List<Measurement> far = farCores();
            if (!far.isEmpty()) {
                why.add(String.format(Locale.ROOT, "a cache line took more than %.0f ns to go between the cores and back "
                        + "around %s: the host had placed the virtual CPUs far apart (400-500 ns), or a core was busy "
                        + "(microseconds)", CROSS_CORE_LIMIT_NANOS, far.stream()
                        .map(m -> String.format(Locale.ROOT, "%s %s (%.0f ns)", m.benchmark(), m.peer(), m.crossCore()))
                        .collect(java.util.stream.Collectors.joining(", "))));
            }
            return String.join("; and ", why);
        }

        /**
         * @param out         where a quiet run would have written
         * @param rejectedOut where this run was written
         * @return the loud message for the console
         */
        String rejection(Path out, Path rejectedOut) {
            StringBuilder s = new StringBuilder();
            String bar = "!".repeat(100);
            s.append(bar).append('\n');
            if (load.loaded()) {
                s.append(String.format(Locale.ROOT, "!!! BENCHMARK RUN REJECTED: other processes used more than %.2f CPU "
                        + "in %d of %d measured iterations.%n", OtherLoad.THRESHOLD_CPUS, load.flagged().size(), load.judged()));
                s.append("!!! Worst: ").append(load.worst().describe()).append('\n');
                int shown = Math.min(5, load.flagged().size());
                for (OtherLoad.Window w : load.flagged().subList(0, shown)) {
                    s.append("!!!   ").append(w.describe()).append('\n');
                }
                if (load.flagged().size() > shown) {
                    s.append("!!!   ... and ").append(load.flagged().size() - shown).append(" more, listed in results.md\n");
                }
            }
            for (Measurement m : unsteady()) {
                s.append(String.format(Locale.ROOT, "!!! BENCHMARK RUN REJECTED: %s %s is unsteady, its slowest measured "
                        + "iteration is %.2fx its fastest (limit %.1fx): part of the run was slowed by something the "
                        + "load guard cannot see (see README, Run it).%n", m.benchmark(), m.peer(), m.spread(), STEADY_SPREAD));
            }
            for (Measurement m : farCores()) {
                s.append(String.format(Locale.ROOT, "!!! BENCHMARK RUN REJECTED: %s %s ran while a cache line took %.0f ns "
                        + "to go between the cores and back (limit %.0f; close cores: 50-100): the host had placed the "
                        + "virtual CPUs far apart (400-500 ns), or a core was busy (microseconds); see README, Run it.%n", m.benchmark(), m.peer(), m.crossCore(),
                        CROSS_CORE_LIMIT_NANOS));
            }
            s.append("!!! ").append(out.toAbsolutePath().normalize()).append(" was NOT touched (nor the README).\n");
            s.append("!!! This run's results are in ").append(rejectedOut.toAbsolutePath().normalize())
                    .append("; re-run on a quiet machine.\n");
            s.append(bar);
            return s.toString();
        }

        /** @return the rows of time and throughput, with the targets */
        public List<Comparison> timeComparisons() {
            List<Comparison> rows = new ArrayList<>();
            time(rows, TRY, Peers.JUC_FAIR, Comparison.Target.atMost(1));
            time(rows, TRY, Peers.JUC_NONFAIR, Comparison.Target.atMost(1));
            time(rows, TRY, Peers.KOTLINX, Comparison.Target.atMost(1));
            time(rows, TRY, Peers.MONITOR, null);
            // Issue 13: a semaphore with a WaitListener, against the same without: the fast path
            // must stay within 5% (the listener is only called on the slow path).
            time(rows, WORKLOADS.get(TRY) + ", with a WaitListener", TRY, Peers.HANDOFF_OBSERVED, Peers.HANDOFF,
                    "handoff without", Comparison.Target.atMost(1.05));
            time(rows, SUSPEND, Peers.KOTLINX, Comparison.Target.atMost(1));
            for (String blocking : List.of(BLOCKING4, BLOCKING8)) {
                time(rows, blocking, Peers.JUC_FAIR, Comparison.Target.atLeast(2));
                time(rows, blocking, Peers.JUC_NONFAIR, null);
                time(rows, blocking, Peers.MONITOR, null);
            }
            time(rows, COROUTINES, Peers.KOTLINX, Comparison.Target.atMost(1));
            time(rows, COROUTINES, Peers.MONITOR, null);
            // Diagnostic, no target: ours suspended without kotlinx's cancellation machinery,
            // against kotlinx. The gap between this row and the one above is what public-API
            // cancellation costs per suspension (kotlinx pays it once per coroutine).
            time(rows, COROUTINES_UNCANCELLABLE, COROUTINES, Peers.HANDOFF_UNCANCELLABLE, Peers.KOTLINX, Peers.KOTLINX, null);
            // Diagnostics, no target: ours with a no-op WaitListener, and ours after a resize that
            // left the capacity as it was, each against plain ours. Above 1, the listener or the
            // past resize kept the semaphore off its lock-free paths.
            time(rows, COROUTINES_LISTENER, COROUTINES, Peers.HANDOFF_LISTENER, Peers.HANDOFF, PLAIN_HANDOFF, null);
            time(rows, COROUTINES_RESIZED, COROUTINES, Peers.HANDOFF_RESIZED, Peers.HANDOFF, PLAIN_HANDOFF, null);
            // No target: workload 3 with launched tasks, whose Jobs keep kotlinx's cheap single-handler
            // form, so the per-suspension Job handle of public-API cancellation costs one CAS each way.
            time(rows, COROUTINES_LAUNCHED, Peers.KOTLINX, null);
            time(rows, WEIGHTED, Peers.KOTLINX_MUTEX, Comparison.Target.atMost(0.5));
            time(rows, WEIGHTED, Peers.MONITOR, Comparison.Target.atMost(1));
            // Diagnostic, no target: the same split for the weighted workload, against its target peer.
            time(rows, WEIGHTED_UNCANCELLABLE, WEIGHTED, Peers.HANDOFF_UNCANCELLABLE, Peers.KOTLINX_MUTEX, Peers.KOTLINX_MUTEX,
                    null);
            time(rows, WEIGHTED_LISTENER, WEIGHTED, Peers.HANDOFF_LISTENER, Peers.HANDOFF, PLAIN_HANDOFF, null);
            time(rows, WEIGHTED_RESIZED, WEIGHTED, Peers.HANDOFF_RESIZED, Peers.HANDOFF, PLAIN_HANDOFF, null);
            time(rows, FUTURES, Peers.KOTLINX, null);
            return rows;
        }

        /** @return the rows of bytes (per operation, per waiter), with the targets */
        public List<Comparison> memoryComparisons() {
            List<Comparison> rows = new ArrayList<>();
            bytes(rows, COROUTINES, Peers.KOTLINX, Comparison.Target.atMost(1.5));
            bytes(rows, COROUTINES, Peers.MONITOR, null);
            bytes(rows, COROUTINES_LAUNCHED, Peers.KOTLINX, null);
            bytes(rows, WEIGHTED, Peers.KOTLINX_MUTEX, null);
            bytes(rows, WEIGHTED, Peers.MONITOR, null);
            bytes(rows, FUTURES, Peers.KOTLINX, null);
            time(rows, FOOTPRINT, Peers.KOTLINX, Comparison.Target.atMost(1));
            return rows;
        }

        /** @return our bytes per operation on the uncontended paths; the target is 0 */
        public Map<String, Estimate> uncontendedBytes() {
            Map<String, Estimate> checks = new LinkedHashMap<>();
            for (String benchmark : List.of(TRY, SUSPEND)) {
                Measurement ours = find(benchmark, Peers.HANDOFF);
                if (ours != null && ours.bytesPerOp() != null) {
                    checks.put(WORKLOADS.get(benchmark), ours.bytesPerOp());
                }
            }
            return checks;
        }

        private void time(List<Comparison> rows, String benchmark, String peer, Comparison.Target target) {
            time(rows, WORKLOADS.get(benchmark), benchmark, Peers.HANDOFF, peer, peer, target);
        }

        /**
         * Adds the row {@code label}: {@code oursPeer}'s time (or throughput) in {@code benchmark}
         * against {@code theirsPeer}'s, the latter named {@code peerLabel}; nothing if either is missing.
         */
        private void time(List<Comparison> rows, String label, String benchmark, String oursPeer, String theirsPeer,
                          String peerLabel, Comparison.Target target) {
            Measurement ours = find(benchmark, oursPeer);
            Measurement theirs = find(benchmark, theirsPeer);
            if (ours != null && theirs != null) {
                boolean throughput = ours.unit().startsWith("ops/");
                rows.add(new Comparison(label, ours.unit(), peerLabel, ours.score(), theirs.score(), target, !throughput));
            }
        }

        private void bytes(List<Comparison> rows, String benchmark, String peer, Comparison.Target target) {
            Measurement ours = find(benchmark, Peers.HANDOFF);
            Measurement theirs = find(benchmark, peer);
            if (ours != null && theirs != null && ours.bytesPerOp() != null && theirs.bytesPerOp() != null) {
                rows.add(new Comparison(WORKLOADS.get(benchmark), "B/op", peer, ours.bytesPerOp(), theirs.bytesPerOp(),
                        target, true));
            }
        }

        private Measurement find(String benchmark, String peer) {
            Map<String, Measurement> byPeer = measured.get(benchmark);
            return byPeer == null ? null : byPeer.get(peer);
        }

        /** @return the whole report as Markdown: stamp, ratios, checks, raw measurements */
        public String markdown() {
            StringBuilder md = new StringBuilder(header("jmh-results.json"));
            md.append("\nRatios ours / peer, same run; error bars are JMH's 99.9% confidence intervals ")
                    .append("(footprint: half the range of the runs). A verdict counts only when the whole error bar ")
                    .append("is on one side of the target.\n\n");
            md.append("| workload | metric | peer | handoff | peer value | handoff / peer | target | verdict |\n");
            md.append("|---|---|---|---:|---:|---:|---|---|\n");
            List<Comparison> all = new ArrayList<>(timeComparisons());
            all.addAll(memoryComparisons());
            for (Comparison c : all) {
                md.append(String.format(Locale.ROOT, "| %s | %s | %s | %s | %s | %s | %s | %s |%n",
                        c.workload(), c.metric(), c.peer(), c.ours(), c.theirs(), c.ratio(),
                        c.target() == null ? "" : c.target(), c.verdict()));
            }
            Map<String, Estimate> zero = uncontendedBytes();
            if (!zero.isEmpty()) {
                md.append("\nAllocation on the uncontended paths (target 0 B/op; below 1 B/op means none on the path):\n\n");
                for (Map.Entry<String, Estimate> e : zero.entrySet()) {
                    md.append(String.format(Locale.ROOT, "- %s: handoff %s B/op: %s%n", e.getKey(), e.getValue(),
                            e.getValue().value() < 1 ? "met" : "MISSED"));
                }
            }
            if (waiters > 0) {
                md.append(String.format(Locale.ROOT, "%nFootprint: %,d coroutines suspended in acquire(1) at once, "
                        + "live heap after full GCs in a fresh JVM (ParallelGC), per coroutine, the coroutine included; "
                        + "'baseline' is the same coroutine parked in awaitCancellation().%n", waiters));
            }
            md.append(stormMarkdown());
            md.append(measurementsMarkdown());
            return md.toString();
        }

        /**
         * @param json the name of the JMH results file beside it, which holds every attempt
         * @return the opening of results.md (and of the fair share's report): the rejection, if any,
         *     the machine, the load of other processes, the slowest cross-core round trip, what was
         *     measured again and why, and whether this was a smoke run
         */
        String header(String json) {
            StringBuilder md = new StringBuilder();
            if (rejected()) {
                md.append("**REJECTED RUN: ").append(rejectionReason()).append(". These figures are not published; ")
                        .append("see below.**\n\n");
            }
            md.append(String.format(Locale.ROOT, "Machine: %s. Load average %s at the start, %s at the end; %.0f s.%n",
                    machine.stamp(), fmtLoad(machine.loadBefore()), fmtLoad(loadAfter), seconds));
            md.append('\n').append(load.markdown());
            double slowest = measurements(m -> m.crossesCores() && !Double.isNaN(m.crossCore())).stream()
                    .mapToDouble(Measurement::crossCore).max().orElse(Double.NaN);
            if (!Double.isNaN(slowest)) {
                md.append(String.format(Locale.ROOT, "%nCross-core round trip of a cache line, probed after every measured "
                        + "iteration of the workloads where threads hand permits to each other: %.0f ns at the slowest "
                        + "(limit %.0f; close cores 50-100, far ones 400-500).%n", slowest, CROSS_CORE_LIMIT_NANOS));
            }
            if (!remeasured.isEmpty()) {
                md.append("\nMeasured again because the cores were far apart, or the measurement unsteady, during an earlier "
                        + "attempt (the figures below are the last attempt's; every attempt's raw data is in ").append(json)
                        .append("): ")
                        .append(remeasured.stream().map(m -> String.format(Locale.ROOT, "%s %s: was %s %s, %s",
                                WORKLOADS.getOrDefault(m.benchmark(), m.benchmark()), m.peer(), m.score(), m.unit(),
                                m.whyMeasuredAgain())).collect(java.util.stream.Collectors.joining("; ")))
                        .append(".\n");
            }
            if (smoke) {
                md.append("\n**Smoke run: tiny iterations in one JVM, the figures mean nothing")
                        .append(load.loaded() ? "; the load limit is not enforced." : ".").append("**\n");
            }
            return md.toString();
        }

        /** @return the closing table of results.md (and of the fair share's report): every measurement as JMH gave it */
        String measurementsMarkdown() {
            StringBuilder md = new StringBuilder();
            md.append("\nAll measurements:\n\n");
            md.append("| workload | peer | score | B/op (-prof gc) | acquisitions that suspended | slowest / fastest iteration "
                    + "| slowest cross-core round trip |\n");
            md.append("|---|---|---:|---:|---|---:|---:|\n");
            for (Map.Entry<String, Map<String, Measurement>> b : measured.entrySet()) {
                for (Measurement m : b.getValue().values()) {
                    md.append(String.format(Locale.ROOT, "| %s | %s | %s %s | %s | %s | %s | %s |%n",
                            WORKLOADS.getOrDefault(m.benchmark(), m.benchmark()), m.peer(), m.score(), m.unit(),
                            m.bytesPerOp() == null ? "" : m.bytesPerOp().toString(), m.suspendedShare(),
                            Double.isNaN(m.spread()) ? "" : String.format(Locale.ROOT, "%.2f%s", m.spread(),
                                    m.unsteady() ? " **unsteady**" : ""),
                            Double.isNaN(m.crossCore()) ? "" : String.format(Locale.ROOT, "%.0f ns%s", m.crossCore(),
                                    m.farCores() ? " **far**" : "")));
                }
            }
            return md.toString();
        }

        /** @return the lock storm's measurements (workload 8): 64 platform threads, then 10,000 virtual, peers in run order */
        public List<Measurement> stormRows() {
            List<Measurement> rows = new ArrayList<>();
            for (String storm : List.of(STORM_PLATFORM, STORM_VIRTUAL)) {
                Map<String, Measurement> byPeer = measured.get(storm);
                if (byPeer != null) {
                    rows.addAll(byPeer.values());
                }
            }
            return rows;
        }

        /** @return the lock storm's section of results.md (empty if it neither ran nor was skipped with a note) */
        private String stormMarkdown() {
            List<Measurement> rows = stormRows();
            if (rows.isEmpty() && notes.isEmpty()) {
                return "";
            }
            StringBuilder md = new StringBuilder();
            md.append("\nLock storm (workload 8): a semaphore of 4 permits; every thread does rounds of acquire(1), a ")
                    .append("little CPU work and a yield while holding the permit, release(1) (64 platform threads of ")
                    .append(String.format(Locale.ROOT, "%,d rounds, or %,d virtual threads of %,d). ", ManyThreadsBenchmark.PLATFORM_ROUNDS,
                            ManyThreadsBenchmark.VIRTUAL_THREADS, ManyThreadsBenchmark.VIRTUAL_ROUNDS))
                    .append("Per operation: wall time, and CPU time of the whole JVM (getProcessCpuTime, in 10 ms ticks on ")
                    .append("Linux); the CPUs kept busy; the time from calling acquire to holding the permit, its 99th ")
                    .append("percentile over all operations (mean of the iterations; buckets of 12.5%) and its maximum ")
                    .append("(over all iterations). No targets: CPU beyond the work, and the tail, are what to compare.\n");
            for (String note : notes) {
                md.append("\n").append(note).append(".\n");
            }
            if (!rows.isEmpty()) {
                md.append("\n| threads | peer | JDK | time per op | ops/s | CPU per op | CPUs busy | acquire to granted, p99 | max |\n");
                md.append("|---|---|---|---:|---:|---:|---:|---:|---:|\n");
                for (Measurement m : rows) {
                    Storm st = m.storm();
                    boolean nanos = m.unit().equals("ns/op");
                    md.append(String.format(Locale.ROOT, "| %s | %s | %s | %s %s | %s | %s | %s | %s | %s |%n",
                            m.benchmark().equals(STORM_PLATFORM) ? "64 platform" : "10,000 virtual", m.peer(),
                            st == null ? "" : st.jdk(), m.score(), m.unit(),
                            nanos && m.score().value() > 0 ? String.format(Locale.ROOT, "%,.0f", 1e9 / m.score().value()) : "",
                            st == null || st.cpuPerOp() == null ? "" : st.cpuPerOp() + " ns",
                            st == null || Double.isNaN(st.cpus()) ? "" : String.format(Locale.ROOT, "%.2f", st.cpus()),
                            st == null ? "" : duration(st.p99()), st == null ? "" : duration(new Estimate(st.max(), 0))));
                }
            }
            return md.toString();
        }

        /** @return {@code nanos} in ns, µs, ms or s, e.g. {@code "41.7 ± 2.1 ms"} */
        static String duration(Estimate nanos) {
            double v = Math.abs(nanos.value());
            double scale = v < 1e3 ? 1 : v < 1e6 ? 1e3 : v < 1e9 ? 1e6 : 1e9;
            String unit = scale == 1 ? "ns" : scale == 1e3 ? "µs" : scale == 1e6 ? "ms" : "s";
            return new Estimate(nanos.value() / scale, nanos.error() / scale) + " " + unit;
        }

        /** @return the report as tab-separated values, read back by {@link #parseTsv} ({@code --redraw}) */
        public String tsv() {
            StringBuilder t = new StringBuilder();
            t.append(String.join("\t", "run", machine.cpu(), Integer.toString(machine.cores()), machine.os(), machine.jdk(),
                    machine.date().toString(), Double.toString(machine.loadBefore()), Double.toString(loadAfter),
                    Double.toString(seconds), Boolean.toString(smoke), Integer.toString(waiters))).append('\n');
            for (Map<String, Measurement> byPeer : measured.values()) {
                for (Measurement m : byPeer.values()) {
                    t.append(tsvFields(m)).append('\n');
                }
            }
            for (Measurement m : remeasured) {
                t.append("remeasured\t").append(tsvFields(m)).append('\n');
            }
            for (String note : notes) {
                t.append("note\t").append(note.replace('\t', ' ').replace('\n', ' ')).append('\n');
            }
            t.append(load.tsv());
            return t.toString();
        }

        private static String tsvFields(Measurement m) {
            Estimate b = m.bytesPerOp();
            return String.join("\t", m.benchmark(), m.peer(), Double.toString(m.score().value()),
                    Double.toString(m.score().error()), m.unit(),
                    b == null ? "" : Double.toString(b.value()), b == null ? "" : Double.toString(b.error()),
                    Long.toString(m.acquisitions()), Long.toString(m.suspended()), Double.toString(m.spread()),
                    Double.toString(m.crossCore()), stormFields(m.storm()));
        }

        private static String stormFields(Storm s) {
            if (s == null) {
                return String.join("\t", "", "", "", "", "", "", "");
            }
            return String.join("\t", s.cpuPerOp() == null ? "" : Double.toString(s.cpuPerOp().value()),
                    s.cpuPerOp() == null ? "" : Double.toString(s.cpuPerOp().error()), Double.toString(s.cpus()),
                    Double.toString(s.p99().value()), Double.toString(s.p99().error()), Double.toString(s.max()), s.jdk());
        }

        /** @return the storm of a results.tsv line (fields 11-17), or null: an older file, or not a storm */
        private static Storm parseStorm(String[] f) {
            if (f.length < 18 || f[14].isEmpty()) {
                return null;
            }
            return new Storm(f[11].isEmpty() ? null : new Estimate(Double.parseDouble(f[11]), Double.parseDouble(f[12])),
                    Double.parseDouble(f[13]), new Estimate(Double.parseDouble(f[14]), Double.parseDouble(f[15])),
                    Double.parseDouble(f[16]), f[17]);
        }

        /**
         * @param tsv what {@link #tsv()} wrote
         * @return the report
         * @throws IllegalArgumentException if the text is not such a report
         */
        public static Report parseTsv(String tsv) {
            String[] lines = tsv.split("\n");
            String[] run = lines[0].split("\t", -1);
            if (run.length != 11 || !run[0].equals("run")) {
                throw new IllegalArgumentException("not a results.tsv: " + lines[0]);
            }
            Machine machine = new Machine(run[1], Integer.parseInt(run[2]), run[3], run[4],
                    java.time.LocalDate.parse(run[5]), Double.parseDouble(run[6]));
            Map<String, Map<String, Measurement>> measured = new LinkedHashMap<>();
            List<String[]> loadLines = new ArrayList<>();
            List<Measurement> remeasured = new ArrayList<>();
            List<String> notes = new ArrayList<>();
            for (int i = 1; i < lines.length; i++) {
                String[] f = lines[i].split("\t", -1);
                if (f[0].equals("load") || f[0].equals("loadwindow")) {
                    loadLines.add(f);
                    continue;
                }
                if (f[0].equals("note")) {
                    notes.add(f[1]);
                    continue;
                }
                boolean replaced = f[0].equals("remeasured");
                if (replaced) {
                    f = Arrays.copyOfRange(f, 1, f.length);
                }
                Estimate bytes = f[5].isEmpty() ? null : new Estimate(Double.parseDouble(f[5]), Double.parseDouble(f[6]));
                Measurement m = new Measurement(f[0], f[1], new Estimate(Double.parseDouble(f[2]), Double.parseDouble(f[3])),
                        f[4], bytes, Long.parseLong(f[7]), Long.parseLong(f[8]),
                        f.length > 9 ? Double.parseDouble(f[9]) : Double.NaN, // older files: not known
                        f.length > 10 ? Double.parseDouble(f[10]) : Double.NaN, parseStorm(f));
                if (replaced) {
                    remeasured.add(m);
                } else {
                    measured.computeIfAbsent(m.benchmark(), k -> new LinkedHashMap<>()).put(m.peer(), m);
                }
            }
            return new Report(machine, Double.parseDouble(run[7]), Double.parseDouble(run[8]),
                    Boolean.parseBoolean(run[9]), Integer.parseInt(run[10]), measured,
                    OtherLoad.Summary.parseTsv(loadLines), remeasured, notes);
        }

        private static String fmtLoad(double load) {
            return Double.isNaN(load) ? "n/a" : String.format(Locale.ROOT, "%.1f", load);
        }
    }

    /** What to run and where to write. */
    static final class Settings {
        /** The usage lines of {@code --retries} and {@code --close-wait}, which both reports take. */
        static final String RETRY_OPTIONS = String.join("\n",
                "  --retries N    measure again, up to N times, what was measured while the cores were far apart or",
                "                 came out unsteady, each time once the cores have been close for three probes in a row,",
                "                 5 s apart (default 3)",
                "  --close-wait S wait at most S seconds for close cores before such an attempt (default 600)");
        static final String USAGE = String.join("\n",
                "usage: java -jar benchmarks.jar [--smoke] [--out DIR] [--rejected-out DIR] [--waiters N] [--include REGEX] [--forks N]",
                "       java -jar benchmarks.jar interleave [--blocks N] [--peers baseline,peer,...]   (workload 3 in alternating blocks, one JVM)",
                "       java -jar benchmarks.jar fairshare [--smoke] [--out DIR] ...   (the fair share's benchmarks alone; "
                        + "writes fair-share.md; --help there)",
                "       java -jar benchmarks.jar jmh <JMH arguments>     (JMH's own command line, e.g. -prof stack)",
                "  --smoke        every benchmark once with tiny iterations in this JVM (seconds; figures meaningless)",
                "  --out DIR      where results.md, jmh-results.json and benchmarks.png go (default docs/benchmarks)",
                "  --rejected-out DIR  where they go instead, with exit status 3, if other processes used more than",
                "                 0.25 CPU during a measured iteration (default benchmarks/target/rejected-run; not for --smoke)",
                "  --waiters N    suspended coroutines for the footprint (default 1000000, smoke 10000; 0 skips it)",
                "  --include RE   JMH include pattern (default: every benchmark of this module)",
                "  --forks N      override the forks of every benchmark (default: the annotations, 2)",
                RETRY_OPTIONS,
                "  --virtual-jvm P the java binary (or JDK home) whose forks run the 10,000-virtual-thread storm; 'none' skips it",
                "                 (default: this JVM if it has virtual threads, else the newest JDK 21+ beside it, else skipped)",
                "  --redraw       rewrite results.md and benchmarks.png in --out from its results.tsv, run nothing");

        boolean smoke;
        boolean redraw;
        Path out = Path.of("docs", "benchmarks");
        Path rejectedOut = Path.of("benchmarks", "target", "rejected-run");
        int waiters = -1;
        /**
         * Every comparison benchmark of the report; the fair share's (FairShareBenchmark and
         * FairShareFloodBenchmark, with their own smoke tests) are run on their own, by
         * {@link FairShareReport}, not in this report.
         */
        String include = "dev\\.handoff\\.benchmarks\\.(?!FairShare).*Benchmark\\..*";
        int forks = -1;
        int retries = 3;
        long closeWaitSeconds = 600;
        /** {@code --virtual-jvm}: a java binary or JDK home for the virtual-thread storm, "none", or null (find one). */
        String virtualJvm;

        /**
         * @return the settings, or {@code null} for {@code --help}
         * @throws IllegalArgumentException on an unknown or incomplete argument
         */
        static Settings parse(String... args) {
            return parse(new Settings(), args);
        }

        /**
         * @param s    the defaults, which the arguments override (changed and returned)
         * @param args the command line
         * @return {@code s}, or {@code null} for {@code --help}
         * @throws IllegalArgumentException on an unknown or incomplete argument
         */
        static Settings parse(Settings s, String... args) {
            for (int i = 0; i < args.length; i++) {
                String arg = args[i];
                switch (arg) {
                    case "--help", "-h" -> {
                        return null;
                    }
                    case "--smoke" -> s.smoke = true;
                    case "--redraw" -> s.redraw = true;
                    case "--out" -> s.out = Path.of(value(args, ++i, arg));
                    case "--rejected-out" -> s.rejectedOut = Path.of(value(args, ++i, arg));
                    case "--waiters" -> s.waiters = Integer.parseInt(value(args, ++i, arg));
                    case "--include" -> s.include = value(args, ++i, arg);
                    case "--forks" -> s.forks = Integer.parseInt(value(args, ++i, arg));
                    case "--retries" -> s.retries = (int) atLeastZero(arg, Integer.parseInt(value(args, ++i, arg)));
                    case "--close-wait" -> s.closeWaitSeconds = atLeastZero(arg, Long.parseLong(value(args, ++i, arg)));
                    case "--virtual-jvm" -> s.virtualJvm = value(args, ++i, arg);
                    default -> throw new IllegalArgumentException("unknown argument '" + arg + "'\n" + USAGE);
                }
            }
            if (s.waiters < 0) {
                s.waiters = s.smoke ? 10_000 : 1_000_000;
            }
            return s;
        }

        private static long atLeastZero(String name, long value) {
            if (value < 0) {
                throw new IllegalArgumentException(name + " " + value + ": must be 0 or more\n" + USAGE);
            }
            return value;
        }

        private static String value(String[] args, int i, String name) {
            if (i >= args.length) {
                throw new IllegalArgumentException(name + " needs a value\n" + USAGE);
            }
            return args[i];
        }
    }
}
