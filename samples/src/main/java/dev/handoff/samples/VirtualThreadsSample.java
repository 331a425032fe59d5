// SPDX-License-Identifier: Apache-2.0
package dev.handoff.samples;

import dev.handoff.Permits;
import dev.handoff.Semaphore;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * Sample 6: {@code acquireBlocking} on 100,000 virtual threads sharing a pool of 100 connections.
 *
 * <p>Plain blocking code, one virtual thread per task: each task takes a connection with
 * {@link Semaphore#acquireBlocking(long)}, whose {@link Permits} handle gives it back at the end of
 * a try-with-resources block, however the block ends. The blocking path parks without
 * {@code synchronized}, so a waiting virtual thread frees its carrier thread. It prints the tasks
 * completed, the time, the peak connections in use (never above the pool) and those back at the end.
 */
public final class VirtualThreadsSample {

    static final int TASKS = 100_000;
    static final int CONNECTIONS = 100;

    /** What the run measured; if this JDK has no virtual threads ({@code supported} false), the rest is 0. */
    public record Figures(
            boolean supported, int javaVersion, int completed, int peakInUse, long millis, long availableAfter) {}

    private VirtualThreadsSample() {}

    /** Runs the tasks on virtual threads, or returns {@code supported == false} before JDK 21. */
    public static Figures run() throws InterruptedException {
        int javaVersion = Runtime.version().feature();
        ExecutorService executor = VirtualThreads.newPerTaskExecutor();
        if (executor == null) {
            return new Figures(false, javaVersion, 0, 0, 0, 0);
        }
        Semaphore pool = new Semaphore(CONNECTIONS);
        AtomicInteger inUse = new AtomicInteger();
        AtomicInteger peak = new AtomicInteger();
        AtomicInteger completed = new AtomicInteger();
        long start = System.nanoTime();
        try {
            for (int i = 0; i < TASKS; i++) {
                executor.execute(() -> {
                    try (Permits connection = pool.acquireBlocking(1)) { // given back when the block ends
                        peak.accumulateAndGet(inUse.incrementAndGet(), Math::max);
                        try {
                            Thread.sleep(1); // the query: parks, frees the carrier
                            completed.incrementAndGet();
                        } finally {
                            inUse.decrementAndGet(); // counted out before it goes back
                        }
                    } catch (InterruptedException e) {
                        Thread.currentThread().interrupt();
                    }
                });
            }
        } finally {
            executor.shutdown();
        }
        if (!executor.awaitTermination(10, TimeUnit.MINUTES)) {
            throw new IllegalStateException("the tasks did not finish in 10 minutes");
        }
        long millis = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start);
        return new Figures(true, javaVersion, completed.get(), peak.get(), millis, pool.availablePermits());
    }

    /** Runs the sample and prints its figures ({@code args} are ignored). */
    public static void main(String[] args) throws InterruptedException {
        Figures f = run();
        System.out.println("6. Virtual threads with acquireBlocking");
        if (!f.supported()) {
            System.out.printf(
                    "   needs JDK 21+ for virtual threads; this is JDK %d, so it is skipped%n", f.javaVersion());
            return;
        }
        System.out.printf(
                "   %,d virtual threads share %d connections (JDK %d); completed: %,d in %d ms%n",
                TASKS, CONNECTIONS, f.javaVersion(), f.completed(), f.millis());
        System.out.printf(
                "   peak connections in use: %d of %d; back at the end: %d%n",
                f.peakInUse(), CONNECTIONS, f.availableAfter());
    }
}
