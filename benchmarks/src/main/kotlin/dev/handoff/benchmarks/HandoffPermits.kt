// SPDX-License-Identifier: Apache-2.0
package dev.handoff.benchmarks

import dev.handoff.Semaphore
import dev.handoff.WaitListener
import dev.handoff.WaitOutcome
import dev.handoff.coroutines.acquire
import java.util.concurrent.CompletableFuture
import java.util.concurrent.atomic.LongAdder

/**
 * Ours: [dev.handoff.Semaphore], with the suspending `acquire` of `dev.handoff.coroutines`. Every
 * call goes straight to the library: no extra fast path, no wrapping.
 *
 * ```
 * val p = HandoffPermits(16)
 * p.acquire(5)          // suspends until 5 permits are granted, strictly FIFO
 * p.release(5)
 * ```
 *
 * The variants differ only in how the semaphore was made, never in how it is called:
 * - [Peers.HANDOFF]: `Semaphore(capacity)`;
 * - [Peers.HANDOFF_OBSERVED]: with a [WaitListener] that counts the waits that ended
 *   ([waitsSettled]);
 * - [Peers.HANDOFF_LISTENER]: with a [WaitListener] that does nothing (a diagnostic);
 * - [Peers.HANDOFF_RESIZED]: `Semaphore(capacity)` after `setCapacity(capacity + 1)` and then
 *   `setCapacity(capacity)`, the same capacity with a past resize (a diagnostic).
 *
 * @param capacity the capacity of the semaphore, all free.
 * @param name which variant, one of the four above.
 * @throws IllegalArgumentException if [name] is not one of them.
 */
public class HandoffPermits(capacity: Long, override val name: String = Peers.HANDOFF) :
    BlockingPermits, SuspendingPermits, FuturePermits {
    /** What the observed variant's listener counted: the waits that ended. */
    public val waitsSettled: LongAdder = LongAdder()

    /** The semaphore behind this adapter, made as [name] says. */
    public val semaphore: Semaphore =
        when (name) {
            Peers.HANDOFF -> Semaphore(capacity)
            Peers.HANDOFF_OBSERVED ->
                Semaphore.builder(capacity)
                    .listener(
                        object : WaitListener {
                            override fun settled(
                                permits: Long,
                                outcome: WaitOutcome,
                                waitNanos: Long,
                                waitersAhead: Int,
                            ) {
                                waitsSettled.increment()
                            }
                        }
                    )
                    .build()
            Peers.HANDOFF_LISTENER ->
                Semaphore.builder(capacity).listener(object : WaitListener {}).build()
            Peers.HANDOFF_RESIZED ->
                Semaphore(capacity).apply {
                    setCapacity(capacity + 1)
                    setCapacity(capacity)
                }
            else -> throw IllegalArgumentException("'$name' is not a variant of handoff")
        }

    override fun tryAcquire(permits: Long): Boolean = semaphore.tryAcquire(permits)

    @Throws(InterruptedException::class)
    override fun acquireBlocking(permits: Long) {
        semaphore.acquireBlocking(
            permits
        ) // the handle is dropped: released by count, as every peer
    }

    override suspend fun acquire(permits: Long): Unit = semaphore.acquire(permits)

    override fun acquireAsync(permits: Long): CompletableFuture<*> = semaphore.acquireAsync(permits)

    override fun release(permits: Long): Unit = semaphore.release(permits)
}
