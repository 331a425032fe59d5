// SPDX-License-Identifier: Apache-2.0
package dev.handoff.benchmarks

import java.util.concurrent.Semaphore

/**
 * Peer: [java.util.concurrent.Semaphore], fair (FIFO, the same promise as ours) or nonfair (barging
 * allowed, the fastest thing a JVM ships).
 *
 * ```
 * val fair = JucPermits(2, fair = true)
 * fair.acquireBlocking(1); fair.release(1)
 * ```
 *
 * @param capacity the number of permits, at most `Int.MAX_VALUE`.
 * @param fair `true` for the FIFO variant.
 */
public class JucPermits(capacity: Long, private val fair: Boolean) : BlockingPermits {
    private val semaphore = Semaphore(Math.toIntExact(capacity), fair)

    override val name: String
        get() = if (fair) Peers.JUC_FAIR else Peers.JUC_NONFAIR

    override fun tryAcquire(permits: Long): Boolean = semaphore.tryAcquire(permits.toInt())

    @Throws(InterruptedException::class)
    override fun acquireBlocking(permits: Long): Unit = semaphore.acquire(permits.toInt())

    override fun release(permits: Long): Unit = semaphore.release(permits.toInt())
}
