// SPDX-License-Identifier: Apache-2.0
package dev.handoff.benchmarks;

import java.util.Collection;
import java.util.List;
import org.openjdk.jmh.infra.BenchmarkParams;
import org.openjdk.jmh.infra.IterationParams;
import org.openjdk.jmh.profile.InternalProfiler;
import org.openjdk.jmh.results.AggregationPolicy;
import org.openjdk.jmh.results.IterationResult;
import org.openjdk.jmh.results.Result;
import org.openjdk.jmh.results.ScalarResult;

/**
 * The secondary results of {@link FairShareFloodBenchmark}, per measured iteration: how many noisy
 * grants a polite request waited behind (its median {@value #BEHIND_P50} and 99th percentile
 * {@value #BEHIND_P99}, averaged over the iterations; the most {@value #BEHIND_MAX}, the largest of
 * any iteration) and the noisy tenant's grants per second ({@value #NOISY_RATE}). Counted, not
 * timed. The fair-share report adds it to its run; with plain JMH, add
 * {@code -prof dev.handoff.benchmarks.FairShareFloodProfiler}. Iterations in which no flood ran
 * (other benchmarks) report nothing.
 *
 * <p>A profiler rather than {@code @AuxCounters}, which JMH does not support in
 * {@code Mode.SampleTime} and which would add percentiles up. It runs in the benchmark's own JVM;
 * the benchmark hands it each iteration's figures through {@link #record} after the timed part.
 *
 * <pre>{@code
 * ./bench.sh jmh -prof dev.handoff.benchmarks.FairShareFloodProfiler FairShareFloodBenchmark
 * }</pre>
 */
public final class FairShareFloodProfiler implements InternalProfiler {
    /** The median of the noisy grants a polite request waited behind: {@code flood.behind.p50}. */
    public static final String BEHIND_P50 = "flood.behind.p50";
    /** Their 99th percentile: {@code flood.behind.p99}. */
    public static final String BEHIND_P99 = "flood.behind.p99";
    /** Their maximum: {@code flood.behind.max}. */
    public static final String BEHIND_MAX = "flood.behind.max";
    /** The noisy tenant's grants per second: {@code flood.noisy}. */
    public static final String NOISY_RATE = "flood.noisy";

    /** This iteration's figures, or null; guarded by the class. */
    private static FairShareFloodBenchmark.Flood current;

    /** For JMH, which makes profilers by reflection. */
    public FairShareFloodProfiler() {}

    /**
     * Keeps one iteration's figures for {@link #afterIteration}. Called by the benchmark after the timed part.
     *
     * @param flood the iteration's figures
     */
    static synchronized void record(FairShareFloodBenchmark.Flood flood) {
        current = flood;
    }

    @Override
    public void beforeIteration(BenchmarkParams benchmarkParams, IterationParams iterationParams) {
        record(null);
    }

    @Override
    public Collection<? extends Result> afterIteration(
            BenchmarkParams benchmarkParams, IterationParams iterationParams, IterationResult result) {
        FairShareFloodBenchmark.Flood flood;
        synchronized (FairShareFloodProfiler.class) {
            flood = current;
        }
        if (flood == null || flood.requests() == 0) {
            return List.of();
        }
        return List.of(
                new ScalarResult(BEHIND_P50, flood.behindP50(), "grants", AggregationPolicy.AVG),
                new ScalarResult(BEHIND_P99, flood.behindP99(), "grants", AggregationPolicy.AVG),
                new ScalarResult(BEHIND_MAX, flood.behindMax(), "grants", AggregationPolicy.MAX),
                new ScalarResult(NOISY_RATE, flood.noisyPerSecond(), "grants/s", AggregationPolicy.AVG));
    }

    @Override
    public String getDescription() {
        return "FairShareFloodBenchmark's noisy grants per polite request (p50, p99, max) and noisy grants per second";
    }
}
