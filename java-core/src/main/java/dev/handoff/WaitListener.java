// SPDX-License-Identifier: Apache-2.0
package dev.handoff;

import java.util.Arrays;
import java.util.Objects;

/**
 * Observes the waits of one {@link Semaphore}: given at construction with
 * {@link dev.handoff.PrimitiveBuilder#listener Semaphore.Builder.listener(..)}, in the manner of Caffeine's
 * {@code StatsCounter}. The metrics modules implement it ({@code handoff-micrometer}'s binder,
 * {@code handoff-jfr}'s event); implement it yourself for your own telemetry.
 *
 * <p>Only the slow path is observed: an acquisition that is granted at once (the lock-free fast
 * path, an immediate grant) calls nothing, so a semaphore with a listener is exactly as fast as one
 * without until somebody has to wait. Each acquisition that queues causes one {@link #queued} and,
 * later, exactly one {@link #settled}; one that the queue bounds refuse causes one
 * {@link #rejected}. For the live figures (queue length, queued permits, available permits) read
 * the semaphore's own snapshots: {@link Semaphore#queueLength()}, {@link Semaphore#queuedPermits()},
 * {@link Semaphore#availablePermits()}.
 *
 * <p><b>Threads.</b> Methods run on the thread that caused the event (the acquiring thread for
 * {@code queued} and {@code rejected}; the releasing, cancelling, closing or resizing thread for
 * {@code settled}), never while an internal lock is held, and may run concurrently with each
 * other. {@code queued} and {@code settled} of one wait may run in either order when the grant
 * comes at once from another thread. Keep them short and non-blocking: a listener delays the
 * wake-ups that follow it. A listener must not throw; if it does, the exception goes to the
 * thread's uncaught-exception handler and the semaphore carries on unchanged (no permit is lost
 * or created).
 *
 * <pre>{@code
 * LongAdder timedOut = new LongAdder();
 * Semaphore budget = Semaphore.builder(64 << 20)
 *         .listener(new WaitListener() {
 *             @Override
 *             public void settled(long permits, WaitOutcome outcome, long waitNanos, int waitersAhead) {
 *                 if (outcome == WaitOutcome.TIMED_OUT) timedOut.increment();
 *             }
 *         })
 *         .build();
 * }</pre>
 */
public interface WaitListener {

    /**
     * This listener was given to a primitive that has a name: called once, by the {@code build()}
     * of a {@link Semaphore.Builder}, {@link Mutex.Builder} or {@link RwLock.Builder} that has both
     * a {@code listener} and a {@code name}, before the primitive is returned (so before any other
     * method of this listener is called for it). Not called for an unnamed primitive. A listener
     * that reports the primitive's name (a metrics tag, an event field) can take it from here
     * instead of being given it again; a listener given to several primitives is called once for
     * each named one. {@link #all} forwards it to each of its listeners, in order. Does nothing by
     * default.
     *
     * <p>Unlike the other methods, an exception thrown here is not swallowed: it propagates out of
     * {@code build()}, and no primitive is built. A listener may refuse a name that way, for
     * example a second, different name when it can report only one.
     *
     * <pre>{@code
     * final class NamedLog implements WaitListener {
     *     private volatile String name = "unnamed";
     *     @Override public void attached(String name) { this.name = name; }
     *     @Override public void rejected(long permits) { log.warn("{}: shed {} permits", name, permits); }
     * }
     * Semaphore uploads = Semaphore.builder(64).name("uploads").listener(new NamedLog()).build();
     * }</pre>
     *
     * @param name the primitive's name, as given to its builder's {@code name(String)}: not blank
     * @throws RuntimeException if the listener refuses the name; {@code build()} then throws it
     */
    default void attached(String name) {}

    /**
     * An acquisition had to wait and joined the queue.
     *
     * @param permits the weight it waits for (an up-to request's minimum)
     * @param waitersAhead how many acquisitions were queued before it (the queue length at entry)
     */
    default void queued(long permits, int waitersAhead) {}

    /**
     * A queued acquisition's wait ended. Called once per {@link #queued} call.
     *
     * @param permits the weight: what it was granted if {@link WaitOutcome#GRANTED} (for an up-to
     *     request, what it took), else the weight it waited for
     * @param outcome how the wait ended
     * @param waitNanos how long it waited, from joining the queue to the end, in nanoseconds
     * @param waitersAhead how many acquisitions were queued before it when it joined
     */
    default void settled(long permits, WaitOutcome outcome, long waitNanos, int waitersAhead) {}

    /**
     * An acquisition was refused at once because the wait queue was full
     * ({@link Semaphore.Builder#maxQueuedPermits(long)}, {@link Semaphore.Builder#maxQueueLength(int)}):
     * nothing was queued, nothing is held.
     *
     * @param permits the weight it asked for (an up-to request's minimum)
     */
    default void rejected(long permits) {}

    /**
     * Returns one listener that tells each of {@code listeners}, in order. A listener that throws
     * does not keep the others from being told.
     *
     * @param listeners the listeners, at least one
     * @return a listener forwarding to all of them
     * @throws NullPointerException if {@code listeners} or one of them is null
     * @throws IllegalArgumentException if {@code listeners} is empty
     */
    static WaitListener all(WaitListener... listeners) {
        Objects.requireNonNull(listeners, "WaitListener.all(null): the listeners are null");
        WaitListener[] copy = listeners.clone();
        if (copy.length == 0) {
            throw new IllegalArgumentException("WaitListener.all(): at least one listener is needed, got 0");
        }
        for (int i = 0; i < copy.length; i++) {
            if (copy[i] == null) {
                throw new NullPointerException("WaitListener.all(" + Arrays.toString(copy) + "): listener " + i + " of "
                        + copy.length + " is null");
            }
        }
        return copy.length == 1 ? copy[0] : new ListenerCalls.AllListeners(copy);
    }
}
