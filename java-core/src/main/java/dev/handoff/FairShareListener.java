// SPDX-License-Identifier: Apache-2.0
package dev.handoff;

import java.util.Objects;

/**
 * Observes the waits of one {@link FairShareSemaphore}, with the key of each: given at construction
 * with {@link PrimitiveBuilder#listener FairShareSemaphore.Builder.listener(..)}. The same events as a
 * {@link WaitListener}, one per wait, and the same rules: only the slow path is observed (a grant at
 * once calls nothing); each acquisition that queues causes one {@link #queued} and later exactly one
 * {@link #settled}; one that the queue bounds refuse causes one {@link #rejected}. Methods run on the
 * thread that caused the event, never while an internal lock is held; keep them short; one that
 * throws is reported to the thread's uncaught-exception handler and changes nothing.
 *
 * <p>To feed an existing {@link WaitListener} (a metrics binder) and drop the key, use
 * {@link #ignoringKey(WaitListener)}.
 *
 * <pre>{@code
 * Map<String, LongAdder> waits = new ConcurrentHashMap<>();
 * FairShareSemaphore<String> pool = FairShareSemaphore.<String>builder(64)
 *         .listener(new FairShareListener<String>() {
 *             @Override
 *             public void queued(String tenant, long permits, int waitersAhead) {
 *                 waits.computeIfAbsent(tenant, t -> new LongAdder()).increment();
 *             }
 *         })
 *         .build();
 * }</pre>
 *
 * @param <K> the key type
 */
public interface FairShareListener<K> {

    /**
     * An acquisition for {@code key} had to wait and joined its key's queue.
     *
     * @param key the key it waits for
     * @param permits the weight it waits for
     * @param waitersAhead how many acquisitions (of every key) were waiting when it joined
     */
    default void queued(K key, long permits, int waitersAhead) {}

    /**
     * A queued acquisition's wait ended. Called once per {@link #queued} call.
     *
     * @param key the key it waited for
     * @param permits the weight it waited for (and, if {@link WaitOutcome#GRANTED}, was granted)
     * @param outcome how the wait ended
     * @param waitNanos how long it waited, in nanoseconds
     * @param waitersAhead how many acquisitions were waiting when it joined
     */
    default void settled(K key, long permits, WaitOutcome outcome, long waitNanos, int waitersAhead) {}

    /**
     * An acquisition for {@code key} was refused at once because a queue bound was reached
     * ({@link FairShareSemaphore.Builder#maxQueuedPermits(long)},
     * {@link FairShareSemaphore.Builder#maxQueueLength(int)},
     * {@link FairShareSemaphore.Builder#maxQueuedPermitsPerKey(long)}): nothing queued, nothing held.
     *
     * @param key the key it asked for
     * @param permits the weight it asked for
     */
    default void rejected(K key, long permits) {}

    /**
     * Returns a listener that tells {@code listener} every event without the key, so that a
     * {@link WaitListener} written for a {@link Semaphore} (a metrics binder, a JFR event) observes
     * a fair share as one semaphore.
     *
     * <pre>{@code
     * FairShareSemaphore.<String>builder(64).listener(FairShareListener.ignoringKey(metrics)).build();
     * }</pre>
     *
     * @param listener the listener to tell
     * @param <K> the key type
     * @return a listener forwarding to {@code listener}
     * @throws NullPointerException if {@code listener} is null
     */
    static <K> FairShareListener<K> ignoringKey(WaitListener listener) {
        Objects.requireNonNull(listener, "ignoringKey(null): the listener is null");
        return new FairShareListener<K>() {
            @Override
            public void queued(K key, long permits, int waitersAhead) {
                listener.queued(permits, waitersAhead);
            }

            @Override
            public void settled(K key, long permits, WaitOutcome outcome, long waitNanos, int waitersAhead) {
                listener.settled(permits, outcome, waitNanos, waitersAhead);
            }

            @Override
            public void rejected(K key, long permits) {
                listener.rejected(permits);
            }

            @Override
            public String toString() {
                return "FairShareListener.ignoringKey(" + listener + ")";
            }
        };
    }
}
