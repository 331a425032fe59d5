// SPDX-License-Identifier: Apache-2.0
package dev.handoff.benchmarks

import dev.handoff.Semaphore
import dev.handoff.WaitListener
import dev.handoff.WaitOutcome
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
public class HandoffPermits(capacity: Long, observed: Boolean = false) : BlockingPermits, SuspendingPermits, FuturePermits {
    /** What the observed variant's listener counted: the waits that ended. */
    public val waitsSettled: java.util.concurrent.atomic.LongAdder = java.util.concurrent.atomic.LongAdder()

    /** The semaphore behind this adapter; with a [WaitListener] when `observed`. */
    public val semaphore: Semaphore = if (observed) {
        Semaphore.builder(capacity).waitListener(object : WaitListener {
            override fun settled(permits: Long, outcome: WaitOutcome, waitNanos: Long, waitersAhead: Int) {
                waitsSettled.increment()
            }
        }).build()
    } else {
        Semaphore(capacity)
    }

    override val name: String = if (observed) Peers.HANDOFF_OBSERVED else Peers.HANDOFF

    override fun tryAcquire(permits: Long): Boolean = semaphore.tryAcquire(permits)

    @Throws(InterruptedException::class)
    override fun acquireBlocking(permits: Long): Unit = semaphore.acquireBlocking(permits)

    override suspend fun acquire(permits: Long): Unit = semaphore.acquire(permits)

    override fun acquireAsync(permits: Long): CompletableFuture<Void?> = semaphore.acquireAsync(permits)

    override fun release(permits: Long): Unit = semaphore.release(permits)
}
