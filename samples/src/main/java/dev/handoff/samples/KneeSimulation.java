// SPDX-License-Identifier: Apache-2.0
package dev.handoff.samples;

import dev.handoff.Semaphore;
import dev.handoff.SemaphoreRejectedException;
import java.util.PriorityQueue;
import java.util.SplittableRandom;
import java.util.function.LongConsumer;
import java.util.function.LongFunction;

/**
 * Scaffolding of the capacity samples: a discrete-event simulation on one thread with a virtual
 * clock, so a run is fast and gives the same figures every time. A request of weight 1 to 4
 * arrives every millisecond and asks {@link #limit} for its weight with
 * {@code acquireThen(n, waker)}, whose waker sends it downstream; a full wait queue sheds it. The
 * downstream answers in 10 ms while it has at most {@link #knee} permits' worth of work in flight,
 * and 1 ms slower for each permit above that. It notes the waits and the queued weight, checks at
 * every admission that the weight in flight is within the capacity in force, and notes the capacity
 * every tick.
 */
final class KneeSimulation {

    /** A granted call: told its latency when the downstream answers, it gives its permits back. */
    interface Call {
        void answered(long latencyMillis);
    }

    /** The counts of a run; {@code rises} and {@code falls} are capacity changes seen from tick to tick. */
    record Totals(
            long arrivals,
            long admitted,
            long completed,
            long shed,
            long violations,
            long maxInFlight,
            long maxWaitMillis,
            long maxQueuedPermits,
            long minCapacity,
            long maxCapacity,
            long rises,
            long falls,
            boolean allPermitsBack) {}

    private record Event(long at, long seq, Runnable action) {}

    final Semaphore limit;
    long now;
    long knee;
    long inFlight;
    private final PriorityQueue<Event> events = new PriorityQueue<>(
            (a, b) -> a.at != b.at ? Long.compare(a.at, b.at) : Long.compare(a.seq, b.seq)); // ties: in order
    private final SplittableRandom random = new SplittableRandom(42);
    private long seq;
    private long arrivals, admitted, completed, shed, violations, maxInFlight, maxWait, maxQueued, rises, falls;
    private long maxCapacity;
    private long minCapacity = Long.MAX_VALUE;
    private long lastCapacity;

    KneeSimulation(long initialCapacity, long maxQueuedPermits, long knee) {
        this.limit = Semaphore.builder(initialCapacity)
                .maxQueuedPermits(maxQueuedPermits)
                .build();
        this.knee = knee;
        this.lastCapacity = initialCapacity;
    }

    /**
     * Runs {@code millis} of arrivals and a tick every {@code tickMillis}, then until every call is
     * answered; {@code granted} starts the call of a request when its waker runs, {@code onShed}
     * hears of a request the queue refused.
     */
    Totals run(long millis, long tickMillis, Runnable tick, LongFunction<Call> granted, LongConsumer onShed) {
        for (long t = 0; t < millis; t++) {
            schedule(t, () -> arrive(granted, onShed));
        }
        for (long t = tickMillis; t <= millis; t += tickMillis) {
            schedule(t, () -> {
                tick.run();
                long c = limit.capacity();
                rises += c > lastCapacity ? 1 : 0;
                falls += c < lastCapacity ? 1 : 0;
                lastCapacity = c;
                minCapacity = Math.min(minCapacity, c);
                maxCapacity = Math.max(maxCapacity, c);
            });
        }
        for (Event e = events.poll(); e != null; e = events.poll()) {
            now = e.at;
            e.action.run();
        }
        return new Totals(
                arrivals,
                admitted,
                completed,
                shed,
                violations,
                maxInFlight,
                maxWait,
                maxQueued,
                minCapacity,
                maxCapacity,
                rises,
                falls,
                limit.queueLength() == 0 && limit.availablePermits() == limit.capacity());
    }

    void schedule(long at, Runnable action) {
        events.add(new Event(at, seq++, action));
    }

    private void arrive(LongFunction<Call> granted, LongConsumer onShed) {
        arrivals++;
        long weight = 1 + random.nextInt(4);
        long arrived = now;
        try {
            limit.acquireThen(
                    weight,
                    () -> { // the waker: called once, on the grant
                        maxWait = Math.max(maxWait, now - arrived);
                        start(weight, granted.apply(weight));
                    });
            maxQueued = Math.max(maxQueued, limit.queuedPermits());
        } catch (SemaphoreRejectedException full) {
            shed++;
            onShed.accept(weight);
        }
    }

    /** Granted (at once, or later by a release or a resize): the call goes downstream. */
    private void start(long weight, Call call) {
        admitted++;
        inFlight += weight;
        maxInFlight = Math.max(maxInFlight, inFlight);
        violations += inFlight > limit.capacity() ? 1 : 0; // would mean a permit was created: never happens
        long latency = 10 + Math.max(0, inFlight - knee);
        schedule(now + latency, () -> {
            inFlight -= weight;
            completed++;
            call.answered(latency);
        });
    }
}
