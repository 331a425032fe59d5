// SPDX-License-Identifier: Apache-2.0
package dev.handoff.adaptive;

import dev.handoff.Permits;

/**
 * {@link Permits} whose hold time and outcome {@link AdaptiveCapacity} samples when they are
 * released: the time from the grant to {@link #release()} (or {@link #close()}), and the outcome
 * {@link Outcome#SUCCESS} unless {@link #markFailure()} or {@link #markDropped()} was called first.
 * Releasing gives the permits back to the semaphore exactly as the core handle does (first call
 * only). {@code close()} cannot see an exception that passes through a try-with-resources block:
 * mark it in a {@code catch} inside, as below, or use {@link AdaptiveCapacity#withPermitsBlocking},
 * which classifies exceptions itself.
 *
 * <pre>{@code
 * try (SampledPermits p = adaptive.acquireBlocking(1)) {
 *     try {
 *         return client.call(request);
 *     } catch (HttpTimeoutException e) {
 *         p.markDropped();                   // overload: the capacity shrinks
 *         throw e;
 *     } catch (IOException e) {
 *         p.markFailure();                   // not a latency sample
 *         throw e;
 *     }
 * }                                          // released and sampled here
 * }</pre>
 */
public interface SampledPermits extends Permits {

    /**
     * Marks the work as failed: its hold time will not be a latency sample. The last mark before
     * the release wins.
     *
     * @throws IllegalStateException if the permits were already released
     */
    void markFailure();

    /**
     * Marks the work as dropped (timed out, overloaded): it will count as overload. The last mark
     * before the release wins.
     *
     * @throws IllegalStateException if the permits were already released
     */
    void markDropped();

    /**
     * Returns the outcome the release records (or recorded): {@link Outcome#SUCCESS} unless marked.
     *
     * @return the outcome
     */
    Outcome outcome();
}
