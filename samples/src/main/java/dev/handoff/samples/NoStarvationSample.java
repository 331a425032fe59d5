// SPDX-License-Identifier: Apache-2.0
package dev.handoff.samples;

import dev.handoff.Semaphore;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;

/**
 * Sample 2: strict FIFO: a huge request is not starved by a stream of small ones.
 *
 * <p>The batch of {@link MemoryBudgetSample}, with a download of 60 MiB as its 26th, on the same
 * 64 MiB budget: the huge download must wait until almost the whole budget is free. A semaphore
 * that let a small download in whenever its bytes fit beside the running ones would keep the budget
 * busy with the downloads behind it, and the huge one could wait for ever. Here the bytes given back
 * go to the huge download first, and no later one starts before it. It prints how many later
 * downloads overtook it (none) and how many waited behind it although their bytes were free of
 * running downloads.
 */
public final class NoStarvationSample {

    static final int HUGE_INDEX = 25;
    static final long HUGE_SIZE = 60L << 20;

    /** What the run measured. */
    public record Figures(
            int downloads, int overtook, int heldBackWhileFree, long completed, long budget, long availableAfter) {}

    private NoStarvationSample() {}

    /** Runs the batch and returns its figures. */
    public static Figures run() {
        Semaphore budget = new Semaphore(MemoryBudgetSample.BUDGET);
        long[] sizes = Network.sizes(MemoryBudgetSample.DOWNLOADS);
        sizes[HUGE_INDEX] = HUGE_SIZE;
        List<Integer> startOrder = new ArrayList<>(); // these three: on the network thread only
        long[] held = {0}; // bytes of the downloads under way
        int[] heldBackWhileFree = {0};
        try (Network network = new Network()) {
            // Submitted on the network thread, where every later grant happens: starts in grant order.
            List<CompletableFuture<Long>> downloads = network.call(() -> {
                List<CompletableFuture<Long>> all = new ArrayList<>();
                for (int i = 0; i < sizes.length; i++) {
                    int index = i;
                    int started = startOrder.size();
                    boolean free = MemoryBudgetSample.BUDGET - held[0] >= sizes[i];
                    all.add(budget.withPermitsAsync(sizes[i], () -> {
                        startOrder.add(index);
                        held[0] += sizes[index];
                        return network.download(sizes[index]).whenComplete((body, failure) -> held[0] -= sizes[index]);
                    }));
                    if (free && startOrder.size() == started) {
                        heldBackWhileFree[0]++; // free of running downloads, yet behind a waiting one
                    }
                }
                return all;
            });
            CompletableFuture.allOf(downloads.toArray(CompletableFuture[]::new)).join();
            int overtook = (int) startOrder.subList(0, startOrder.indexOf(HUGE_INDEX)).stream()
                    .filter(index -> index > HUGE_INDEX)
                    .count();
            return new Figures(
                    sizes.length,
                    overtook,
                    heldBackWhileFree[0],
                    downloads.stream()
                            .filter(d -> !d.isCompletedExceptionally())
                            .count(),
                    MemoryBudgetSample.BUDGET,
                    budget.availablePermits());
        }
    }

    /** Runs the sample and prints its figures ({@code args} are ignored). */
    public static void main(String[] args) {
        Figures f = run();
        System.out.println("2. Strict FIFO: a 60 MiB download is not starved by the small ones behind it");
        System.out.printf(
                "   %d downloads on a %d MiB budget; later downloads that overtook the huge one: %d%n",
                f.downloads(), f.budget() >> 20, f.overtook());
        System.out.printf(
                "   downloads that waited behind it although no running download held their bytes: %d%n",
                f.heldBackWhileFree());
        System.out.printf(
                "   completed %d/%d; permits back at the end: %,d of %,d%n",
                f.completed(), f.downloads(), f.availableAfter(), f.budget());
    }
}
