// SPDX-License-Identifier: Apache-2.0
package dev.handoff.benchmarks;

import java.util.concurrent.TimeUnit;
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
 * Workload 1a: one thread, {@code tryAcquire(1)} then {@code release(1)} on a free semaphore; the
 * cost of the fast path that most acquisitions in a real program take. Run with {@code -prof gc}
 * for the bytes per operation (target 0).
 */
@State(Scope.Thread)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@Warmup(iterations = 3, time = 500, timeUnit = TimeUnit.MILLISECONDS)
@Measurement(iterations = 5, time = 500, timeUnit = TimeUnit.MILLISECONDS)
@Fork(2)
public class UncontendedBenchmark {
    /** The peer under test, see {@link Peers}. */
    @Param({Peers.HANDOFF, Peers.HANDOFF_OBSERVED, Peers.JUC_FAIR, Peers.JUC_NONFAIR, Peers.KOTLINX, Peers.MONITOR})
    public String peer;

    private Permits permits;

    /** Makes a semaphore of one permit. */
    @Setup
    public void setUp() {
        permits = Peers.permits(peer, 1);
    }

    /**
     * One try and one release.
     *
     * @return whether the try succeeded (always, on a free semaphore), so JIT keeps the call
     */
    @Benchmark
    public boolean tryAcquireRelease() {
        boolean granted = permits.tryAcquire(1);
        if (granted) {
            permits.release(1);
        }
        return granted;
    }
}
