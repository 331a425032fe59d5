// SPDX-License-Identifier: Apache-2.0
package dev.handoff.benchmarks;

import dev.handoff.Acquisition;
import dev.handoff.FairShareSemaphore;
import dev.handoff.Semaphore;
import dev.handoff.Waker;
import java.util.concurrent.TimeUnit;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OperationsPerInvocation;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.annotations.Warmup;

/**
 * The cost of fairness across keys: {@link FairShareSemaphore} against the FIFO {@link Semaphore}
 * it is built on, one thread.
 * <ul>
 *   <li>{@code tryAcquireRelease}: the immediate path, {@code tryAcquire(key, 1)} then
 *       {@code release(key, 1)}, on one key ({@code keys = 1}) or rotating over 1,000 keys that each
 *       hold a permit ({@code keys = 1000}: the map and the tags of many active keys); the
 *       Semaphore peer ignores the key (target: fair share at most 1.3x on one key).</li>
 *   <li>{@code queueAndHandOff}: {@value #WAITERS} acquisitions queue behind a full semaphore (on
 *       {@code keys} keys for the fair share), then {@value #WAITERS} releases hand the permit through
 *       all of them: the cost of one wait, queued and granted by handoff. Run with {@code -prof gc}:
 *       {@code gc.alloc.rate.norm} is the bytes per waiter (the callback node, and for the fair share
 *       its share of the per-key state).</li>
 * </ul>
 * <pre>
 * java -jar benchmarks/target/benchmarks.jar FairShareBenchmark -prof gc
 * </pre>
 */
@State(Scope.Thread)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@Warmup(iterations = 3, time = 500, timeUnit = TimeUnit.MILLISECONDS)
@Measurement(iterations = 5, time = 500, timeUnit = TimeUnit.MILLISECONDS)
@Fork(1)
public class FairShareBenchmark {

    /** Acquisitions queued per invocation of {@link #queueAndHandOff()}. */
    public static final int WAITERS = 1_000;

    /** {@code "fair-share"} or {@code "semaphore"} (the FIFO core alone). */
    @Param({"fair-share", "semaphore"})
    public String peer;

    /** Active keys: 1, or 1,000 (each holding one permit in {@code tryAcquireRelease}). */
    @Param({"1", "1000"})
    public int keys;

    private FairShareSemaphore<Integer> fair;
    private Semaphore fifo;
    private Integer[] keyObjects;
    private int next;
    private static final Waker NOTHING = () -> {};

    /** Builds the peer; with 1,000 keys, each holds one permit so that all are active. */
    @Setup(Level.Trial)
    public void setUp() {
        keyObjects = new Integer[keys];
        for (int i = 0; i < keys; i++) {
            keyObjects[i] = i;
        }
        long capacity = keys + 1L;
        fair = FairShareSemaphore.<Integer>builder(capacity).build();
        fifo = new Semaphore(capacity);
        if (keys > 1) {
            for (Integer k : keyObjects) {
                fair.tryAcquire(k, 1);
                fifo.tryAcquire(1);
            }
        }
    }

    /** Checks that nothing leaked: every key holds what setUp gave it, no more. */
    @TearDown(Level.Trial)
    public void tearDown() {
        long expected = keys > 1 ? 1 : 0;
        if (fair.queueLength() != 0 || fair.heldPermits(keyObjects[0]) != expected) {
            throw new IllegalStateException("leaked: " + fair);
        }
    }

    private Integer nextKey() {
        int i = next + 1;
        if (i == keys) {
            i = 0;
        }
        next = i;
        return keyObjects[i];
    }

    /**
     * One immediate acquisition and its release.
     *
     * @return whether it was granted (always, one permit stays free), so the JIT keeps the calls
     */
    @Benchmark
    public boolean tryAcquireRelease() {
        if (peer.equals("semaphore")) {
            boolean granted = fifo.tryAcquire(1);
            if (granted) {
                fifo.release(1);
            }
            return granted;
        }
        Integer key = nextKey();
        boolean granted = fair.tryAcquire(key, 1);
        if (granted) {
            fair.release(key, 1);
        }
        return granted;
    }

    /**
     * {@value #WAITERS} waits, queued behind a full semaphore and granted one by one by handoff.
     *
     * @return the last acquisition, granted
     */
    @Benchmark
    @OperationsPerInvocation(WAITERS)
    public Acquisition queueAndHandOff() {
        Acquisition last = null;
        if (peer.equals("semaphore")) {
            long free = fifo.availablePermits();
            fifo.tryAcquire(free);
            for (int i = 0; i < WAITERS; i++) {
                last = fifo.acquireThen(1, NOTHING);
            }
            fifo.release(free);
            for (int i = 0; i < WAITERS; i++) {
                fifo.release(1);
            }
            return last; // the pool is as before: held as after setUp, `free` free
        }
        Integer blocker = -1;
        long free = fair.availablePermits();
        fair.tryAcquire(blocker, free);
        Integer[] waitedOn = new Integer[WAITERS];
        for (int i = 0; i < WAITERS; i++) {
            Integer key = nextKey();
            waitedOn[i] = key;
            last = fair.acquireThen(key, 1, NOTHING);
        }
        fair.release(blocker, free);
        // each grant goes in fair order; releasing every key's extra permit hands them all out
        for (int i = 0; i < WAITERS; i++) {
            fair.release(waitedOn[i], 1);
        }
        return last;
    }
}
