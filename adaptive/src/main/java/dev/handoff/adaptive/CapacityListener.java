// SPDX-License-Identifier: Apache-2.0
package dev.handoff.adaptive;

/**
 * Hears every change of an adaptive capacity: the old value, the new one and why. Set it with
 * {@link AdaptiveCapacity.Builder#listener(CapacityListener)} (or the fair share's builder); the
 * metrics of {@code handoff-micrometer} are one.
 *
 * <pre>{@code
 * AdaptiveCapacity adaptive = AdaptiveCapacity.builder(semaphore)
 *         .listener((from, to, reason) -> log.info("capacity {} -> {} ({})", from, to, reason))
 *         .build();
 * }</pre>
 *
 * <p>It is called after the change is made (the semaphore already has the new capacity), outside
 * every lock of this module and of a Netflix {@code Limit} whose {@code onSample} is
 * {@code synchronized}, on the thread whose sample caused the change; calls are never concurrent
 * and come in the order of the changes. Keep it fast: it runs on a caller's thread. A listener that
 * throws changes nothing: the exception goes to the thread's uncaught-exception handler, and the
 * capacity, the permits and the later calls to the listener carry on.
 */
@FunctionalInterface
public interface CapacityListener {

    /** Why the capacity changed. */
    enum Reason {
        /** Latency within tolerance of the baseline and the capacity in use: it grew. */
        GROWTH,
        /** Latency above tolerance of the baseline: it shrank toward where latency is back within it. */
        LATENCY_CUT,
        /** Calls timed out (drops): it shrank by a fifth of what was in use. */
        DROP_CUT,
        /** A probe window started (about half of what is in flight) or ended (back to where it was). */
        PROBE,
        /** The starting capacity was outside {@code minCapacity..maxCapacity} and was clamped at build time. */
        BOUNDS,
        /** A Netflix {@code Limit} set by {@code Builder.limit(..)} moved its limit. */
        LIMIT
    }

    /**
     * The capacity changed from {@code oldCapacity} to {@code newCapacity} (they differ).
     *
     * @param oldCapacity the capacity before
     * @param newCapacity the capacity now
     * @param reason why it changed
     */
    void capacityChanged(long oldCapacity, long newCapacity, Reason reason);
}
