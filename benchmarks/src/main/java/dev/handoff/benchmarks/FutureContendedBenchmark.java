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
 * Workload 7: 8 independent {@link java.util.concurrent.CompletableFuture} chains share 2 permits;
 * each link is {@code acquireAsync(1).thenRun(...)}: a little CPU work while holding the permit, a
 * hop to the pool still holding it, {@code release(1)}, the next link. See {@link FutureRounds} for
 * the exact steps. Time per acquisition and (with {@code -prof gc}) bytes per acquisition, round
 * set-up included (amortised over 2,000).
 *
 * <p>Peers: handoff's own {@code acquireAsync}, and kotlinx's {@code Semaphore} through the bridge
 * of {@link KotlinxPermits#acquireAsync} ({@code tryAcquire()}, else one coroutine suspended in
 * {@code acquire()} and resumed in place by the release). The Go-style monitor has no future face
 * and is not in this workload.
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@Warmup(iterations = 3, time = 1, timeUnit = TimeUnit.SECONDS)
@Measurement(iterations = 5, time = 1, timeUnit = TimeUnit.SECONDS)
@Fork(2)
public class FutureContendedBenchmark {
    static final int CHAINS = 8;
    static final int LINKS_PER_CHAIN = 250;

    /** The peer under test: the ones with a future face. */
    @Param({Peers.HANDOFF, Peers.KOTLINX})
    public String peer;

    /** {@code Blackhole.consumeCPU} tokens burnt while holding the permit. */
    @Param("50")
    public long work;

    private FuturePermits permits;

    /** Makes a semaphore of 2 permits. */
    @Setup
    public void setUp() {
        permits = Peers.future(peer, 2);
    }

    /**
     * One round: 8 chains, 250 links each; returns when all 8 have finished.
     *
     * @param counters where the round's acquisitions and waits are counted
     * @throws InterruptedException never, unless JMH interrupts a stuck run
     */
    @Benchmark
    @OperationsPerInvocation(CHAINS * LINKS_PER_CHAIN)
    public void chains8permits2(SuspensionCounters counters) throws InterruptedException {
        counters.suspended += FutureRounds.run(permits, CHAINS, LINKS_PER_CHAIN, work, FutureRounds.POOL);
        counters.acquisitions += CHAINS * LINKS_PER_CHAIN;
    }
}
