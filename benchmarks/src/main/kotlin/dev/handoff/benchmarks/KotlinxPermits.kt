// SPDX-License-Identifier: Apache-2.0
package dev.handoff.benchmarks

import java.util.concurrent.CompletableFuture
import kotlin.coroutines.Continuation
import kotlin.coroutines.CoroutineContext
import kotlin.coroutines.EmptyCoroutineContext
import kotlin.coroutines.startCoroutine
import kotlinx.coroutines.sync.Mutex
import kotlinx.coroutines.sync.Semaphore
import kotlinx.coroutines.sync.withLock

/**
 * Peer: [kotlinx.coroutines.sync.Semaphore]. It knows only single permits, so this adapter accepts
 * only `permits == 1`; see [KotlinxWeightedPermits] for the usual workaround for weights.
 *
 * kotlinx has no future face, so [acquireAsync] bridges to one, as cheaply as we found while
 * keeping the same threading as handoff's `acquireAsync` (see there for exactly what it measures).
 *
 * ```
 * val p = KotlinxPermits(2)
 * p.acquire(1); p.release(1)
 * ```
 *
 * @param capacity the number of permits, at most `Int.MAX_VALUE`.
 */
public class KotlinxPermits(capacity: Long) : SuspendingPermits, FuturePermits {
    private val semaphore = Semaphore(Math.toIntExact(capacity))

    override val name: String
        get() = Peers.KOTLINX

    override fun tryAcquire(permits: Long): Boolean {
        checkOne(permits)
        return semaphore.tryAcquire()
    }

    override suspend fun acquire(permits: Long) {
        checkOne(permits)
        return semaphore.acquire()
    }

    /** One waiting `acquire()`, started by [acquireAsync]; a fresh coroutine each time. */
    private val acquireOne: suspend () -> Unit = { semaphore.acquire() }

    /**
     * The bridge from kotlinx's suspending `acquire` to a [CompletableFuture], the cheapest we
     * found with public API and the same threading as handoff's `acquireAsync`:
     * - granted at once (`tryAcquire()`): an already completed future, as handoff returns;
     * - otherwise one bare coroutine, `startCoroutine` of `kotlin.coroutines` (no `Job`, no
     *   dispatcher, no scope), whose completion is the returned future itself. It runs on the
     *   calling thread into kotlinx's `acquire()` and suspends there, in kotlinx's own queue. The
     *   `release()` that grants it resumes it in place on the releasing thread (no dispatcher in
     *   its context), where it completes the future and so runs the caller's dependent stages, as
     *   handoff's waker does.
     *
     * So the slow path measures kotlinx's queue plus, per waiting acquisition, one coroutine (a
     * suspend-lambda frame), kotlinx's continuation and one future. Not included: a `launch` (a
     * `Job` to create and complete) or a dispatcher such as `Dispatchers.Default` (a dispatch per
     * grant that handoff does not pay). Left out of the contract: cancelling the returned future
     * does not withdraw the wait (the benchmarks never cancel); handoff's future does, leak-free,
     * so the bridge is given the cheaper contract.
     */
    override fun acquireAsync(permits: Long): CompletableFuture<*> {
        checkOne(permits)
        if (semaphore.tryAcquire()) return CompletableFuture.completedFuture(null)
        val granted = GrantFuture()
        acquireOne.startCoroutine(granted)
        return granted
    }

    override fun release(permits: Long) {
        checkOne(permits)
        semaphore.release()
    }

    private fun checkOne(permits: Long) =
        require(permits == 1L) {
            "kotlinx Semaphore has no weighted acquire: $permits permits asked"
        }
}

/**
 * Peer: the common workaround for a weighted acquire on kotlinx.coroutines, a [Mutex] held while
 * taking `n` single permits one by one (so two weighted acquires never deadlock each other holding
 * half of what they need). FIFO between the weighted callers comes from the mutex.
 *
 * A cancellation in the middle leaks the permits already taken; the benchmarks never cancel.
 *
 * ```
 * val p = KotlinxWeightedPermits(16)
 * p.acquire(5); p.release(5)
 * ```
 *
 * @param capacity the number of permits, at most `Int.MAX_VALUE`.
 */
public class KotlinxWeightedPermits(capacity: Long) : SuspendingPermits {
    private val mutex = Mutex()
    private val semaphore = Semaphore(Math.toIntExact(capacity))

    override val name: String
        get() = Peers.KOTLINX_MUTEX

    override fun tryAcquire(permits: Long): Boolean {
        if (!mutex.tryLock()) return false
        try {
            var taken = 0L
            while (taken < permits && semaphore.tryAcquire()) taken++
            if (taken == permits) return true
            repeat(taken.toInt()) { semaphore.release() }
            return false
        } finally {
            mutex.unlock()
        }
    }

    override suspend fun acquire(permits: Long) {
        mutex.withLock { repeat(permits.toInt()) { semaphore.acquire() } }
    }

    override fun release(permits: Long) {
        repeat(permits.toInt()) { semaphore.release() }
    }
}

/** The future of a waiting kotlinx `acquire()`, and the completion of the coroutine that waits. */
private class GrantFuture : CompletableFuture<Void?>(), Continuation<Unit> {
    override val context: CoroutineContext
        get() = EmptyCoroutineContext

    override fun resumeWith(result: Result<Unit>) {
        val error = result.exceptionOrNull()
        if (error == null) complete(null) else completeExceptionally(error)
    }
}
