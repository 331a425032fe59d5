// SPDX-License-Identifier: Apache-2.0
package dev.handoff.samples;

import dev.handoff.RwLock;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Sample 9: a cache behind an {@link RwLock} ({@link PriceCache}), read back to back, with a writer
 * that is never starved.
 *
 * <p>Eight threads read a price list back to back, so some reader holds the read lock at almost
 * every moment: under a reader-preferring lock, a writer would wait for a gap that never comes.
 * {@code RwLock} serves in arrival order: a waiting writer makes later readers wait, so it waits only
 * for the readers already inside. It prints the reads, the torn reads (none) and the writer's longest wait.
 */
public final class RwLockCacheSample {

    static final int READERS = 8;
    static final int REFRESHES = 20;
    static final int READS_PER_READER_AT_LEAST = 200;

    /** What the run measured; {@code lockFreeAfter}: neither held nor awaited at the end. */
    public record Figures(long reads, long tornReads, long maxWriterWaitMicros, boolean lockFreeAfter) {}

    private RwLockCacheSample() {}

    /** Runs the readers, refreshes the cache from this thread meanwhile, and returns the figures. */
    public static Figures run() throws InterruptedException {
        PriceCache cache = new PriceCache();
        AtomicBoolean writerDone = new AtomicBoolean();
        AtomicLong reads = new AtomicLong();
        AtomicLong tornReads = new AtomicLong();
        ExecutorService readers = Executors.newFixedThreadPool(READERS);
        for (int r = 0; r < READERS; r++) {
            readers.submit(
                    () -> { // until the writer is done, 200 times at least
                        for (int n = 0; !writerDone.get() || n < READS_PER_READER_AT_LEAST; n++) {
                            tornReads.addAndGet(cache.readConsistent() ? 0 : 1);
                            reads.incrementAndGet();
                        }
                        return null;
                    });
        }
        long maxWaitNanos = 0;
        try {
            for (int version = 1; version <= REFRESHES; version++) {
                Thread.sleep(2); // an occasional writer
                long start = System.nanoTime();
                cache.refresh(version);
                maxWaitNanos = Math.max(maxWaitNanos, System.nanoTime() - start);
            }
        } finally {
            writerDone.set(true);
            readers.shutdown();
        }
        if (!readers.awaitTermination(1, TimeUnit.MINUTES)) {
            throw new IllegalStateException("the readers did not finish within a minute");
        }
        return new Figures(reads.get(), tornReads.get(), TimeUnit.NANOSECONDS.toMicros(maxWaitNanos), cache.isFree());
    }

    /** Runs the sample and prints its figures ({@code args} are ignored). */
    public static void main(String[] args) throws InterruptedException {
        Figures f = run();
        System.out.println("9. RwLock cache: many readers, an occasional writer");
        System.out.printf(
                "   %d readers reading back to back did %,d reads; torn reads: %d%n",
                READERS, f.reads(), f.tornReads());
        System.out.printf(
                "   the writer did its %d refreshes meanwhile; its longest wait: %,d us; lock free at the end: %b%n",
                REFRESHES, f.maxWriterWaitMicros(), f.lockFreeAfter());
    }
}
