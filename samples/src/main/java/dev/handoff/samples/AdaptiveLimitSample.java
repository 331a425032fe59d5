// SPDX-License-Identifier: Apache-2.0
package dev.handoff.samples;

import dev.handoff.Semaphore;
import dev.handoff.SemaphoreRejectedException;
import java.util.ArrayList;
import java.util.List;
import java.util.PriorityQueue;
import java.util.SplittableRandom;

/**
 * An adaptive concurrency limit: a downstream whose latency rises with the load it is given, an
 * AIMD loop that resizes the semaphore (additive increase with {@link Semaphore#addCapacity(long)}
 * while latency is fine, multiplicative decrease with {@link Semaphore#setCapacity(long)} when it
 * is not), and a wait queue bounded by
 * weight ({@link Semaphore.Builder#maxQueuedPermits(long)}) that sheds requests once it is full.
 *
 * <p>It runs as a discrete-event simulation on one thread with a virtual clock, so it is fast and
 * gives the same figures every time: requests of weight 1 to 4 arrive every millisecond; each one
 * is admitted through the callback face ({@code acquireThen(n, waker)}: the waker starts the call when
 * the permits are granted) and released when the downstream answers. The downstream answers in
 * 10 ms while it has at most 30 permits' worth of work in flight, and 1 ms slower for each permit
 * above that. Every 50 ms the controller looks at the latency of the calls that finished in that
 * window.
 *
 * <p>What it shows: the capacity settles around what the downstream can take (about 30) although
 * it starts far below and overshoots; when it shrinks below what is in flight, nothing is revoked
 * (the debt is paid by the next releases) and no request is admitted until it is; the bounded
 * queue sheds by weight instead of letting latency grow without limit; and at every admission the
 * weight in flight is within the capacity in force at that moment.
 */
public final class AdaptiveLimitSample {

    /** Virtual milliseconds simulated. */
    static final long DURATION_MS = 3_000;
    static final long TICK_MS = 50;
    static final long TARGET_LATENCY_MS = 14;
    static final long KNEE = 30;
    static final long INITIAL_LIMIT = 8;
    static final long MAX_QUEUED_PERMITS = 40;

    private AdaptiveLimitSample() {
    }

    /** What a run measured. */
    public record Figures(long arrivals, long admitted, long completed, long shed, long violations,
                          long maxInFlight, long minCapacity, long maxCapacity, long finalCapacity,
                          long decreases, long increases, boolean allPermitsBack, List<String> timeline) {
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
        private final SplittableRandom random = new SplittableRandom(42);
        private final List<String> timeline = new ArrayList<>();
        private long now;
        private long seq;
        private long inFlight;
        private long arrivals;
        private long admitted;
        private long completed;
        private long shed;
        private long violations;
        private long maxInFlight;
        private long minCapacity = Long.MAX_VALUE;
        private long maxCapacity;
        private long decreases;
        private long increases;
        private long windowLatencySum;
        private long windowCalls;

        Figures run() {
            for (long t = 0; t < DURATION_MS; t++) {
                long at = t;
                schedule(at, this::arrive);
            }
            for (long t = TICK_MS; t <= DURATION_MS; t += TICK_MS) {
                schedule(t, this::adjust);
            }
            Event e;
            while ((e = events.poll()) != null) {
                now = e.at;
                e.action.run();
            }
            boolean allBack = limit.queueLength() == 0 && limit.availablePermits() == limit.capacity();
            return new Figures(arrivals, admitted, completed, shed, violations, maxInFlight, minCapacity,
                    maxCapacity, limit.capacity(), decreases, increases, allBack, timeline);
        }

        private void schedule(long at, Runnable action) {
            events.add(new Event(at, seq++, action));
        }

        /** A request arrives: admitted now, queued, or shed if the queue is full by weight. */
        private void arrive() {
            arrivals++;
            long weight = 1 + random.nextInt(4);
            try {
                limit.acquireThen(weight, () -> start(weight)); // the waker: called once, on the grant
            } catch (SemaphoreRejectedException full) {
                shed++;
            }
        }

        /** Granted (at once, or later by a release or a resize): the call goes downstream. */
        private void start(long weight) {
            admitted++;
            inFlight += weight;
            maxInFlight = Math.max(maxInFlight, inFlight);
            if (inFlight > limit.capacity()) {
                violations++; // would mean a permit was created: never happens
            }
            long latency = 10 + Math.max(0, inFlight - KNEE);
            long started = now;
            schedule(now + latency, () -> finish(weight, started));
        }

        private void finish(long weight, long started) {
            inFlight -= weight;
            completed++;
            windowLatencySum += now - started;
            windowCalls++;
            limit.release(weight); // pays any debt first, then the queue, in FIFO order
        }

        /** The AIMD controller: +2 while latency is fine, halve when it is not. */
        private void adjust() {
            long c = limit.capacity();
            long avg = windowCalls == 0 ? 0 : windowLatencySum / windowCalls;
            long next;
            if (windowCalls > 0 && avg > TARGET_LATENCY_MS) {
                next = Math.max(4, c / 2);
                limit.setCapacity(next);       // may shrink below what is in flight: debt, nothing revoked
                decreases++;
            } else {
                next = limit.addCapacity(2);   // atomic: no read-modify-write of capacity()
                increases++;
            }
            minCapacity = Math.min(minCapacity, next);
            maxCapacity = Math.max(maxCapacity, next);
            if (now % 250 == 0) {
                timeline.add(String.format("t=%4d ms  capacity %3d  in flight %3d  queued %3d  avg latency %2d ms  shed so far %d",
                        now, next, inFlight, limit.queuedPermits(), avg, shed));
            }
            windowLatencySum = 0;
            windowCalls = 0;
        }
    }

    /**
     * Prints the capacity over time and the totals.
     *
     * @param args ignored
     */
    public static void main(String[] args) {
        System.out.println("== Adaptive limit: AIMD over addCapacity and setCapacity, shedding by weight ==");
        Figures f = run();
        f.timeline().forEach(line -> System.out.println("  " + line));
        System.out.printf("  %d requests: %d admitted, %d shed by the queue bound (%d permits), %d completed%n",
                f.arrivals(), f.admitted(), f.shed(), MAX_QUEUED_PERMITS, f.completed());
        System.out.printf("  capacity between %d and %d (%d increases, %d decreases), %d at the end%n",
                f.minCapacity(), f.maxCapacity(), f.increases(), f.decreases(), f.finalCapacity());
        System.out.printf("  admissions over the capacity in force: %d; every permit back at the end: %s%n",
                f.violations(), f.allPermitsBack());
    }
}
