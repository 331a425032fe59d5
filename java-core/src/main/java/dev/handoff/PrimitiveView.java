// SPDX-License-Identifier: Apache-2.0
package dev.handoff;

import org.jspecify.annotations.Nullable;

/**
 * What every primitive of this library shows about itself, read-only: its name, its wait queue and
 * whether it is closed. {@link Semaphore}, {@link Mutex}, {@link RwLock} and
 * {@link FairShareSemaphore} implement it, so monitoring code (the metrics module's
 * {@code SemaphoreMetrics.monitor(registry, primitive)}, a health check, a dashboard) handles them
 * alike. Every method is a snapshot: it never blocks, never takes a lock and never queues.
 *
 * <pre>{@code
 * static String describe(PrimitiveView p) {
 *     return p.name() + ": " + p.queueLength() + " waiting for " + p.queuedPermits() + " permits"
 *             + (p.isClosed() ? " (closed)" : "");
 * }
 * }</pre>
 */
public interface PrimitiveView {

    /**
     * Returns the name given to the builder, or {@code null} if none was.
     *
     * @return the name, or {@code null}
     */
    @Nullable
    String name();

    /**
     * Returns how many acquisitions are waiting. O(1).
     *
     * @return the number of waiters, {@code >= 0}
     */
    int queueLength();

    /**
     * Returns the permits the waiting acquisitions wait for, in total (saturated at
     * {@code Long.MAX_VALUE}). A lock's waiter counts one permit, except a read-write lock's
     * writer, which counts {@link RwLock#maxReaders()}. O(1).
     *
     * @return the queued weight, {@code >= 0}
     */
    long queuedPermits();

    /**
     * Returns whether the primitive was closed.
     *
     * @return {@code true} once {@code close()} was called
     */
    boolean isClosed();
}
