// SPDX-License-Identifier: Apache-2.0
/**
 * A weighted, strictly FIFO, starvation-free {@link dev.handoff.Semaphore}, with a
 * {@link dev.handoff.Mutex} and a fair {@link dev.handoff.RwLock} on the same core, and the one
 * permit handle {@link dev.handoff.Permits}.
 *
 * <p>Nothing in this package accepts or returns {@code null} unless it is marked
 * {@link org.jspecify.annotations.Nullable @Nullable} (JSpecify's {@code @NullMarked}), so Kotlin
 * sees non-null types, and {@code Acquisition.failure()} or {@code Semaphore.name()} as nullable.
 */
@NullMarked
package dev.handoff;

import org.jspecify.annotations.NullMarked;
