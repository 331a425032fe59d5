// SPDX-License-Identifier: Apache-2.0
package dev.handoff.benchmarks;

import java.util.concurrent.TimeUnit;
import kotlin.coroutines.intrinsics.IntrinsicsKt;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.Warmup;

/**
 * Workload 1b: one thread, the suspending {@code acquire(1)} then {@code release(1)} on a free
 * semaphore. The suspend function is called exactly as compiled Kotlin calls it, with the caller's
 * continuation ({@link MustNotSuspend}), so nothing but the semaphore's own fast path is measured
 * and the bytes per operation are the semaphore's (target 0).
 */
@State(Scope.Thread)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@Warmup(iterations = 3, time = 500, timeUnit = TimeUnit.MILLISECONDS)
@Measurement(iterations = 5, time = 500, timeUnit = TimeUnit.MILLISECONDS)
@Fork(2)
public class UncontendedSuspendBenchmark {
    private static final Object SUSPENDED = IntrinsicsKt.getCOROUTINE_SUSPENDED();

    /** The peer under test: ours or kotlinx. */
    @Param({Peers.HANDOFF, Peers.KOTLINX})
    public String peer;

    private SuspendingPermits permits;

    /** Makes a semaphore of one permit. */
    @Setup
    public void setUp() {
        permits = Peers.suspending(peer, 1);
    }

    /**
     * One suspending acquire that must not suspend, and one release.
     *
     * @return the acquire's result, so JIT keeps the call
     * @throws IllegalStateException if the acquire suspended
     */
    @Benchmark
    public Object acquireRelease() {
        Object result = Suspensions.acquire(permits, 1, MustNotSuspend.INSTANCE);
        if (result == SUSPENDED) {
            throw new IllegalStateException(peer + ": an uncontended acquire suspended");
        }
        permits.release(1);
        return result;
    }
}
