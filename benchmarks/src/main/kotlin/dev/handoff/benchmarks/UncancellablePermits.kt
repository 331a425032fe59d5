// SPDX-License-Identifier: Apache-2.0
package dev.handoff.benchmarks

import dev.handoff.Acquisition
import dev.handoff.Semaphore
import dev.handoff.SemaphoreClosedException
import dev.handoff.spi.Adapters
import kotlin.coroutines.Continuation
import kotlin.coroutines.resume
import kotlin.coroutines.resumeWithException
import kotlin.coroutines.suspendCoroutine

/**
 * A diagnostic, not a way to use the library: our semaphore suspended with the standard library's
 * **non-cancellable** `suspendCoroutine` instead of kotlinx's `suspendCancellableCoroutine`. It
 * goes through the same public adapter API as `dev.handoff.coroutines` (a node that is its own
 * waker, started with [Semaphore.startAcquisition]) and the same core, but pays none of kotlinx's
 * cancellation machinery: no parent-Job handle installed and removed per suspension, no
 * cancellation handler, no resumed-state record. A coroutine cancelled while it waits here stays
 * suspended until it is granted, so this peer must never be used for anything but measuring.
 *
 * Set against `handoff` in the coroutine and weighted workloads (3, 4), it shows how much of our
 * time is the price of public-API cancellation, which kotlinx's own Semaphore pays once per
 * coroutine instead (its internal reusable continuation keeps the Job handle across suspensions).
 *
 * ```
 * val p = UncancellablePermits(2)
 * p.acquire(1)   // suspends until granted; cannot be cancelled
 * p.release(1)
 * ```
 *
 * @param capacity the capacity of the semaphore, all free.
 */
public class UncancellablePermits(capacity: Long) : SuspendingPermits {
    /** The semaphore behind this adapter. */
    public val semaphore: Semaphore = Semaphore(capacity)

    override val name: String = Peers.HANDOFF_UNCANCELLABLE

    override fun tryAcquire(permits: Long): Boolean = semaphore.tryAcquire(permits)

    /** Like `dev.handoff.coroutines.acquire` (the same fast path first), but not cancellable. */
    override suspend fun acquire(permits: Long) {
        if (semaphore.tryAcquire(permits)) {
            return
        }
        suspendCoroutine { continuation ->
            Adapters.startAcquisition(semaphore, permits, Resume(continuation))
        }
    }

    override fun release(permits: Long): Unit = semaphore.release(permits)

    /** The node and its waker: resumes the continuation (at once if granted inside the start). */
    private class Resume(private val continuation: Continuation<Unit>) : Acquisition() {
        override fun wake() {
            if (isGranted) {
                continuation.resume(Unit)
            } else {
                continuation.resumeWithException(
                    failure()
                        ?: SemaphoreClosedException(
                            "acquire(${permits()}): the semaphore is closed"
                        )
                )
            }
        }
    }
}
