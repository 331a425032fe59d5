// SPDX-License-Identifier: Apache-2.0
package dev.handoff.benchmarks

import java.util.concurrent.CompletableFuture

/*
 * The adapters. Every semaphore in the comparison is driven through these four small interfaces,
 * so a benchmark method is the same code for every peer and only the adapter behind it changes.
 * JMH runs each peer (@Param) in its own forked JVM, so the interface call site stays monomorphic
 * there and is inlined: the adapters cost nothing in the full run.
 */

/**
 * A semaphore counted in permits, seen by a caller that never waits.
 *
 * ```
 * val p: Permits = Peers.permits(Peers.HANDOFF, capacity = 2)
 * if (p.tryAcquire(1)) try { work() } finally { p.release(1) }
 * ```
 */
public interface Permits {
    /** The peer's name, one of [Peers.ALL]. */
    public val name: String

    /**
     * Takes [permits] permits if the peer grants them at once, without waiting.
     *
     * @return `true` if the permits are now held and must be given back with [release].
     */
    public fun tryAcquire(permits: Long): Boolean

    /**
     * Gives back [permits] permits taken earlier.
     *
     * @throws IllegalStateException (or the peer's own exception) if more are released than held.
     */
    public fun release(permits: Long)
}

/**
 * A semaphore seen by a platform thread that parks while it waits.
 *
 * ```
 * val p = Peers.blocking(Peers.JUC_FAIR, capacity = 2)
 * p.acquireBlocking(1)
 * try { work() } finally { p.release(1) }
 * ```
 */
public interface BlockingPermits : Permits {
    /**
     * Takes [permits] permits, parking the calling thread until they are granted.
     *
     * @throws InterruptedException if the thread is interrupted while it waits; nothing is held.
     */
    @Throws(InterruptedException::class) public fun acquireBlocking(permits: Long)
}

/**
 * A semaphore seen by a coroutine that suspends while it waits.
 *
 * ```
 * val p = Peers.suspending(Peers.KOTLINX, capacity = 2)
 * p.acquire(1)
 * try { work() } finally { p.release(1) }
 * ```
 */
public interface SuspendingPermits : Permits {
    /**
     * Takes [permits] permits, suspending until they are granted. Cancellable for every peer but
     * the [UncancellablePermits] diagnostic: a coroutine cancelled while it waits throws
     * `CancellationException`.
     */
    public suspend fun acquire(permits: Long)
}

/**
 * A semaphore seen by a caller that chains work on a [CompletableFuture] instead of waiting.
 *
 * ```
 * val p = Peers.future(Peers.HANDOFF, capacity = 2)
 * p.acquireAsync(1).thenRun { try { work() } finally { p.release(1) } }
 * ```
 */
public interface FuturePermits : Permits {
    /**
     * Takes [permits] permits asynchronously. The returned future is already complete if they were
     * granted at once; otherwise it completes when they are granted, on the thread whose `release`
     * granted them (for every peer here), which then runs the dependent stages.
     *
     * @return a future completed once the permits are held; they must be given back with [release].
     *   Its value is the peer's own (handoff's permit handle, `null` for the others): the workload
     *   never reads it, so no peer pays for converting it.
     */
    public fun acquireAsync(permits: Long): CompletableFuture<*>
}
