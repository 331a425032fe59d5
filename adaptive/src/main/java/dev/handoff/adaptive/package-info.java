// SPDX-License-Identifier: Apache-2.0
/**
 * A semaphore that sizes itself: {@link dev.handoff.adaptive.AdaptiveCapacity} resizes a
 * {@link dev.handoff.Semaphore} from the measured hold time and {@link dev.handoff.adaptive.Outcome}
 * of each permit, with its own algorithm or any Netflix concurrency-limits {@code Limit};
 * {@link dev.handoff.adaptive.AdaptiveFairShare} does the same for the total capacity of a
 * {@link dev.handoff.FairShareSemaphore}, its calls naming their key.
 *
 * <p>Nothing in this package accepts or returns {@code null} unless it is marked
 * {@link org.jspecify.annotations.Nullable @Nullable}. concurrency-limits-core is an optional
 * dependency: add it only to use {@code AdaptiveCapacity.Builder.limit(..)} or
 * {@code AdaptiveFairShare.Builder.limit(..)}.
 */
@NullMarked
package dev.handoff.adaptive;

import org.jspecify.annotations.NullMarked;
