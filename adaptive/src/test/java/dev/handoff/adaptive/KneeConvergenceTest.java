// SPDX-License-Identifier: Apache-2.0
package dev.handoff.adaptive;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.handoff.Semaphore;
import java.util.ArrayList;
import java.util.List;
import java.util.PriorityQueue;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;

/**
 * The built-in algorithm against a downstream with a knee, on a virtual clock: closed-loop callers
 * (each calls again as soon as its call ends) through the real {@link AdaptiveCapacity} and
 * {@link Semaphore}, a call's latency set by what is in flight when it starts. One thread runs the
 * events in time order, so the run is exact and takes a fraction of a second.
 */
class KneeConvergenceTest {
    static final long MS = 1_000_000L;
    static final long SECOND = 1_000 * MS;

    /** A closed loop of callers and a downstream: 2 ms up to {@code knee} in flight, +1 ms per call beyond. */
    static final class Knee {
        final SplittableRandom random = new SplittableRandom(7);
        final PriorityQueue<long[]> events =
                new PriorityQueue<>((x, y) -> x[0] != y[0] ? Long.compare(x[0], y[0]) : Long.compare(x[1], y[1]));
        final List<Runnable> actions = new ArrayList<>();
        final AdaptiveCapacity adaptive;
        long now = SECOND;
        long knee;
        long calls;

        Knee(long start, long knee) {
            this.knee = knee;
            this.adaptive = AdaptiveCapacity.builder(Semaphore.builder(start).build())
                    .maxCapacity(1_000)
                    .nanoClock(() -> now)
                    .build();
        }

        void at(long time, Runnable action) {
            events.add(new long[] {time, actions.size()});
            actions.add(action);
        }

        /** One caller's loop: wait for a permit, call, release, call again. */
        void call() {
            adaptive.acquireAsync(1).thenAccept(p -> {
                long inFlight = adaptive.inFlight();
                long latency = 2 * MS + Math.max(0, inFlight - knee) * MS;
                latency += random.nextLong(latency / 5 + 1) - latency / 10; // +-10%
                at(now + latency, () -> {
                    calls++;
                    p.close();
                    call();
                });
            });
        }

        /** Runs until {@code end}, reading the capacity every 100 ms into {@code capacities}. */
        void runUntil(long end, List<Long> capacities) {
            for (long step = now + 100 * MS; step <= end; step += 100 * MS) {
                long[] e;
                while ((e = events.peek()) != null && e[0] <= step) {
                    events.poll();
                    now = e[0];
                    Runnable action = actions.set((int) e[1], null);
                    action.run();
                }
                now = step;
                capacities.add(adaptive.capacity());
            }
        }
    }

    /**
     * Seconds until the capacity settled within 2x of {@code knee}: from then on, every reading at
     * most {@code 2 * knee}, and the mean of every second at least {@code knee / 2} (a probe takes
     * one window to about half of what is in use, on purpose). Infinity if it never did.
     */
    static double settledAfter(List<Long> capacities, long knee) {
        int seconds = capacities.size() / 10;
        int from = seconds;
        for (int s = seconds - 1; s >= 0; s--) {
            List<Long> second = capacities.subList(s * 10, s * 10 + 10);
            double mean = second.stream().mapToLong(Long::longValue).average().orElseThrow();
            if (mean < knee / 2.0 || second.stream().anyMatch(c -> c > 2 * knee)) {
                break;
            }
            from = s;
        }
        return from == seconds ? Double.POSITIVE_INFINITY : from;
    }

    /**
     * Built at 64 with 32 callers: the capacity is never the binding constraint, 32 are in flight,
     * and their latency is 13 times the unloaded one. The capacity must come down to the knee
     * (within 2x) in 10 s, then follow it when it halves and when it grows sixfold.
     */
    @Test
    void aCapacityAboveTheOfferedConcurrencyComesDownToTheKneeAndFollowsIt() {
        Knee k = new Knee(64, 8);
        for (int i = 0; i < 32; i++) {
            k.call();
        }
        List<Long> first = new ArrayList<>();
        k.runUntil(k.now + 20 * SECOND, first);
        double settled = settledAfter(first, 8);
        assertTrue(settled <= 10, "knee 8 from 64: settled after " + settled + " s; " + first + " " + k.adaptive);

        k.knee = 4;
        List<Long> down = new ArrayList<>();
        k.runUntil(k.now + 20 * SECOND, down);
        settled = settledAfter(down, 4);
        assertTrue(settled <= 10, "knee 8 -> 4: settled after " + settled + " s; " + down + " " + k.adaptive);

        k.knee = 24;
        List<Long> up = new ArrayList<>();
        k.runUntil(k.now + 20 * SECOND, up);
        settled = settledAfter(up, 24);
        assertTrue(settled <= 10, "knee 4 -> 24: settled after " + settled + " s; " + up + " " + k.adaptive);

        assertTrue(k.calls > 100_000, "calls " + k.calls);
        assertEquals(Math.min(32, k.adaptive.capacity()), k.adaptive.inFlight(), "every permit accounted for");
    }
}
