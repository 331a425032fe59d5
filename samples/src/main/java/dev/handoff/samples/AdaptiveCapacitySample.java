// SPDX-License-Identifier: Apache-2.0
package dev.handoff.samples;

import dev.handoff.Semaphore;
import dev.handoff.SemaphoreRejectedException;
import dev.handoff.adaptive.AdaptiveCapacity;
import dev.handoff.adaptive.SampledPermits;
import java.util.ArrayList;
import java.util.List;
import java.util.PriorityQueue;
import java.util.SplittableRandom;

/**
 * An adaptive concurrency limit with handoff-adaptive (the same downstream as
 * {@link AdaptiveLimitSample}, whose AIMD loop is written by hand): a downstream whose latency
 * rises with the load it is given, an {@link AdaptiveCapacity} that resizes the semaphore from the measured latency of every call (it
 * grows while latency stays near its baseline and the permits are in use, and shrinks when latency
 * rises or calls time out), and a wait queue bounded by weight
 * ({@link Semaphore.Builder#maxQueuedPermits(long)}) that sheds requests once it is full.
 *
 * <p>It runs as a discrete-event simulation on one thread with a virtual clock (given to the
 * adaptive capacity with {@link AdaptiveCapacity.Builder#nanoClock}), so it is fast and gives the
 * same figures every time: requests of weight 1 to 4 arrive every millisecond; each one is
 * admitted through the callback face ({@code acquireThen(n, waker)}: the waker starts the sample
 * with {@link AdaptiveCapacity#startSample(long)} and the call) and the sampled permits are closed
 * when the downstream answers. The downstream answers in 10 ms while it has at most 30 permits'
 * worth of work in flight, and 1 ms slower for each permit above that; from the middle of the run
 * on, its knee is at 15 (it lost half its capacity). A call that takes more than 40 ms is marked
 * dropped (the caller's timeout).
 *
 * <p>What it shows: the capacity settles near what the downstream can take, and follows it when
 * it halves, without a hand-written controller; when it shrinks below what is in flight, nothing
 * is revoked (the debt is paid by the next releases) and no request is admitted until it is; the
 * bounded queue sheds by weight instead of letting latency grow without limit; and at every
 * admission the weight in flight is within the capacity in force at that moment.
 */
public final class AdaptiveCapacitySample {

    /** Virtual milliseconds simulated. */
    static final long DURATION_MS = 6_000;
    static final long TICK_MS = 50;
    static final long KNEE = 30;
    static final long KNEE_AFTER = 15;
    static final long TIMEOUT_MS = 40;
    static final long INITIAL_LIMIT = 8;
    static final long MAX_QUEUED_PERMITS = 40;

    private AdaptiveCapacitySample() {
    }

    /** What a run measured. */
    public record Figures(long arrivals, long admitted, long completed, long shed, long violations,
                          long maxInFlight, long minCapacity, long maxCapacity, long finalCapacity,
                          long decreases, long increases, long dropped, long capacityBeforeChange,
                          boolean allPermitsBack, List<String> timeline) {
    }

    /** One simulation event at a virtual time; ties run in creation order. */
    private record Event(long at, long seq, Runnable action) {
    }

    /**
     * Runs the simulation, then lets every admitted and queued request finish.
     *
     * @return the figures
     */
    public static Figures run() {
        return new Simulation().run();
    }

    private static final class Simulation {
        private final PriorityQueue<Event> events = new PriorityQueue<>(
                (a, b) -> a.at != b.at ? Long.compare(a.at, b.at) : Long.compare(a.seq, b.seq));
        private final Semaphore limit = Semaphore.builder(INITIAL_LIMIT).maxQueuedPermits(MAX_QUEUED_PERMITS).build();
        private final AdaptiveCapacity adaptive = AdaptiveCapacity.builder(limit)
                .minCapacity(4)                       // the heaviest request: it must always fit
                .maxCapacity(200)
                .nanoClock(() -> this.now * 1_000_000L) // the virtual clock, in nanoseconds
                .build();
        private final SplittableRandom random = new SplittableRandom(42);
        private final List<String> timeline = new ArrayList<>();
        private long now;
        private long seq;
        private long knee = KNEE;
        private long inFlight;
        private long arrivals;
        private long admitted;
        private long completed;
        private long shed;
        private long dropped;
        private long violations;
        private long maxInFlight;
        private long minCapacity = Long.MAX_VALUE;
        private long maxCapacity;
        private long decreases;
        private long increases;
        private long lastCapacity = INITIAL_LIMIT;
        private long capacityBeforeChange;

        Figures run() {
            for (long t = 0; t < DURATION_MS; t++) {
                schedule(t, this::arrive);
            }
            for (long t = TICK_MS; t <= DURATION_MS; t += TICK_MS) {
                schedule(t, this::observe);
            }
            schedule(DURATION_MS / 2, () -> {
                capacityBeforeChange = adaptive.capacity();
                knee = KNEE_AFTER;
            });
            Event e;
            while ((e = events.poll()) != null) {
                now = e.at;
                e.action.run();
            }
            boolean allBack = limit.queueLength() == 0 && limit.availablePermits() == limit.capacity()
                    && adaptive.inFlight() == 0;
            return new Figures(arrivals, admitted, completed, shed, violations, maxInFlight, minCapacity,
                    maxCapacity, adaptive.capacity(), decreases, increases, dropped, capacityBeforeChange, allBack, timeline);
        }

        private void schedule(long at, Runnable action) {
            events.add(new Event(at, seq++, action));
        }

        /** A request arrives: admitted now, queued, or shed if the queue is full by weight. */
        private void arrive() {
            arrivals++;
            long weight = 1 + random.nextInt(4);
            try {
                // The waker: called once, on the grant. The sample starts there.
                limit.acquireThen(weight, () -> start(weight, adaptive.startSample(weight)));
            } catch (SemaphoreRejectedException full) {
                shed++;
                adaptive.recordRejection(weight); // demand above the capacity
            }
        }

        /** Granted (at once, or later by a release or a resize): the call goes downstream. */
        private void start(long weight, SampledPermits permits) {
            admitted++;
            inFlight += weight;
            maxInFlight = Math.max(maxInFlight, inFlight);
            if (inFlight > limit.capacity()) {
                violations++; // would mean a permit was created: never happens
            }
            long latency = 10 + Math.max(0, inFlight - knee);
            schedule(now + latency, () -> finish(weight, latency, permits));
        }

        private void finish(long weight, long latency, SampledPermits permits) {
            inFlight -= weight;
            completed++;
            if (latency > TIMEOUT_MS) {
                dropped++;
                permits.markDropped(); // the caller gave up: overload
            }
            permits.close(); // releases (paying any debt first, then the queue) and samples
        }

        private void observe() {
            long c = adaptive.capacity();
            if (c > lastCapacity) {
                increases++;
            } else if (c < lastCapacity) {
                decreases++;
            }
            lastCapacity = c;
            minCapacity = Math.min(minCapacity, c);
            maxCapacity = Math.max(maxCapacity, c);
            if (now % 500 == 0) {
                timeline.add(String.format("t=%4d ms  knee %2d  capacity %3d  in flight %3d  queued %3d  shed so far %d",
                        now, knee, c, inFlight, limit.queuedPermits(), shed));
            }
        }
    }

    /**
     * Prints the capacity over time and the totals.
     *
     * @param args ignored
     */
    public static void main(String[] args) {
        System.out.println("== Adaptive capacity: handoff-adaptive sizes the semaphore from measured latency ==");
        Figures f = run();
        f.timeline().forEach(line -> System.out.println("  " + line));
        System.out.printf("  %d requests: %d admitted, %d shed by the queue bound (%d permits), %d completed, %d timed out%n",
                f.arrivals(), f.admitted(), f.shed(), MAX_QUEUED_PERMITS, f.completed(), f.dropped());
        System.out.printf("  capacity between %d and %d (%d rises, %d falls seen every %d ms), %d before the knee halved, %d at the end%n",
                f.minCapacity(), f.maxCapacity(), f.increases(), f.decreases(), TICK_MS, f.capacityBeforeChange(),
                f.finalCapacity());
        System.out.printf("  admissions over the capacity in force: %d; every permit back at the end: %s%n",
                f.violations(), f.allPermitsBack());
    }
}
