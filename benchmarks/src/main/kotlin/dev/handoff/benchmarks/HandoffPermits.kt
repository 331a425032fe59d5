// SPDX-License-Identifier: Apache-2.0
package dev.handoff.benchmarks

import dev.handoff.Semaphore
import dev.handoff.coroutines.acquire
import java.util.concurrent.CompletableFuture

/**
 * Ours: [dev.handoff.Semaphore], with the suspending `acquire` of `dev.handoff.coroutines`.
 * Every call goes straight to the library: no extra fast path, no wrapping.
 *
 * ```
 * val p = HandoffPermits(16)
 * p.acquire(5)          // suspends until 5 permits are granted, strictly FIFO
 * p.release(5)
 * ```
 *
 * @param capacity the capacity of the semaphore, all free.
 */
public class HandoffPermits(capacity: Long) : BlockingPermits, SuspendingPermits, FuturePermits {
    /** The semaphore behind this adapter. */
    public val semaphore: Semaphore = Semaphore(capacity)

    override val name: String get() = Peers.HANDOFF

    override fun tryAcquire(permits: Long): Boolean = semaphore.tryAcquire(permits)

    @Throws(InterruptedException::class)
    override fun acquireBlocking(permits: Long): Unit = semaphore.acquireBlocking(permits)

    override suspend fun acquire(permits: Long): Unit = semaphore.acquire(permits)

    override fun acquireAsync(permits: Long): CompletableFuture<Void?> = semaphore.acquireAsync(permits)

    override fun release(permits: Long): Unit = semaphore.release(permits)
}
