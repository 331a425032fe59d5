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
 * Workload 3b: workload 3 ({@link CoroutineContendedBenchmark}: 8 coroutines, 2 permits, work and
 * a {@code yield()} under the permit) with the tasks {@code launch}ed in {@code runBlocking}'s
 * scope instead of {@code async} + {@code awaitAll()}. The only difference is that no completion
 * handler sits on the tasks' Jobs, so kotlinx keeps each Job's handlers in their single-node form,
 * where attaching and detaching the handle of a cancellable suspension is one CAS each, instead of
 * an insertion into and a removal from its lock-free list. kotlinx's Semaphore attaches that handle
 * once per coroutine (internal API); ours, with public API only, once per suspension: this
 * workload shows what that costs us in each form. No target: the target is on workload 3.
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@Warmup(iterations = 3, time = 1, timeUnit = TimeUnit.SECONDS)
@Measurement(iterations = 5, time = 1, timeUnit = TimeUnit.SECONDS)
@Fork(2)
public class CoroutineLaunchedBenchmark {
    /** The peer under test: ours and kotlinx's, the two that workload 3's target compares. */
    @Param({Peers.HANDOFF, Peers.KOTLINX})
    public String peer;

    /** {@code Blackhole.consumeCPU} tokens burnt while holding the permit. */
    @Param(CoroutineContendedBenchmark.DEFAULT_WORK)
    public long work;

    private SuspendingPermits permits;

    /** Makes a semaphore of 2 permits. */
    @Setup
    public void setUp() {
        permits = Peers.suspending(peer, 2);
    }

    /**
     * One round: 8 launched tasks, 250 acquisitions each.
     *
     * @param counters where the round's acquisitions and suspensions are counted
     */
    @Benchmark
    @OperationsPerInvocation(CoroutineContendedBenchmark.TASKS * CoroutineContendedBenchmark.ACQUISITIONS_PER_TASK)
    public void tasks8permits2(SuspensionCounters counters) {
        CoroutineContendedBenchmark.round(permits, work, CoroutineRounds.Start.LAUNCH, counters);
    }
}
