// SPDX-License-Identifier: Apache-2.0
@file:JvmName("IntPermits")

package dev.handoff.coroutines

import dev.handoff.Semaphore
import kotlin.contracts.ExperimentalContracts
import kotlin.contracts.InvocationKind
import kotlin.contracts.contract
import kotlin.time.Duration

// Int overloads of the suspending faces and of release, as kotlinx.coroutines takes Int permits:
// `withPermits(body.size)` compiles without `.toLong()`. Each is exactly its Long form.

/**
 * Takes [permits] permits of this semaphore, suspending until they are granted: [acquire] with an
 * `Int`, as kotlinx's `Semaphore` takes one.
 *
 * **Cancellation.** This function is cancellable: if the [Job][kotlinx.coroutines.Job] of the
 * calling coroutine is cancelled while the function is suspended, the wait is withdrawn at once
 * (the permits already handed to it go on to the waiters behind it) and the function throws
 * [CancellationException][kotlinx.coroutines.CancellationException]. There is a **prompt
 * cancellation guarantee**: a coroutine that is cancelled while suspended here never returns
 * normally from it, even if its permits were granted before the cancellation took effect; they are
 * then released again. So a cancelled caller ends holding nothing, whichever of the grant and the
 * cancellation came first. This function does not check for cancellation when it does not suspend;
 * use [ensureActive][kotlinx.coroutines.ensureActive] for that in tight loops.
 *
 * ```kotlin
 * buffers.acquire(chunk.size)
 * try { write(chunk) } finally { buffers.release(chunk.size) }
 * ```
 *
 * @param permits the number of permits, from `0` to [Semaphore.capacity]
 * @throws IllegalArgumentException if [permits] is negative or greater than the capacity
 * @throws dev.handoff.SemaphoreClosedException if the semaphore is or gets closed before the grant
 */
public suspend fun Semaphore.acquire(permits: Int) {
    acquire(permits.toLong())
}

/**
 * Takes [permits] permits at once if nobody waits and enough are free; never suspends, never
 * queues: [Semaphore.tryAcquire] with an `Int`.
 *
 * ```kotlin
 * if (buffers.tryAcquire(chunk.size)) {
 *     try { write(chunk) } finally { buffers.release(chunk.size) }
 * }
 * ```
 *
 * @param permits the number of permits
 * @return whether the permits were taken (the caller must release them)
 * @throws IllegalArgumentException if [permits] is negative
 */
public fun Semaphore.tryAcquire(permits: Int): Boolean = tryAcquire(permits.toLong())

/**
 * Takes [permits] permits, suspending for at most [timeout]: the suspending `tryAcquire` with an
 * `Int`; `true` iff the permits are held when it returns. Cancellation as for [acquire]: prompt,
 * nothing held.
 *
 * ```kotlin
 * if (buffers.tryAcquire(chunk.size, 200.milliseconds)) {
 *     try { write(chunk) } finally { buffers.release(chunk.size) }
 * }
 * ```
 *
 * @param permits the number of permits, from `0` to [Semaphore.capacity]
 * @param timeout the longest wait; zero or negative does not suspend
 * @return whether the permits are held
 * @throws IllegalArgumentException if [permits] is negative or greater than the capacity
 * @throws dev.handoff.SemaphoreClosedException if the semaphore is or gets closed before the grant
 * @throws dev.handoff.SemaphoreRejectedException if it would have to wait and the queue is full
 */
public suspend fun Semaphore.tryAcquire(permits: Int, timeout: Duration): Boolean =
    tryAcquire(permits.toLong(), timeout)

/**
 * Returns [permits] permits: [Semaphore.release] with an `Int`.
 *
 * @param permits the number of permits; `0` does nothing
 * @throws IllegalArgumentException if [permits] is negative
 * @throws IllegalStateException if [permits] is more than the permits held; nothing changes then
 */
public fun Semaphore.release(permits: Int) {
    release(permits.toLong())
}

/**
 * Runs [action] holding [permits] permits and releases them when it returns or throws:
 * [withPermits] with an `Int`. A refusal names this call (`withPermits(2000)`).
 *
 * **Cancellation.** This function is cancellable: if the [Job][kotlinx.coroutines.Job] of the
 * calling coroutine is cancelled while the function is suspended, the wait is withdrawn at once
 * (the permits already handed to it go on to the waiters behind it) and the function throws
 * [CancellationException][kotlinx.coroutines.CancellationException]. There is a **prompt
 * cancellation guarantee**: a coroutine that is cancelled while suspended here never returns
 * normally from it, even if its permits were granted before the cancellation took effect; they are
 * then released again. So a cancelled caller ends holding nothing, whichever of the grant and the
 * cancellation came first. This function does not check for cancellation when it does not suspend;
 * use [ensureActive][kotlinx.coroutines.ensureActive] for that in tight loops.
 *
 * ```kotlin
 * suspend fun upload(body: ByteArray) = inFlight.withPermits(body.size) { downstream.send(body) }
 * ```
 *
 * @param permits the number of permits, from `0` to [Semaphore.capacity]
 * @return what [action] returns
 * @throws IllegalArgumentException if [permits] is negative or greater than the capacity; [action]
 *   does not run
 * @throws dev.handoff.SemaphoreClosedException if the semaphore is or gets closed before the grant;
 *   [action] does not run
 */
@OptIn(ExperimentalContracts::class)
public suspend inline fun <T> Semaphore.withPermits(permits: Int, action: () -> T): T {
    contract { callsInPlace(action, InvocationKind.EXACTLY_ONCE) }
    return withPermits(permits.toLong(), action)
}
