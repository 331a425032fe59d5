// SPDX-License-Identifier: Apache-2.0
package dev.handoff.samples;

import dev.handoff.Semaphore;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Supplier;

/**
 * Sample 1: a memory budget with {@link CompletableFuture}s, one permit per byte.
 *
 * <p>A batch of 400 downloads of 16 KiB to 8 MiB must never hold more than {@link #BUDGET} bytes in
 * memory at once. Each one takes as many permits as it has bytes with
 * {@code withPermitsAsync(size, download)} ({@link #withinBudget}); no thread waits for them. It
 * prints the most bytes ever in flight (never above the budget), the downloads completed, the
 * throughput, and the permits back at the end.
 */
public final class MemoryBudgetSample {

    /** At most 64 MiB in flight. */
    static final long BUDGET = 64L << 20;

    static final int DOWNLOADS = 400;

    /** What the run measured; {@code millis} is the wall-clock time of the batch. */
    public record Figures(
            long budget,
            long peakBytesInFlight,
            int downloads,
            long completed,
            long totalBytes,
            long millis,
            long availableAfter) {}

    private MemoryBudgetSample() {}

    /** Runs the batch and returns its figures. */
    public static Figures run() {
        Semaphore budget = new Semaphore(BUDGET);
        AtomicLong inFlight = new AtomicLong();
        AtomicLong peak = new AtomicLong();
        try (Network network = new Network()) {
            long start = System.nanoTime();
            List<CompletableFuture<Long>> downloads = new ArrayList<>();
            for (long size : Network.sizes(DOWNLOADS)) {
                downloads.add(withinBudget(
                        budget,
                        size,
                        () -> { // weight = bytes
                            peak.accumulateAndGet(inFlight.addAndGet(size), Math::max);
                            // Counted out before the permits go back, which is when this stage completes.
                            return network.download(size).whenComplete((body, failure) -> inFlight.addAndGet(-size));
                        }));
            }
            CompletableFuture.allOf(downloads.toArray(CompletableFuture[]::new)).join();
            long millis = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start);
            return new Figures(
                    BUDGET,
                    peak.get(),
                    DOWNLOADS,
                    downloads.stream()
                            .filter(d -> !d.isCompletedExceptionally())
                            .count(),
                    downloads.stream().mapToLong(CompletableFuture::join).sum(),
                    millis,
                    budget.availablePermits());
        }
    }

    /**
     * The pattern: runs {@code download} holding {@code size} permits and gives them back exactly
     * once when the stage it returns completes, however it completes. An acquisition that fails
     * (closed, or its result cancelled or timed out before the grant) gives back nothing, as it holds
     * nothing; a {@code whenComplete} on the acquisition would give back another holder's permits.
     * That is {@link Semaphore#withPermitsAsync(long, Supplier)}, named here for the tests.
     */
    static <T> CompletableFuture<T> withinBudget(
            Semaphore budget, long size, Supplier<? extends CompletionStage<T>> download) {
        return budget.withPermitsAsync(size, download);
    }

    /** Runs the sample and prints its figures ({@code args} are ignored). */
    public static void main(String[] args) {
        Figures f = run();
        System.out.println("1. Memory budget with CompletableFuture (withPermitsAsync, weight = bytes)");
        System.out.printf(
                "   %d downloads of 16 KiB .. 8 MiB; peak bytes in flight: %,d (budget %,d, never above it: %b)%n",
                f.downloads(), f.peakBytesInFlight(), f.budget(), f.peakBytesInFlight() <= f.budget());
        System.out.printf(
                "   completed %d/%d, %,d MiB in %d ms = %.0f MiB/s%n",
                f.completed(),
                f.downloads(),
                f.totalBytes() >> 20,
                f.millis(),
                (f.totalBytes() / (double) (1 << 20)) / Math.max(f.millis(), 1) * 1000.0);
        System.out.printf("   permits back at the end: %,d of %,d%n", f.availableAfter(), f.budget());
    }
}
