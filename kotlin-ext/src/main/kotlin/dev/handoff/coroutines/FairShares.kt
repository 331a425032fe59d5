// SPDX-License-Identifier: Apache-2.0
@file:JvmName("FairShares")

package dev.handoff.coroutines

import dev.handoff.FairShareSemaphore
import dev.handoff.SemaphoreClosedException
import dev.handoff.spi.Adapters
import java.util.concurrent.Executor
import kotlin.contracts.ExperimentalContracts
import kotlin.contracts.InvocationKind
import kotlin.contracts.contract

/**
 * Takes [permits] permits of this fair share for [key], suspending until they are granted.
 *
 * Same order and rules as the Java faces of [FairShareSemaphore]: strictly FIFO within [key],
 * weighted fair queuing across keys (while several keys wait, each gets permits in proportion to
 * its share), no barging. When the permits are free and nothing waits, this function returns at
 * once without suspending and without allocating. Give the permits back with `release(key,
 * permits)`, or use [withPermits].
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
 * Memory consistency: a [FairShareSemaphore.release] happens-before the return of every `acquire`
 * it grants.
 *
 * ```kotlin
 * val database = FairShareSemaphore.builder<String>(32).share { tenant -> if (tenant in premium) 4 else 1 }.build()
 *
 * suspend fun query(tenant: String, sql: String): Rows {
 *     database.acquire(tenant)
 *     try {
 *         return client.query(sql)
 *     } finally {
 *         database.release(tenant, 1)
 *     }
 * }
 * ```
 *
 * @param key the key (tenant) the permits are for
 * @param permits the number of permits, from `0` to the capacity and the per-key cap
 * @throws IllegalArgumentException if [permits] is negative, greater than the capacity or the
 *   per-key cap, or the key's share is out of range; thrown before anything is queued
 * @throws SemaphoreClosedException if the semaphore is or gets closed before the grant; nothing is
 *   held
 * @throws dev.handoff.SemaphoreRejectedException if it would have to wait and a queue bound is
 *   reached
 */
public suspend fun <K : Any> FairShareSemaphore<K>.acquire(key: K, permits: Long = 1) {
    if (permits >= 0 && tryAcquire(key, permits)) {
        return // fast path: no suspension, no allocation
    }
    acquireSuspending(key, permits)
}

/** The slow path of [acquire]: checks the arguments, then queues and suspends. */
private suspend fun <K : Any> FairShareSemaphore<K>.acquireSuspending(key: K, permits: Long) {
    require(permits >= 0) { "acquire($key, $permits): the number of permits must not be negative" }
    require(permits <= capacity()) {
        "acquire($key, $permits): exceeds the capacity ${capacity()}, so it could never be granted"
    }
    require(permits <= maxPermitsPerKey()) {
        "acquire($key, $permits): exceeds maxPermitsPerKey ${maxPermitsPerKey()}, so it could never be granted"
    }
    FairShareAcquisition(key).await<Unit>(this, permits)
}

/**
 * The queue node's party of one suspended [acquire] on a [FairShareSemaphore]: the fair share
 * queues it by [key] (`startAcquisition`), and everything else — the race of grant and
 * cancellation, the provisional grant that a cancellation undoes, where the grant resumes — is
 * [ContinuationAcquisition]'s, as for a [dev.handoff.Semaphore].
 */
private class FairShareAcquisition<K : Any>(private val key: K) :
    ContinuationAcquisition<FairShareSemaphore<K>>() {
    override fun start(face: FairShareSemaphore<K>, permits: Long) {
        Adapters.startAcquisition(face, key, permits, this)
    }

    override fun giveBack(wakes: Executor) = face.release(key, permits(), wakes)

    /**
     * A refusal names the suspending `acquire(key, n)` its caller called, not `startAcquisition`.
     */
    override fun callName(): String = "acquire"

    override fun closedException(): Throwable =
        SemaphoreClosedException("acquire($key, ${permits()}): the semaphore is closed")

    override fun toString(): String =
        "FairShareAcquisition[acquire($key, ${permits()}) on ${startedOn()}]"
}

/**
 * Runs [action] holding [permits] permits of this fair share for [key]: [acquires][acquire] them
 * (suspending if needed), runs [action] exactly once, and releases them to [key] when [action]
 * returns or throws.
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
 * suspend fun handle(request: Request) = pool.withPermits(request.tenant, 1) {
 *     backend.call(request)
 * }
 * ```
 *
 * @param key the key (tenant) the permits are for
 * @param permits the number of permits
 * @return what [action] returns
 * @throws IllegalArgumentException if [permits] is negative, greater than the capacity or the
 *   per-key cap; [action] does not run
 * @throws SemaphoreClosedException if the semaphore is or gets closed before the grant; [action]
 *   does not run
 */
@OptIn(ExperimentalContracts::class)
public suspend inline fun <K : Any, T> FairShareSemaphore<K>.withPermits(
    key: K,
    permits: Long,
    action: () -> T,
): T {
    contract { callsInPlace(action, InvocationKind.EXACTLY_ONCE) }
    acquire(key, permits)
    try {
        return action()
    } finally {
        release(key, permits)
    }
}
