// SPDX-License-Identifier: Apache-2.0
package dev.handoff.adaptive;

/**
 * How one use of permits ended, as {@link AdaptiveCapacity} counts it. The scoped calls classify
 * it themselves; a {@link SampledPermits} handle is a success unless marked otherwise before it is
 * closed.
 *
 * <ul>
 *   <li>{@link #SUCCESS}: the work ended normally; its hold time is a latency sample.</li>
 *   <li>{@link #FAILURE}: the work threw. Its hold time is <em>not</em> a latency sample (an error
 *       that returns at once says nothing about queueing), and it does not shrink the capacity:
 *       mark {@link #DROPPED} for errors that mean overload.</li>
 *   <li>{@link #DROPPED}: the work held permits and timed out (a {@link java.util.concurrent.TimeoutException},
 *       or a handle marked dropped). Overload: the built-in algorithm shrinks the capacity, and
 *       the hold time is never read as a fast sample.</li>
 *   <li>{@link #REJECTED}: the work never got permits (the queue was full, a wait timed out, a
 *       {@code tryAcquire} found none). Counted as a drop; it means the demand is above the
 *       capacity, and lets the capacity grow if latency allows; it never counts as latency.</li>
 * </ul>
 */
public enum Outcome {
    /** The work ended normally. */
    SUCCESS,
    /** The work threw (not a timeout). */
    FAILURE,
    /** The work held permits and timed out, or was marked dropped. */
    DROPPED,
    /** The work never got permits: rejected, or its wait timed out. */
    REJECTED
}
