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
import org.openjdk.jmh.annotations.Threads;
import org.openjdk.jmh.annotations.Warmup;
import org.openjdk.jmh.infra.Blackhole;

/**
 * Workload 2: 4 or 8 platform threads share a semaphore of 2 permits; each operation is a blocking
 * {@code acquire(1)}, a little CPU work while holding the permit, and {@code release(1)}. Throughput
 * of all threads together. The FIFO peers (ours, j.u.c. fair, the monitor) hand every permit to a
 * parked thread; j.u.c. nonfair lets a running thread barge in, the ceiling a FIFO semaphore can
 * approach but not reach.
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.Throughput)
@OutputTimeUnit(TimeUnit.MICROSECONDS)
@Warmup(iterations = 2, time = 1, timeUnit = TimeUnit.SECONDS)
@Measurement(iterations = 5, time = 1, timeUnit = TimeUnit.SECONDS)
@Fork(2)
public class BlockingContendedBenchmark {
    /** The peer under test: the ones that can park a thread. */
    @Param({Peers.HANDOFF, Peers.JUC_FAIR, Peers.JUC_NONFAIR, Peers.MONITOR})
    public String peer;

    /** {@code Blackhole.consumeCPU} tokens burnt while holding the permit. */
    @Param("50")
    public long work;

    private BlockingPermits permits;

    /** Makes a semaphore of 2 permits, shared by all benchmark threads. */
    @Setup
    public void setUp() {
        permits = Peers.blocking(peer, 2);
    }

    /**
     * 4 threads.
     *
     * @throws InterruptedException never, unless JMH interrupts a stuck run
     */
    @Benchmark
    @Threads(4)
    public void threads4() throws InterruptedException {
        acquireWorkRelease();
    }

    /**
     * 8 threads.
     *
     * @throws InterruptedException never, unless JMH interrupts a stuck run
     */
    @Benchmark
    @Threads(8)
    public void threads8() throws InterruptedException {
        acquireWorkRelease();
    }

    private void acquireWorkRelease() throws InterruptedException {
        permits.acquireBlocking(1);
        try {
            Blackhole.consumeCPU(work);
        } finally {
            permits.release(1);
        }
    }
}
