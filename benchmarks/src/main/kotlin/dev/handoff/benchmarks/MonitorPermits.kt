// SPDX-License-Identifier: Apache-2.0
package dev.handoff.benchmarks

import java.util.ArrayDeque
import java.util.concurrent.locks.Condition
import java.util.concurrent.locks.ReentrantLock
import kotlin.coroutines.CoroutineContext
import kotlinx.coroutines.CancellableContinuation
import kotlinx.coroutines.suspendCancellableCoroutine

/**
 * Peer: the plain monitor design of Go's `x/sync/semaphore.Weighted`: one lock, a count of used
 * permits, a FIFO queue of waiters, and one wake-up signal per waiter. A release grants the heads
 * of the queue that fit, in order, under the lock; a waiter that does not fit blocks the ones
 * behind it. The signal is a [Condition] for a thread and the continuation itself for a coroutine
 * (resumed under the lock, as Go closes the waiter's channel under its mutex). Interrupts and
 * cancellation leave the queue as Go's context cancellation does.
 *
 * ```
 * val p = MonitorPermits(16)
 * p.acquireBlocking(5); p.release(5)
 * ```
 *
 * @param capacity the number of permits, all free.
 */
public class MonitorPermits(private val capacity: Long) : BlockingPermits, SuspendingPermits {
    private val lock = ReentrantLock()

    /** Permits held by callers or granted to waiters. Guarded by [lock]. */
    private var used = 0L

    /** The waiters, oldest first. Guarded by [lock]. */
    private val waiters = ArrayDeque<Waiter>()

    override val name: String
        get() = Peers.MONITOR

    override fun tryAcquire(permits: Long): Boolean {
        lock.lock()
        try {
            return takeIfFree(permits)
        } finally {
            lock.unlock()
        }
    }

    @Throws(InterruptedException::class)
    override fun acquireBlocking(permits: Long) {
        lock.lock()
        try {
            if (takeIfFree(permits)) return
            val waiter = ThreadWaiter(permits, lock.newCondition())
            waiters.addLast(waiter)
            try {
                while (!waiter.granted) waiter.ready.await()
            } catch (e: InterruptedException) {
                if (waiter.granted) {
                    Thread.currentThread().interrupt()
                    return
                }
                waiters.remove(waiter)
                grantHeads()
                throw e
            }
        } finally {
            lock.unlock()
        }
    }

    override suspend fun acquire(permits: Long) {
        if (tryAcquire(permits)) return
        return suspendCancellableCoroutine { cont ->
            val waiter = CoroutineWaiter(permits, cont, this)
            lock.lock()
            try {
                if (takeIfFree(permits)) {
                    cont.resume(Unit, waiter.onCancellation)
                    return@suspendCancellableCoroutine
                }
                waiters.addLast(waiter)
            } finally {
                lock.unlock()
            }
            cont.invokeOnCancellation(waiter)
        }
    }

    override fun release(permits: Long) {
        lock.lock()
        try {
            check(permits in 0..used) { "release($permits): only $used permits are held" }
            used -= permits
            grantHeads()
        } finally {
            lock.unlock()
        }
    }

    /** Under [lock]: grants [permits] if nobody waits and they are free. */
    private fun takeIfFree(permits: Long): Boolean {
        if (!waiters.isEmpty() || capacity - used < permits) return false
        used += permits
        return true
    }

    /** Under [lock]: grants the heads of the queue that fit, in order, and signals each. */
    private fun grantHeads() {
        while (true) {
            val head = waiters.peekFirst() ?: return
            if (capacity - used < head.permits) return
            waiters.pollFirst()
            used += head.permits
            head.granted = true
            head.signal()
        }
    }

    /** A coroutine waiter was cancelled: leave the queue, or give back a grant it will not use. */
    private fun cancelled(waiter: Waiter) {
        lock.lock()
        try {
            if (waiter.granted) return // the resumption's onCancellation gives the permits back
            if (waiters.remove(waiter)) grantHeads()
        } finally {
            lock.unlock()
        }
    }

    private abstract class Waiter(val permits: Long) {
        /** Set under the lock when the permits are granted. */
        var granted = false

        /** Under the lock: wake the waiter up. */
        abstract fun signal()
    }

    private class ThreadWaiter(permits: Long, val ready: Condition) : Waiter(permits) {
        override fun signal() = ready.signal()
    }

    /** Also the continuation's cancellation handler and the resumption's onCancellation. */
    private class CoroutineWaiter(
        permits: Long,
        val cont: CancellableContinuation<Unit>,
        val owner: MonitorPermits,
    ) : Waiter(permits), (Throwable?) -> Unit, (Throwable, Unit, CoroutineContext) -> Unit {
        /**
         * This object as the resumption's onCancellation (typed, to pick that overload of resume).
         */
        val onCancellation: (Throwable, Unit, CoroutineContext) -> Unit
            get() = this

        override fun signal() = cont.resume(Unit, onCancellation)

        override fun invoke(cause: Throwable?) = owner.cancelled(this)

        override fun invoke(cause: Throwable, value: Unit, context: CoroutineContext) =
            owner.release(permits)
    }
}
