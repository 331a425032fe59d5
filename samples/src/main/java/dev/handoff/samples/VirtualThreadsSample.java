// SPDX-License-Identifier: Apache-2.0
package dev.handoff.samples;

import dev.handoff.Permits;
import dev.handoff.Semaphore;
import java.lang.invoke.MethodHandle;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.MethodType;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * Sample 3: {@code acquireBlocking} on 100,000 virtual threads sharing a pool of 100 connections.
 *
 * <p>Plain blocking code, one virtual thread per task: each task takes a connection with
 * {@link Semaphore#acquireBlocking(long)}, whose {@link Permits} handle gives it back at the end of
 * a try-with-resources block, however the block ends. The blocking path
 * parks without {@code synchronized}, so a waiting virtual thread frees its carrier thread.
 *
 * <p>Virtual threads need JDK 21+. This library is built for Java 17, so the sample reaches
 * {@code Executors.newVirtualThreadPerTaskExecutor()} through a method handle; on an older JDK it
 * says so and returns. With JDK 21+ bytecode, simply write
 * {@code try (var executor = Executors.newVirtualThreadPerTaskExecutor()) { ... }}.
 */
public final class VirtualThreadsSample {

    static final int TASKS = 100_000;
    static final int CONNECTIONS = 100;

    /**
     * What the run proves.
     *
     * @param supported whether this JDK has virtual threads (21+); if not, the other figures are 0
     * @param javaVersion the running JDK's feature version
     * @param tasks the virtual threads started
     * @param completed the tasks that ran their query
     * @param connections the pool size
     * @param peakInUse the most connections in use at once, at most {@code connections}
     * @param millis the wall-clock time
     * @param availableAfter the free connections at the end, equal to {@code connections}
     */
    public record Figures(boolean supported, int javaVersion, int tasks, int completed, int connections,
                          int peakInUse, long millis, long availableAfter) {
    }

    private VirtualThreadsSample() {
    }

    /**
     * Runs the tasks on virtual threads, or returns {@code supported == false} before JDK 21.
     *
     * @return the figures
     * @throws InterruptedException if interrupted while waiting for the tasks
     */
    public static Figures run() throws InterruptedException {
        int javaVersion = Runtime.version().feature();
        ExecutorService executor = newVirtualThreadPerTaskExecutor(javaVersion);
        if (executor == null) {
            return new Figures(false, javaVersion, 0, 0, CONNECTIONS, 0, 0, 0);
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
                            Thread.sleep(1);                    // the query: parks, frees the carrier
                            completed.incrementAndGet();
                        } finally {
                            inUse.decrementAndGet();            // counted out before it goes back
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
        return new Figures(true, javaVersion, TASKS, completed.get(), CONNECTIONS, peak.get(), millis,
                pool.availablePermits());
    }

    /** {@code Executors.newVirtualThreadPerTaskExecutor()} on JDK 21+, else null. */
    private static ExecutorService newVirtualThreadPerTaskExecutor(int javaVersion) {
        if (javaVersion < 21) {
            return null;                                        // a preview on 19 and 20
        }
        try {
            MethodHandle factory = MethodHandles.publicLookup().findStatic(Executors.class,
                    "newVirtualThreadPerTaskExecutor", MethodType.methodType(ExecutorService.class));
            return (ExecutorService) factory.invokeExact();
        } catch (Throwable e) {
            throw new IllegalStateException("JDK " + javaVersion + " has no virtual threads", e);
        }
    }

    /**
     * Runs the sample and prints its figures.
     *
     * @param args ignored
     * @throws InterruptedException if interrupted
     */
    public static void main(String[] args) throws InterruptedException {
        Figures f = run();
        System.out.println("3. Virtual threads with acquireBlocking");
        if (!f.supported()) {
            System.out.printf("   needs JDK 21+ for virtual threads; this is JDK %d, so it is skipped%n",
                    f.javaVersion());
            return;
        }
        System.out.printf("   %,d virtual threads share %d connections (JDK %d)%n",
                f.tasks(), f.connections(), f.javaVersion());
        System.out.printf("   completed: %,d in %d ms; peak connections in use: %d of %d%n",
                f.completed(), f.millis(), f.peakInUse(), f.connections());
        System.out.printf("   connections back at the end: %d of %d%n", f.availableAfter(), f.connections());
    }
}
