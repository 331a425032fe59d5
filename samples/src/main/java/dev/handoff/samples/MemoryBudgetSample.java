// SPDX-License-Identifier: Apache-2.0
package dev.handoff.samples;

import dev.handoff.Semaphore;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Supplier;

/**
 * Sample 1: a memory budget with {@link CompletableFuture}s.
 *
 * <p>A batch of downloads of very different sizes must never hold more than {@link #BUDGET} bytes in
 * memory at once. Each download takes as many permits as it has bytes and gives them back when it
 * is done, with {@code withPermitsAsync(size, download)}: the asynchronous {@code try/finally},
 * which gives the permits back exactly once if they were granted, however the download ends, and
 * never if the acquisition itself failed (see {@link #withinBudget}). Because the semaphore is
 * strictly FIFO, a huge download is not starved by the stream of small ones queued behind it: no
 * later download starts before it.
 */
public final class MemoryBudgetSample {

    /** At most 64 MiB in flight. */
    static final long BUDGET = 64L << 20;

    private static final int DOWNLOADS = 400;
    private static final int HUGE_INDEX = 25;
    private static final long HUGE_SIZE = 60L << 20;

    /**
     * What the run proves.
     *
     * @param budget the byte budget
     * @param peakBytesInFlight the most bytes ever in flight at once, at most {@code budget}
     * @param downloads the downloads submitted
     * @param completed the downloads that completed
     * @param totalBytes the bytes downloaded
     * @param millis the wall-clock time of the batch
     * @param hugeSize the size of the huge download
     * @param hugeCompleted whether the huge download completed
     * @param startedBeforeHuge downloads submitted after the huge one that started before it
     * @param availableAfter the free permits once all is done, equal to {@code budget}
     */
    public record Figures(long budget, long peakBytesInFlight, int downloads, int completed, long totalBytes,
                          long millis, long hugeSize, boolean hugeCompleted, int startedBeforeHuge,
                          long availableAfter) {

        /**
         * Returns the throughput of the batch.
         *
         * @return MiB per second
         */
        public double mibPerSecond() {
            return (totalBytes / (double) (1 << 20)) / Math.max(millis, 1) * 1000.0;
        }
    }

    private MemoryBudgetSample() {
    }

    /**
     * Runs the batch and returns its figures.
     *
     * @return the figures
     */
    public static Figures run() {
        Semaphore budget = new Semaphore(BUDGET);
        AtomicLong inFlight = new AtomicLong();
        AtomicLong peak = new AtomicLong();
        ConcurrentLinkedQueue<Integer> startOrder = new ConcurrentLinkedQueue<>();
        // The "network": one thread that completes downloads when their time is up, like the I/O
        // thread of an asynchronous HTTP client.
        ScheduledExecutorService network = Executors.newSingleThreadScheduledExecutor();
        try {
            long start = System.nanoTime();
            // Submitted on the network thread too, so the start order is exactly the grant order.
            List<CompletableFuture<Long>> downloads = CompletableFuture.supplyAsync(() -> {
                List<CompletableFuture<Long>> all = new ArrayList<>();
                long[] sizes = sizes();
                for (int i = 0; i < sizes.length; i++) {
                    int index = i;
                    long size = sizes[i];
                    all.add(withinBudget(budget, size, () -> {          // weight = bytes
                        startOrder.add(index);
                        peak.accumulateAndGet(inFlight.addAndGet(size), Math::max);
                        // Counted out before the permits go back (they go back when this stage
                        // completes), so the peak never counts bytes the budget has let go.
                        return simulateDownload(network, size)
                                .whenComplete((body, failure) -> inFlight.addAndGet(-size));
                    }));
                }
                return all;
            }, network).join();
            CompletableFuture.allOf(downloads.toArray(CompletableFuture[]::new)).join();
            long millis = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start);

            long totalBytes = downloads.stream().mapToLong(CompletableFuture::join).sum();
            int startedBeforeHuge = 0;
            for (int index : startOrder) {
                if (index == HUGE_INDEX) {
                    break;
                }
                if (index > HUGE_INDEX) {
                    startedBeforeHuge++;
                }
            }
            int completed = (int) downloads.stream().filter(d -> d.isDone() && !d.isCompletedExceptionally()).count();
            return new Figures(BUDGET, peak.get(), downloads.size(), completed, totalBytes, millis, HUGE_SIZE,
                    downloads.get(HUGE_INDEX).join() == HUGE_SIZE, startedBeforeHuge, budget.availablePermits());
        } finally {
            network.shutdown();
        }
    }

    /**
     * The pattern of this sample: runs {@code download} holding {@code size} permits of
     * {@code budget}, and gives them back when the stage it returns completes, however it completes
     * (normally, exceptionally, or because {@code download} threw). The permits are given back if,
     * and only if, they were granted, and exactly once: an acquisition that fails (the budget is
     * closed, the caller cancels the result or times it out with {@code orTimeout} before the
     * grant) fails the result and gives back nothing, because it holds nothing. Giving back in a
     * {@code whenComplete} on the acquisition (or on a chain that starts with it) instead would
     * return permits that a failed acquisition never got: another holder's.
     *
     * <p>That is {@link Semaphore#withPermitsAsync(long, Supplier)}; this method only names it
     * for the sample and its tests.
     *
     * @param budget the byte budget
     * @param size the bytes this download holds in memory, the permits it takes
     * @param download starts the download once the bytes fit; runs on the granting thread
     * @param <T> the download's result
     * @return a future completed with the download's result, or failed with its exception or the
     *     acquisition's ({@link dev.handoff.SemaphoreClosedException}, a timeout, a cancellation)
     */
    static <T> CompletableFuture<T> withinBudget(Semaphore budget, long size,
            Supplier<? extends CompletionStage<T>> download) {
        return budget.withPermitsAsync(size, download);
    }

    /** Sizes from 16 KiB to 8 MiB, plus one huge download of 60 MiB early in the batch. */
    private static long[] sizes() {
        Random random = new Random(42);
        long[] sizes = new long[DOWNLOADS];
        for (int i = 0; i < sizes.length; i++) {
            sizes[i] = (16L << 10) << random.nextInt(10);
        }
        sizes[HUGE_INDEX] = HUGE_SIZE;
        return sizes;
    }

    /** Completes with {@code size} after 1 ms plus 1 ms per MiB, on the network thread. */
    private static CompletableFuture<Long> simulateDownload(ScheduledExecutorService network, long size) {
        CompletableFuture<Long> body = new CompletableFuture<>();
        network.schedule(() -> body.complete(size), 1_000 + (size >> 10), TimeUnit.MICROSECONDS);
        return body;
    }

    /**
     * Runs the sample and prints its figures.
     *
     * @param args ignored
     */
    public static void main(String[] args) {
        Figures f = run();
        System.out.println("1. Memory budget with CompletableFuture (withPermitsAsync, weight = bytes)");
        System.out.printf("   %d downloads of 16 KiB .. 8 MiB plus one of %d MiB, budget %d MiB%n",
                f.downloads(), f.hugeSize() >> 20, f.budget() >> 20);
        System.out.printf("   peak bytes in flight: %,d  (budget %,d, never above it: %b)%n",
                f.peakBytesInFlight(), f.budget(), f.peakBytesInFlight() <= f.budget());
        System.out.printf("   completed %d/%d, %,d MiB in %d ms = %.0f MiB/s%n",
                f.completed(), f.downloads(), f.totalBytes() >> 20, f.millis(), f.mibPerSecond());
        System.out.printf("   huge download completed: %b; later downloads that overtook it: %d%n",
                f.hugeCompleted(), f.startedBeforeHuge());
        System.out.printf("   permits back at the end: %,d of %,d%n", f.availableAfter(), f.budget());
    }
}
