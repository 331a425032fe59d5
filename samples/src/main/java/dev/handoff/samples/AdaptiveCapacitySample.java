// SPDX-License-Identifier: Apache-2.0
package dev.handoff.samples;

import dev.handoff.adaptive.AdaptiveCapacity;
import dev.handoff.adaptive.SampledPermits;
import java.util.ArrayList;
import java.util.List;

/**
 * Sample 12: a capacity that sizes itself, with handoff-adaptive, in front of the downstream of
 * {@link AdaptiveLimitSample}, whose knee halves from 30 to 15 in the middle of the run. An
 * {@link AdaptiveCapacity} on the simulation's virtual clock resizes the semaphore from the latency
 * of every call: the waker starts a sample ({@link AdaptiveCapacity#startSample(long)}), the answer
 * closes it, marked dropped past the caller's 40 ms timeout, and a shed request counts as demand.
 *
 * <p>It prints the capacity over time, settling near the knee and following it down without a
 * hand-written controller, no admission over the capacity in force, and every permit back.
 */
public final class AdaptiveCapacitySample {

    static final long DURATION_MS = 6_000;
    static final long TICK_MS = 50;
    static final long KNEE = 30;
    static final long KNEE_AFTER = 15;
    static final long TIMEOUT_MS = 40;

    /** What a run measured: the capacity just before the knee halved, at the end, and every 500 ms. */
    public record Figures(
            KneeSimulation.Totals totals,
            long dropped,
            long capacityBeforeChange,
            long finalCapacity,
            long adaptiveInFlight,
            List<String> timeline) {}

    private AdaptiveCapacitySample() {}

    /** Runs the simulation, then lets every admitted and queued request finish, and returns the figures. */
    public static Figures run() {
        KneeSimulation sim = new KneeSimulation(8, 40, KNEE);
        AdaptiveCapacity adaptive = AdaptiveCapacity.builder(sim.limit)
                .minCapacity(4) // the heaviest request: it must always fit
                .maxCapacity(200)
                .nanoClock(() -> sim.now * 1_000_000L) // the virtual clock, in nanoseconds
                .build();
        List<String> timeline = new ArrayList<>();
        long[] dropped = {0};
        long[] beforeChange = {0};
        sim.schedule(DURATION_MS / 2, () -> {
            beforeChange[0] = adaptive.capacity();
            sim.knee = KNEE_AFTER;
        });
        KneeSimulation.Totals totals = sim.run(
                DURATION_MS,
                TICK_MS,
                () -> {
                    if (sim.now % 500 == 0) {
                        timeline.add(String.format(
                                "t=%4d ms  knee %2d  capacity %3d  in flight %3d  queued %3d",
                                sim.now, sim.knee, adaptive.capacity(), sim.inFlight, sim.limit.queuedPermits()));
                    }
                },
                weight -> {
                    SampledPermits permits = adaptive.startSample(weight); // times the call from the grant on
                    return latencyMillis -> {
                        if (latencyMillis > TIMEOUT_MS) {
                            dropped[0]++;
                            permits.markDropped(); // the caller gave up: overload
                        }
                        permits.close(); // releases (debt first, then the queue) and samples
                    };
                },
                adaptive::recordRejection); // shed: demand above the capacity
        return new Figures(totals, dropped[0], beforeChange[0], adaptive.capacity(), adaptive.inFlight(), timeline);
    }

    /** Prints the capacity over time and the totals ({@code args} are ignored). */
    public static void main(String[] args) {
        System.out.println("12. Adaptive capacity: handoff-adaptive sizes the semaphore from measured latency");
        Figures f = run();
        KneeSimulation.Totals t = f.totals();
        f.timeline().forEach(line -> System.out.println("   " + line));
        System.out.printf(
                "   %d requests: %d admitted, %d shed by the queue bound, %d completed, %d timed out%n",
                t.arrivals(), t.admitted(), t.shed(), t.completed(), f.dropped());
        System.out.printf(
                "   capacity between %d and %d, %d before the knee halved, %d at the end%n",
                t.minCapacity(), t.maxCapacity(), f.capacityBeforeChange(), f.finalCapacity());
        System.out.printf(
                "   admissions over the capacity in force: %d; every permit back at the end: %b%n",
                t.violations(), t.allPermitsBack() && f.adaptiveInFlight() == 0);
    }
}
