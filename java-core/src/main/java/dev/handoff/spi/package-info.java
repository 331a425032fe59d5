// SPDX-License-Identifier: Apache-2.0
/**
 * Hooks for adapters that bridge handoff's primitives to another concurrency model (coroutines,
 * reactive streams, an event loop): {@link dev.handoff.spi.Adapters} starts an acquisition that
 * is its own waker. Application code does not need this package.
 */
@NullMarked
package dev.handoff.spi;

import org.jspecify.annotations.NullMarked;
