// SPDX-License-Identifier: Apache-2.0
package dev.handoff.benchmarks;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;
import java.util.function.DoubleSupplier;
import java.util.function.LongSupplier;
import org.openjdk.jmh.results.RunResult;
import org.openjdk.jmh.runner.RunnerException;

/**
 * Measuring again what the host slowed: a measurement taken while the cores were far apart, or
 * that came out unsteady ({@link Measurement#farCores()}, {@link Measurement#unsteady()}), is
 * taken again, up to {@code --retries} times, each time once the cores have been close for a
 * while ({@link #awaitCloseCores}). The host's slow stretches last minutes, so an attempt that
 * starts at once lands in the same one. Both reports measure again through here; each says how to
 * select one configuration and how to record a result ({@link Rerun}). The rounds, the wait and
 * the attempt are apart from JMH ({@link #measureAgain(int, Map, BooleanSupplier, Runnable,
 * Attempt)}, {@link #awaitCloseCores(long, LongSupplier, DoubleSupplier, Pause)}) so that the
 * tests drive them with their own clock and probe.
 */
final class Remeasurement {
    private Remeasurement() {}

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
    static List<Measurement> measureAgain(
            Settings settings,
            Map<String, Map<String, Measurement>> measured,
            Path staging,
            List<Path> jsons,
            LoadGuard guard,
            Rerun rerun)
            throws RunnerException {
        return measureAgain(
                settings.retries, measured, guard::loaded, () -> awaitCloseCores(settings.closeWaitSeconds), old -> {
                    Path json = staging.resolve("jmh-results-" + jsons.size() + ".json");
                    jsons.add(json);
                    String only =
                            "^" + java.util.regex.Pattern.quote("dev.handoff.benchmarks." + old.benchmark()) + "$";
                    List<Measurement> again = new ArrayList<>();
                    for (RunResult result :
                            JmhRuns.runJmh(settings, only, null, rerun.params(old), rerun.jvm(old), json, guard)) {
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
    static List<Measurement> measureAgain(
            int retries,
            Map<String, Map<String, Measurement>> measured,
            BooleanSupplier loaded,
            Runnable awaitClose,
            Attempt attempt)
            throws RunnerException {
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
                System.out.printf(
                        Locale.ROOT,
                        "# %s %s was %s: again, attempt %d of %d%n",
                        old.benchmark(),
                        old.peer(),
                        old.whyMeasuredAgain(),
                        round + 1,
                        retries + 1);
                awaitClose.run();
                for (Measurement m : attempt.measure(old)) {
                    BenchmarkReport.put(measured, m);
                }
                replaced.add(old);
            }
        }
        return replaced;
    }

    /**
     * @return the measurements to take again: those taken while the cores were far apart, or whose
     *     iterations disagree by more than {@link Measurement#STEADY_SPREAD} (the blocking workloads
     *     excepted, as in {@link Measurement#unsteady()}), in the order of the run
     */
    static List<Measurement> toMeasureAgain(Map<String, Map<String, Measurement>> measured) {
        List<Measurement> slowed = new ArrayList<>();
        measured.values()
                .forEach(byPeer -> byPeer.values().stream()
                        .filter(m -> m.farCores() || m.unsteady())
                        .forEach(slowed::add));
        return slowed;
    }

    /** How many probes in a row, {@link #CLOSE_PROBE_INTERVAL_MILLIS} apart, must find the cores close. */
    static final int CLOSE_PROBES = 3;

    static final long CLOSE_PROBE_INTERVAL_MILLIS = 5_000;

    /**
     * Waits until {@link #CLOSE_PROBES} cross-core probes in a row, {@link #CLOSE_PROBE_INTERVAL_MILLIS}
     * apart, found the cores close ({@link Measurement#CROSS_CORE_LIMIT_NANOS} or less), or until
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
            closeInARow = ns <= Measurement.CROSS_CORE_LIMIT_NANOS ? closeInARow + 1 : 0; // a busy core probes far
            long now = clock.getAsLong();
            if (closeInARow >= CLOSE_PROBES || now >= deadline) {
                long waited = TimeUnit.NANOSECONDS.toSeconds(now - start);
                if (closeInARow < CLOSE_PROBES) {
                    System.out.printf(
                            Locale.ROOT,
                            "# the cores were not close %d probes in a row within %d s (last probe %.0f ns): "
                                    + "measuring anyway%n",
                            CLOSE_PROBES,
                            waited,
                            ns);
                } else if (told) {
                    System.out.printf(Locale.ROOT, "# the cores are close again (%.0f ns) after %d s%n", ns, waited);
                }
                return waited;
            }
            if (closeInARow == 0 && !told) {
                System.out.printf(
                        Locale.ROOT,
                        "# waiting for the cores to be close (now %.0f ns), at most %d s%n",
                        ns,
                        maxSeconds);
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
}
