// SPDX-License-Identifier: Apache-2.0
package dev.handoff.samples;

import dev.handoff.Permits;
import dev.handoff.RwLock;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.LockSupport;

/**
 * Sample 5: a cache behind an {@link RwLock}, many readers and an occasional writer.
 *
 * <p>Eight reader threads read the cache back to back, so at almost every moment some reader holds
 * the read lock. With a reader-preferring lock, a writer would wait for a gap that never comes.
 * {@code RwLock} serves everyone in arrival order: a waiting writer blocks the readers that come
 * after it, so it waits only for the readers already inside. Every read also checks that it never
 * sees a half-done refresh.
 */
public final class RwLockCacheSample {

    static final int READERS = 8;
    static final int REFRESHES = 20;
    static final int READS_PER_READER_AT_LEAST = 200;
    private static final int KEYS = 100;

    /**
     * What the run proves.
     *
     * @param readers the reader threads
     * @param reads the reads done, all while the writer was running or right after
     * @param refreshes the refreshes the writer was asked to do
     * @param refreshesDone the refreshes done, equal to {@code refreshes}
     * @param tornReads reads that saw a half-done refresh, always 0
     * @param maxWriterWaitMicros the writer's longest wait for the write lock
     * @param lockFreeAfter whether the lock was neither held nor awaited at the end
     */
    public record Figures(int readers, long reads, int refreshes, int refreshesDone, long tornReads,
                          long maxWriterWaitMicros, boolean lockFreeAfter) {
    }

    /** A price list: every entry of one refresh carries the same version. */
    static final class PriceCache {
        private final RwLock lock = new RwLock();
        private final Map<String, Long> versions = new HashMap<>();   // guarded by lock

        PriceCache() {
            for (int i = 0; i < KEYS; i++) {
                versions.put("item-" + i, 0L);
            }
        }

        /** A read: true if every entry has the same version, as it must. */
        boolean readConsistent() throws InterruptedException {
            try (Permits read = lock.readLockBlocking()) {             // read-unlocked when the block ends
                long first = versions.get("item-0");
                LockSupport.parkNanos(20_000);                         // a slow-ish read
                return versions.values().stream().allMatch(v -> v == first);
            }
        }

        /** A refresh: rewrites every entry, one at a time, under the write lock. */
        void refresh(long version) throws InterruptedException {
            try (Permits write = lock.writeLockBlocking()) {           // write-unlocked when the block ends
                versions.replaceAll((key, old) -> version);
            }
        }

        boolean isFree() {
            return !lock.isWriteLocked() && lock.readLockCount() == 0 && lock.queueLength() == 0;
        }
    }

    private RwLockCacheSample() {
    }

    /**
     * Runs the readers and the writer and returns the figures.
     *
     * @return the figures
     * @throws InterruptedException if interrupted while waiting for the threads
     */
    public static Figures run() throws InterruptedException {
        PriceCache cache = new PriceCache();
        AtomicBoolean writerDone = new AtomicBoolean();
        AtomicLong reads = new AtomicLong();
        AtomicLong tornReads = new AtomicLong();
        AtomicInteger refreshesDone = new AtomicInteger();
        AtomicLong maxWaitNanos = new AtomicLong();

        Thread[] readers = new Thread[READERS];
        for (int r = 0; r < READERS; r++) {
            readers[r] = new Thread(() -> {
                try {
                    // Read back to back until the writer is done (and at least a few hundred times).
                    for (int n = 0; !writerDone.get() || n < READS_PER_READER_AT_LEAST; n++) {
                        if (!cache.readConsistent()) {
                            tornReads.incrementAndGet();
                        }
                        reads.incrementAndGet();
                    }
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            }, "reader-" + r);
            readers[r].start();
        }
        Thread writer = new Thread(() -> {
            try {
                for (int version = 1; version <= REFRESHES; version++) {
                    Thread.sleep(2);                                    // an occasional writer
                    long start = System.nanoTime();
                    cache.refresh(version);
                    maxWaitNanos.accumulateAndGet(System.nanoTime() - start, Math::max);
                    refreshesDone.incrementAndGet();
                }
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            } finally {
                writerDone.set(true);
            }
        }, "writer");
        writer.start();

        writer.join();
        for (Thread reader : readers) {
            reader.join();
        }
        return new Figures(READERS, reads.get(), REFRESHES, refreshesDone.get(), tornReads.get(),
                TimeUnit.NANOSECONDS.toMicros(maxWaitNanos.get()), cache.isFree());
    }

    /**
     * Runs the sample and prints its figures.
     *
     * @param args ignored
     * @throws InterruptedException if interrupted
     */
    public static void main(String[] args) throws InterruptedException {
        Figures f = run();
        System.out.println("5. RwLock cache: many readers, an occasional writer");
        System.out.printf("   %d readers reading back to back did %,d reads; torn reads: %d%n",
                f.readers(), f.reads(), f.tornReads());
        System.out.printf("   the writer finished %d of %d refreshes; its longest wait: %,d us%n",
                f.refreshesDone(), f.refreshes(), f.maxWriterWaitMicros());
        System.out.printf("   lock free at the end: %b%n", f.lockFreeAfter());
    }
}
