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
 * The secondary results of {@link ManyThreadsBenchmark}, per measured iteration: CPU time per
 * operation, the CPUs kept busy, and the p99 and the maximum of the time from calling
 * {@code acquire(1)} to holding the permit. The report adds it to every run; with plain JMH, add
 * {@code -prof dev.handoff.benchmarks.ManyThreadsProfiler}. Without it the benchmark still reports
 * its time per operation.
 *
 * <p>Why a profiler and not {@code @AuxCounters}: JMH adds an {@code EVENTS} counter up over the
 * iterations (and forks) of a measurement, which is right for counts but not for a maximum or a
 * percentile. A profiler's results carry their own policy: {@value #CPU}, {@value #CPUS} and
 * {@value #P99} are averaged over the iterations (with JMH's error bars), {@value #MAX} is the
 * largest of any iteration. The profiler runs in the benchmark's own JVM (as every JMH
 * {@link InternalProfiler} does); the benchmark hands it each storm's figures through
 * {@link #record}, outside the timed part. Iterations in which no storm ran (other benchmarks)
 * report nothing.
 *
 * <p>Latencies are counted in a log-linear histogram ({@link #bucket(long)}): exact below 16 ns,
 * then 8 buckets per power of two, so a percentile is at most 12.5% above the true value (the
 * histogram gives a bucket's highest value, never more than the exact maximum).
 *
 * <pre>{@code
 * java -jar benchmarks.jar jmh -prof dev.handoff.benchmarks.ManyThreadsProfiler ManyThreadsBenchmark
 * }</pre>
 */
public final class ManyThreadsProfiler implements InternalProfiler {
    /** CPU time of the whole JVM per operation, in ns: {@code storm.cpu}. */
    public static final String CPU = "storm.cpu";
    /** CPU time over wall time, in CPUs (at most the machine's cores): {@code storm.cpus}. */
    public static final String CPUS = "storm.cpus";
    /** The 99th percentile of the time from calling acquire to holding the permit, in ns: {@code storm.p99}. */
    public static final String P99 = "storm.p99";
    /** The longest time from calling acquire to holding the permit, in ns: {@code storm.max}. */
    public static final String MAX = "storm.max";

    /** Exact buckets for 0..15 ns. */
    private static final int EXACT = 16;
    /** Sub-buckets per power of two (3 bits after the leading one). */
    private static final int SUB_BITS = 3;
    /** The highest power of two with its own buckets: 2^40 ns, about 18 minutes; slower falls in the last bucket. */
    private static final int TOP_EXPONENT = 40;
    /** The number of buckets of a latency histogram. */
    public static final int BUCKETS = EXACT + (TOP_EXPONENT - 4 + 1) * (1 << SUB_BITS);

    /** This iteration's figures so far; guarded by the class. */
    private static long operations;

    private static long wallNanos;
    private static long cpuNanos;
    private static long maxNanos;
    private static final long[] HISTOGRAM = new long[BUCKETS];

    /** For JMH, which makes profilers by reflection. */
    public ManyThreadsProfiler() {}

    /**
     * @param nanos a latency, in ns (negative counts as 0)
     * @return its bucket in a histogram of {@link #BUCKETS} counts
     */
    public static int bucket(long nanos) {
        if (nanos < EXACT) {
            return (int) Math.max(0, nanos);
        }
        int exponent = 63 - Long.numberOfLeadingZeros(nanos); // 4 or more
        if (exponent > TOP_EXPONENT) {
            return BUCKETS - 1;
        }
        int sub = (int) (nanos >>> (exponent - SUB_BITS)) & ((1 << SUB_BITS) - 1);
        return EXACT + (exponent - 4) * (1 << SUB_BITS) + sub;
    }

    /**
     * @param bucket a bucket of {@link #bucket(long)}
     * @return the highest latency it holds, in ns
     */
    public static long highestIn(int bucket) {
        if (bucket < EXACT) {
            return bucket;
        }
        int exponent = 4 + (bucket - EXACT) / (1 << SUB_BITS);
        long sub = (bucket - EXACT) % (1 << SUB_BITS);
        return (((1L << SUB_BITS) + sub + 1) << (exponent - SUB_BITS)) - 1;
    }

    /**
     * @param histogram counts per {@link #bucket(long)}
     * @param fraction  e.g. 0.99
     * @return the highest value of the bucket that holds the {@code fraction} quantile, or NaN if empty
     */
    public static double quantile(long[] histogram, double fraction) {
        long total = 0;
        for (long c : histogram) {
            total += c;
        }
        if (total == 0) {
            return Double.NaN;
        }
        long rank = Math.max(1, (long) Math.ceil(fraction * total));
        long seen = 0;
        for (int b = 0; b < histogram.length; b++) {
            seen += histogram[b];
            if (seen >= rank) {
                return highestIn(b);
            }
        }
        throw new AssertionError("unreachable: rank " + rank + " of " + total);
    }

    /**
     * Adds one storm's figures to the current iteration's. Called by the benchmark after the timed part.
     *
     * @param ops       operations (acquisitions) in the storm
     * @param wall      wall time of the storm, ns
     * @param cpu       CPU time of the JVM during the storm, ns, or negative if unknown
     * @param histogram acquire-to-granted latencies per {@link #bucket(long)}
     * @param max       the longest of them, ns
     */
    static synchronized void record(long ops, long wall, long cpu, long[] histogram, long max) {
        operations += ops;
        wallNanos += wall;
        cpuNanos = cpu < 0 || cpuNanos < 0 ? -1 : cpuNanos + cpu;
        maxNanos = Math.max(maxNanos, max);
        for (int b = 0; b < BUCKETS; b++) {
            HISTOGRAM[b] += histogram[b];
        }
    }

    private static synchronized void reset() {
        operations = 0;
        wallNanos = 0;
        cpuNanos = 0;
        maxNanos = 0;
        java.util.Arrays.fill(HISTOGRAM, 0);
    }

    @Override
    public void beforeIteration(BenchmarkParams benchmarkParams, IterationParams iterationParams) {
        reset();
    }

    @Override
    public Collection<? extends Result> afterIteration(
            BenchmarkParams benchmarkParams, IterationParams iterationParams, IterationResult result) {
        synchronized (ManyThreadsProfiler.class) {
            if (operations == 0) {
                return List.of();
            }
            double p99 = quantile(HISTOGRAM, 0.99);
            List<ScalarResult> results = new java.util.ArrayList<>(List.of(
                    new ScalarResult(P99, Math.min(p99, maxNanos), "ns", AggregationPolicy.AVG),
                    new ScalarResult(MAX, maxNanos, "ns", AggregationPolicy.MAX)));
            if (cpuNanos >= 0) {
                results.add(new ScalarResult(CPU, (double) cpuNanos / operations, "ns/op", AggregationPolicy.AVG));
                results.add(new ScalarResult(
                        CPUS, (double) cpuNanos / Math.max(1, wallNanos), "CPUs", AggregationPolicy.AVG));
            }
            return results;
        }
    }

    @Override
    public String getDescription() {
        return "ManyThreadsBenchmark's CPU time per operation and acquire-to-granted latency (p99, max)";
    }
}
