// SPDX-License-Identifier: Apache-2.0
package dev.handoff.benchmarks;

import java.util.concurrent.TimeUnit;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OperationsPerInvocation;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.Warmup;

/**
 * Workload 4: weighted acquires. A capacity of 16, 8 coroutines on {@code Dispatchers.Default},
 * task {@code i} always takes {@code i + 1} permits (weights 1..8, 36 in all), works a little and
 * yields while holding them. Ours and the monitor queue a weighted acquisition as one waiter;
 * kotlinx needs the workaround of a {@code Mutex} around {@code n} single acquires.
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@Warmup(iterations = 3, time = 1, timeUnit = TimeUnit.SECONDS)
@Measurement(iterations = 5, time = 1, timeUnit = TimeUnit.SECONDS)
@Fork(2)
public class WeightedBenchmark {
    static final int TASKS = 8;
    static final int ACQUISITIONS_PER_TASK = 250;
    private static final long[] WEIGHTS = {1, 2, 3, 4, 5, 6, 7, 8};

    /**
     * The peer under test: the ones with a weighted acquire, and the diagnostics of workload 3 (no
     * target): not cancellable (ours suspended without kotlinx's cancellation machinery), and ours
     * with a no-op {@code WaitListener} or after a past resize (against plain {@code handoff}).
     */
    @Param({
        Peers.HANDOFF,
        Peers.KOTLINX_MUTEX,
        Peers.MONITOR,
        Peers.HANDOFF_UNCANCELLABLE,
        Peers.HANDOFF_LISTENER,
        Peers.HANDOFF_RESIZED
    })
    public String peer;

    /** {@code Blackhole.consumeCPU} tokens burnt while holding the permits. */
    @Param("50")
    public long work;

    private SuspendingPermits permits;

    /** Makes a semaphore of 16 permits. */
    @Setup
    public void setUp() {
        permits = Peers.suspending(peer, 16);
    }

    /**
     * One round: 8 tasks of weights 1..8, 250 acquisitions each.
     *
     * @param counters where the round's acquisitions and suspensions are counted
     */
    @Benchmark
    @OperationsPerInvocation(TASKS * ACQUISITIONS_PER_TASK)
    public void capacity16weights1to8(SuspensionCounters counters) {
        counters.suspended += CoroutineRounds.run(permits, TASKS, ACQUISITIONS_PER_TASK, WEIGHTS, work);
        counters.acquisitions += TASKS * ACQUISITIONS_PER_TASK;
    }
}
