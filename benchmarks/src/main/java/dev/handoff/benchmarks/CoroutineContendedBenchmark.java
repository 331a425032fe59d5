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
 * Workload 3: 8 coroutines on {@code Dispatchers.Default} share 2 permits; each acquisition does a
 * little CPU work and a {@code yield()} while holding the permit, then releases. Without the yield,
 * 2 worker threads (2 cores) and 2 permits never queue anybody. Time per acquisition, and (with
 * {@code -prof gc}) bytes per acquisition, round set-up included (amortised over 2,000).
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@Warmup(iterations = 3, time = 1, timeUnit = TimeUnit.SECONDS)
@Measurement(iterations = 5, time = 1, timeUnit = TimeUnit.SECONDS)
@Fork(2)
public class CoroutineContendedBenchmark {
    static final int TASKS = 8;
    static final int ACQUISITIONS_PER_TASK = 250;
    private static final long[] ONE = {1};
    /** The CPU work held under the permit, in {@code Blackhole.consumeCPU} tokens (the default of {@link #work}). */
    static final String DEFAULT_WORK = "50";

    static final long WORK = Long.parseLong(DEFAULT_WORK);

    /**
     * The peer under test. The others are diagnostics, reported apart from the targets:
     * {@code handoff-uncancellable} is ours without kotlinx's cancellation machinery (see
     * {@link UncancellablePermits}), against kotlinx; {@code handoff-listener} (a no-op
     * {@code WaitListener}) and {@code handoff-resized} (a past {@code setCapacity(c + 1)},
     * {@code setCapacity(c)}) are ours made differently, against plain {@code handoff}: each should
     * cost the same, or the listener or the past resize moved the semaphore off its lock-free paths.
     */
    @Param({
        Peers.HANDOFF,
        Peers.KOTLINX,
        Peers.MONITOR,
        Peers.HANDOFF_UNCANCELLABLE,
        Peers.HANDOFF_LISTENER,
        Peers.HANDOFF_RESIZED
    })
    public String peer;

    /** {@code Blackhole.consumeCPU} tokens burnt while holding the permit. */
    @Param(DEFAULT_WORK)
    public long work;

    private SuspendingPermits permits;

    /** Makes a semaphore of 2 permits. */
    @Setup
    public void setUp() {
        permits = Peers.suspending(peer, 2);
    }

    /**
     * One round: 8 tasks, 250 acquisitions each.
     *
     * @param counters where the round's acquisitions and suspensions are counted
     */
    @Benchmark
    @OperationsPerInvocation(TASKS * ACQUISITIONS_PER_TASK)
    public void tasks8permits2(SuspensionCounters counters) {
        round(permits, work, CoroutineRounds.Start.ASYNC_AWAIT_ALL, counters);
    }

    /**
     * One round of this workload (8 tasks of 250 acquisitions of 1 permit), started as
     * {@code start} says, counted in {@code counters}; also workload 3b's round.
     */
    static void round(SuspendingPermits permits, long work, CoroutineRounds.Start start, SuspensionCounters counters) {
        counters.suspended += CoroutineRounds.run(permits, TASKS, ACQUISITIONS_PER_TASK, ONE, work, start);
        counters.acquisitions += TASKS * ACQUISITIONS_PER_TASK;
    }
}
