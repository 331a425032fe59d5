// SPDX-License-Identifier: Apache-2.0
@file:JvmName("AdaptiveCapacities")

package dev.handoff.adaptive

import dev.handoff.SemaphoreRejectedException
import dev.handoff.coroutines.acquire as acquireSuspending
import java.util.concurrent.TimeoutException
import kotlin.contracts.ExperimentalContracts
import kotlin.contracts.InvocationKind
import kotlin.contracts.contract
import kotlinx.coroutines.TimeoutCancellationException

/**
 * Takes [permits] permits of the adaptive capacity's semaphore, suspending until they are granted,
 * and returns a [SampledPermits] handle that samples their use when it is closed (a success unless
 * marked). A rejection by the semaphore's queue bound is recorded as [Outcome.REJECTED] and thrown.
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
 * adaptive.acquire(1).use { permits ->
 *     val response = client.call(request)
 *     if (response.status == 503) permits.markDropped()
 *     response
 * }
 * ```
 *
 * @param permits the number of permits, from `0` to the present [AdaptiveCapacity.capacity]
 * @throws IllegalArgumentException if [permits] is negative or above the least capacity; nothing
 *   held
 * @throws SemaphoreRejectedException if the semaphore's queue bound rejects the wait
 * @throws dev.handoff.SemaphoreClosedException if the semaphore is or gets closed before the grant
 */
public suspend fun AdaptiveCapacity.acquire(permits: Long = 1): SampledPermits {
    checkPermits("acquire", permits)
    if (!semaphore().tryAcquire(permits)) {
        recordingRejection(permits, { recordRejection(it) }) {
            semaphore().acquireSuspending(permits)
        }
    }
    return startSample(permits)
}

/**
 * Runs [action] holding [permits] permits of the adaptive capacity's semaphore, releases them when
 * [action] returns or throws, and samples the hold time and the outcome: a success if [action]
 * returns; a drop if it throws a [TimeoutCancellationException] (as
 * [withTimeout][kotlinx.coroutines.withTimeout] throws); otherwise as [AdaptiveCapacity.classify]
 * says: by default a drop for a [TimeoutException] or an I/O timeout, a failure for anything else
 * (a cancellation included: not a latency sample, not overload). Permits are acquired as by
 * [acquire].
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
 * val inFlight = AdaptiveCapacity.builder(Semaphore(20)).maxCapacity(500).build()
 *
 * suspend fun fetch(url: String): String = inFlight.withPermits(1) {
 *     withTimeout(2.seconds) { http.get(url) }          // a timeout counts as a drop
 * }
 * ```
 *
 * @param permits the number of permits, from `0` to the present [AdaptiveCapacity.capacity]
 * @throws IllegalArgumentException if [permits] is negative or above the least capacity; nothing
 *   held
 * @throws SemaphoreRejectedException if the semaphore's queue bound rejects the wait
 * @throws dev.handoff.SemaphoreClosedException if the semaphore is or gets closed before the grant
 */
@OptIn(ExperimentalContracts::class)
public suspend inline fun <T> AdaptiveCapacity.withPermits(permits: Long, action: () -> T): T {
    contract { callsInPlace(action, InvocationKind.EXACTLY_ONCE) }
    return acquire(permits).sampling({ classify(it) }, action)
}

/**
 * Runs the suspending [acquisition] of [permits] permits; a rejection by a queue bound
 * ([SemaphoreRejectedException]) is recorded with [record] and rethrown. Shared by the suspend
 * faces of [AdaptiveCapacity] and [AdaptiveFairShare].
 */
internal inline fun recordingRejection(
    permits: Long,
    record: (Long) -> Unit,
    acquisition: () -> Unit,
) {
    try {
        acquisition()
    } catch (rejected: SemaphoreRejectedException) {
        record(permits)
        throw rejected
    }
}

/**
 * Runs [action], then closes these permits, sampled as the scoped calls classify: a success if
 * [action] returns; a drop if it throws a [TimeoutCancellationException]; otherwise as [classify]
 * says (the builder's classifier: by default a drop for a [TimeoutException] or an I/O timeout, a
 * failure for anything else). Shared by the `withPermits` of [AdaptiveCapacity] and
 * [AdaptiveFairShare].
 */
@PublishedApi
@OptIn(ExperimentalContracts::class)
internal inline fun <T> SampledPermits.sampling(
    classify: (Throwable) -> Outcome,
    action: () -> T,
): T {
    contract { callsInPlace(action, InvocationKind.EXACTLY_ONCE) }
    try {
        return action()
    } catch (e: Throwable) {
        when (if (e is TimeoutCancellationException) Outcome.DROPPED else classify(e)) {
            Outcome.SUCCESS -> {}
            Outcome.DROPPED -> markDropped()
            else -> markFailure()
        }
        throw e
    } finally {
        close()
    }
}
