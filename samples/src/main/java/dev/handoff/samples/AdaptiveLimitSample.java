// SPDX-License-Identifier: Apache-2.0
package dev.handoff.samples;

import dev.handoff.Semaphore;
import java.util.ArrayList;
import java.util.List;

/**
 * Sample 11: resizing at run time, by hand: an AIMD loop over {@link Semaphore#addCapacity(long)}
 * (additive increase while latency is fine) and {@link Semaphore#setCapacity(long)} (multiplicative
 * decrease when it is not), in front of a downstream that slows down above 30 permits in flight
 * (the simulation of {@link KneeSimulation}, with a wait queue bounded at 40 permits). Every 50 ms
 * the loop looks at the mean latency of the calls answered in that window.
 *
 * <p>What it shows, with the capacity over time and the totals it prints: the capacity settles
 * around what the downstream can take although it starts far below and overshoots; when it shrinks
 * below what is in flight nothing is revoked (the next releases pay the debt first), so no
 * admission ever exceeds the capacity in force; and every permit is back at the end.
 */
public final class AdaptiveLimitSample {

    static final long DURATION_MS = 3_000;
    static final long TICK_MS = 50;
    static final long TARGET_LATENCY_MS = 14;
    static final long MAX_QUEUED_PERMITS = 40;

    /** What a run measured, and the capacity every 250 ms. */
    public record Figures(KneeSimulation.Totals totals, long finalCapacity, List<String> timeline) {}

    private AdaptiveLimitSample() {}

    /** Runs the simulation, then lets every admitted and queued request finish, and returns the figures. */
    public static Figures run() {
        KneeSimulation sim = new KneeSimulation(8, MAX_QUEUED_PERMITS, 30);
        Semaphore limit = sim.limit;
        List<String> timeline = new ArrayList<>();
        long[] window = {0, 0}; // latency sum, calls
        KneeSimulation.Totals totals = sim.run(
                DURATION_MS,
                TICK_MS,
                () -> {
                    long avg = window[1] == 0 ? 0 : window[0] / window[1];
                    if (window[1] > 0 && avg > TARGET_LATENCY_MS) {
                        limit.setCapacity(
                                Math.max(4, limit.capacity() / 2)); // below what is in flight: a debt, nothing revoked
                    } else {
                        limit.addCapacity(2); // atomic: no read-modify-write of capacity()
                    }
                    if (sim.now % 250 == 0) {
                        timeline.add(String.format(
                                "t=%4d ms  capacity %3d  in flight %3d  queued %3d  avg latency %2d ms",
                                sim.now, limit.capacity(), sim.inFlight, limit.queuedPermits(), avg));
                    }
                    window[0] = 0;
                    window[1] = 0;
                },
                weight -> latencyMillis -> {
                    window[0] += latencyMillis;
                    window[1]++;
                    limit.release(weight); // pays any debt first, then the queue, in FIFO order
                },
                shedWeight -> {});
        return new Figures(totals, limit.capacity(), timeline);
    }

    /** Prints the capacity over time and the totals ({@code args} are ignored). */
    public static void main(String[] args) {
        System.out.println("11. Adaptive limit by hand: AIMD over addCapacity and setCapacity");
        Figures f = run();
        KneeSimulation.Totals t = f.totals();
        f.timeline().forEach(line -> System.out.println("   " + line));
        System.out.printf(
                "   %d requests: %d admitted, %d shed by the queue bound (%d permits), %d completed%n",
                t.arrivals(), t.admitted(), t.shed(), MAX_QUEUED_PERMITS, t.completed());
        System.out.printf(
                "   capacity between %d and %d (%d rises, %d falls), %d at the end%n",
                t.minCapacity(), t.maxCapacity(), t.rises(), t.falls(), f.finalCapacity());
        System.out.printf(
                "   admissions over the capacity in force: %d; every permit back at the end: %b%n",
                t.violations(), t.allPermitsBack());
    }
}
