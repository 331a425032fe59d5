// SPDX-License-Identifier: Apache-2.0
package dev.handoff.samples;

import dev.handoff.Semaphore;
import dev.handoff.SemaphoreRejectedException;

/**
 * Sample 10: shedding load by weight: a wait queue bounded with
 * {@link Semaphore.Builder#maxQueuedPermits(long)} refuses requests at once instead of letting the
 * wait grow without limit.
 *
 * <p>Requests of weight 1 to 4 arrive every millisecond at a capacity of {@link #CAPACITY} permits,
 * each held 10 ms (the simulation of {@link KneeSimulation}): about 2.5 permits' worth arrive per ms
 * and 1.6 leave. With an unbounded queue, every request gets its permits in the end, but the queue
 * and the wait grow for as long as the overload lasts. With the queue bounded at {@link #BOUND}
 * permits, a request that would take the queued weight above it fails at once with
 * {@link SemaphoreRejectedException}, holding nothing, and the wait stays short. It prints, for
 * both, the requests shed, the most weight queued and the longest wait, in virtual milliseconds.
 */
public final class LoadSheddingSample {

    static final long CAPACITY = 16;
    static final long BOUND = 40;
    static final long DURATION_MS = 2_000;

    /** The same overload in front of an unbounded queue and of a bounded one. */
    public record Figures(KneeSimulation.Totals unbounded, KneeSimulation.Totals bounded) {}

    private LoadSheddingSample() {}

    /** Runs the overload twice, without and with the bound, and returns the figures. */
    public static Figures run() {
        return new Figures(overload(Long.MAX_VALUE), overload(BOUND));
    }

    private static KneeSimulation.Totals overload(long maxQueuedPermits) {
        KneeSimulation sim = new KneeSimulation(CAPACITY, maxQueuedPermits, CAPACITY); // never slower than 10 ms
        return sim.run(
                DURATION_MS,
                DURATION_MS,
                () -> {},
                weight -> latencyMillis -> sim.limit.release(weight),
                shedWeight -> {}); // refused: nothing held, nothing to release
    }

    /** Runs the sample and prints its figures ({@code args} are ignored). */
    public static void main(String[] args) {
        System.out.println("10. Shedding by weight: maxQueuedPermits(" + BOUND + ") against an unbounded queue");
        Figures f = run();
        for (KneeSimulation.Totals t : new KneeSimulation.Totals[] {f.unbounded(), f.bounded()}) {
            System.out.printf(
                    "   %-22s %,5d of %,d requests shed; up to %,5d permits queued; longest wait %,5d ms%n",
                    t == f.bounded() ? "queue bounded at " + BOUND + ":" : "queue unbounded:",
                    t.shed(),
                    t.arrivals(),
                    t.maxQueuedPermits(),
                    t.maxWaitMillis());
        }
        System.out.printf(
                "   admissions over the capacity: %d; every permit back at the end: %b%n",
                f.unbounded().violations() + f.bounded().violations(),
                f.unbounded().allPermitsBack() && f.bounded().allPermitsBack());
    }
}
