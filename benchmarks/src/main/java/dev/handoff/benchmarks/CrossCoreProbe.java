// SPDX-License-Identifier: Apache-2.0
package dev.handoff.benchmarks;

import java.util.Collection;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;
import org.openjdk.jmh.infra.BenchmarkParams;
import org.openjdk.jmh.infra.IterationParams;
import org.openjdk.jmh.profile.InternalProfiler;
import org.openjdk.jmh.results.AggregationPolicy;
import org.openjdk.jmh.results.IterationResult;
import org.openjdk.jmh.results.Result;
import org.openjdk.jmh.results.ScalarResult;

/**
 * Measures how long a cache line takes to go from one core to another and back: two threads hand
 * a counter to each other, each spinning until the other has written it. On a quiet machine with
 * its cores close together, a round trip takes 50-100 ns. On the shared VM the published figures
 * come from, it sometimes takes 400-500 ns for minutes at a time, with nothing else running (the
 * host places the two virtual CPUs far apart, most likely), and then every workload in which
 * threads hand permits to each other runs 2-3 times slower, kotlinx's as much as ours. The load
 * guard cannot see that; this probe can.
 *
 * <p>As a JMH profiler ({@code -prof dev.handoff.benchmarks.CrossCoreProbe}; the full run adds it),
 * it probes right after every iteration, outside the timed part, in the benchmark's own JVM, and
 * reports {@value #RESULT} in ns: the slowest probe of the measurement (policy MAX).
 *
 * <pre>{@code
 * double ns = CrossCoreProbe.roundTripNanos();   // about 60 on a quiet, close pair of cores
 * }</pre>
 */
public final class CrossCoreProbe implements InternalProfiler {
    /** The name of the secondary result. */
    public static final String RESULT = "crosscore.roundtrip";

    /** Round trips per batch. */
    private static final int ROUND_TRIPS = 1_000;
    /**
     * Batches per probe, a millisecond apart; the fastest counts, so that a partner preempted by
     * threads of the benchmark that have not gone idle yet does not make a probe slow.
     */
    private static final int BATCHES = 5;
    /**
     * How long a batch may wait for its partner thread, in ns, before it gives up; it then reports
     * a lower bound of the round trip (far above any limit), never "unknown".
     */
    private static final long PATIENCE_NANOS = 200_000_000L;

    /** For JMH, which makes profilers by reflection. */
    public CrossCoreProbe() {}

    /**
     * @return the fastest of a few batches of round trips, in ns per round trip; a batch whose
     *     partner thread did not keep up within the patience (the machine is overloaded) counts as
     *     the time it waited per round trip completed, at least 200,000 ns: an overloaded machine
     *     counts as far (it used to give NaN, which the report took for close)
     */
    public static double roundTripNanos() {
        double best = Double.POSITIVE_INFINITY;
        for (int b = 0; b < BATCHES; b++) {
            if (b > 0) {
                try {
                    Thread.sleep(1);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    break;
                }
            }
            best = Math.min(best, batch());
        }
        return best;
    }

    /** One batch: this thread writes odd values, the partner answers with the next even one. */
    private static double batch() {
        AtomicLong line = new AtomicLong();
        long begun = System.nanoTime();
        long deadline = begun + PATIENCE_NANOS;
        Thread partner = new Thread(
                () -> {
                    for (long i = 0; i < ROUND_TRIPS; i++) {
                        long expected = 2 * i + 1;
                        while (line.get() != expected) {
                            if (line.get() < 0) {
                                return; // the prober gave up
                            }
                            Thread.onSpinWait();
                        }
                        line.set(expected + 1);
                    }
                },
                "cross-core-probe");
        partner.setDaemon(true);
        partner.start();
        long start = 0;
        try {
            for (long i = 0; i < ROUND_TRIPS; i++) {
                if (i == 1) {
                    start = System.nanoTime(); // the first trip includes the partner's start
                }
                line.set(2 * i + 1);
                while (line.get() != 2 * i + 2) {
                    long now = System.nanoTime();
                    if (now > deadline) {
                        line.set(-1);
                        return (now - begun) / (double) Math.max(1, i); // at least this slow
                    }
                    Thread.onSpinWait();
                }
            }
            return (System.nanoTime() - start) / (double) (ROUND_TRIPS - 1);
        } finally {
            try {
                partner.join(PATIENCE_NANOS / 1_000_000);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
    }

    @Override
    public void beforeIteration(BenchmarkParams benchmarkParams, IterationParams iterationParams) {
        // The probe runs after the iteration only: before it, it would delay the timed part's start.
    }

    @Override
    public Collection<? extends Result> afterIteration(
            BenchmarkParams benchmarkParams, IterationParams iterationParams, IterationResult result) {
        return List.of(new ScalarResult(RESULT, roundTripNanos(), "ns", AggregationPolicy.MAX));
    }

    @Override
    public String getDescription() {
        return "cross-core cache-line round trip after each iteration, ns (the slowest of the measurement)";
    }
}
