// SPDX-License-Identifier: Apache-2.0
package dev.handoff.benchmarks;

import java.util.Locale;
import org.openjdk.jmh.results.BenchmarkResult;
import org.openjdk.jmh.results.IterationResult;
import org.openjdk.jmh.results.Result;
import org.openjdk.jmh.results.RunResult;

/**
 * One benchmark for one peer, as both reports keep it (from JMH's result, or from results.tsv),
 * and how it is judged: {@linkplain #unsteady() unsteady} when its iterations disagree, taken
 * while the cores were {@linkplain #farCores() far apart}. The limits of both judgements live
 * here, beside the only code that applies them; a report that finds such a measurement measures
 * it again ({@link Remeasurement}) or is rejected ({@link Report#rejected()}).
 *
 * @param benchmark    "Class.method", or {@link BenchmarkReport#FOOTPRINT}
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
public record Measurement(
        String benchmark,
        String peer,
        Estimate score,
        String unit,
        Estimate bytesPerOp,
        long acquisitions,
        long suspended,
        double spread,
        double crossCore,
        Storm storm) {
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

    /** A measurement outside the lock storm. */
    public Measurement(
            String benchmark,
            String peer,
            Estimate score,
            String unit,
            Estimate bytesPerOp,
            long acquisitions,
            long suspended,
            double spread,
            double crossCore) {
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
        return new Measurement(
                benchmark,
                run.getParams().getParam("peer"),
                new Estimate(primary.getScore(), primary.getScoreError()),
                primary.getScoreUnit(),
                alloc == null ? null : new Estimate(alloc.getScore(), alloc.getScoreError()),
                acquisitions == null ? -1 : Math.round(acquisitions.getScore()),
                suspended == null ? -1 : Math.round(suspended.getScore()),
                slowestOverFastest(run),
                crossCore == null ? Double.NaN : crossCore.getScore(),
                Storm.of(run));
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
        return !BenchmarkReport.BLOCKING4.equals(benchmark)
                && !BenchmarkReport.BLOCKING8.equals(benchmark)
                && !BenchmarkReport.STORM_PLATFORM.equals(benchmark)
                && !BenchmarkReport.STORM_VIRTUAL.equals(benchmark)
                && !FairShareReport.FLOOD.equals(benchmark)
                && spread > STEADY_SPREAD;
    }

    /**
     * @return whether threads hand permits to each other in this workload (every one but the
     *     single-threaded uncontended ones, the fair share's single-threaded cost and the
     *     footprint), so that it slows down when the cores are far apart
     */
    boolean crossesCores() {
        return !BenchmarkReport.TRY.equals(benchmark)
                && !BenchmarkReport.SUSPEND.equals(benchmark)
                && !BenchmarkReport.FOOTPRINT.equals(benchmark)
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
     * @return why it is {@linkplain Remeasurement#toMeasureAgain measured again}, e.g.
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
        return String.format(
                Locale.ROOT, "%,d of %,d (%.1f%%)", suspended, acquisitions, 100.0 * suspended / acquisitions);
    }
}
