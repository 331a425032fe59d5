// SPDX-License-Identifier: Apache-2.0
package dev.handoff.adaptive;

/**
 * What turns samples into a capacity: the built-in {@link BaselineGradient}, or a Netflix
 * {@code Limit} through {@link LimitBridge}. Called by every sampling thread, concurrently; an
 * implementation sets the capacity through the {@link AdaptiveCapacity} it was made for.
 */
interface Controller {

    /**
     * Permits were just taken; {@code inFlight} is the number held through the adaptive capacity
     * now, these included. Must not lock or allocate.
     */
    void acquired(long inFlight);

    /**
     * One use of permits ended. {@code startNanos} and {@code endNanos} are readings of the
     * capacity's clock (equal for a rejection); {@code inFlight} is what {@link #acquired} saw for
     * this use (0 for a rejection). Must not lock (a bridge to a foreign algorithm may, and says so).
     */
    void sample(long startNanos, long endNanos, long permits, long inFlight, Outcome outcome);

    /** The baseline latency in nanoseconds, NaN if the algorithm keeps none (or none yet). */
    default double baselineNanos() {
        return Double.NaN;
    }

    /** The mean latency of the last closed window in nanoseconds, NaN if the algorithm keeps none (or none yet). */
    default double windowLatencyNanos() {
        return Double.NaN;
    }
}
