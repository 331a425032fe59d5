// SPDX-License-Identifier: Apache-2.0
@file:JvmName("AdaptiveFairShares")

package dev.handoff.adaptive

import dev.handoff.SemaphoreRejectedException
import dev.handoff.coroutines.acquire as acquireSuspending
import java.util.concurrent.TimeoutException
import kotlin.contracts.ExperimentalContracts
import kotlin.contracts.InvocationKind
import kotlin.contracts.contract
import kotlinx.coroutines.TimeoutCancellationException

/**
 * Takes [permits] permits of the adaptive fair share for [key], suspending until they are granted
 * (in fair order across keys, FIFO within [key]), and returns a [SampledPermits] handle that
 * releases them to [key] and samples their use when it is closed (a success unless marked). A
 * rejection by a queue bound of the fair share is recorded as [Outcome.REJECTED] and thrown.
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
 * adaptive.acquire(tenant, 1).use { permits ->
 *     val response = client.call(request)
 *     if (response.status == 503) permits.markDropped()
 *     response
 * }
 * ```
 *
 * @param key the key (tenant) the permits are for
 * @param permits the number of permits, from `0` to the present [AdaptiveFairShare.capacity] and
 *   the fair share's per-key cap
 * @throws IllegalArgumentException if [permits] is negative, above the least capacity or the
 *   per-key cap, or the key's share is out of range; nothing held
 * @throws SemaphoreRejectedException if a queue bound of the fair share rejects the wait
 * @throws dev.handoff.SemaphoreClosedException if the fair share is or gets closed before the grant
 */
public suspend fun <K : Any> AdaptiveFairShare<K>.acquire(
    key: K,
    permits: Long = 1,
): SampledPermits {
    checkPermits("acquire", key, permits)
    recordingRejection(permits, { recordRejection(it) }) {
        fairShare().acquireSuspending(key, permits)
    }
    return startSample(key, permits)
}

/**
 * Runs [action] holding [permits] permits of the adaptive fair share for [key], releases them to
 * [key] when [action] returns or throws, and samples the hold time and the outcome: a success if
 * [action] returns; a drop if it throws a [TimeoutCancellationException] (as
 * [withTimeout][kotlinx.coroutines.withTimeout] throws); otherwise as [AdaptiveFairShare.classify]
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
 * val database = FairShareSemaphore.builder<String>(20).build()
 * val adaptive = AdaptiveFairShare.builder(database).maxCapacity(200).build()
 *
 * suspend fun query(tenant: String, sql: String): Rows = adaptive.withPermits(tenant, 1) {
 *     withTimeout(2.seconds) { client.query(sql) }      // a timeout counts as a drop
 * }
 * ```
 *
 * @param key the key (tenant) the permits are for
 * @param permits the number of permits, from `0` to the present [AdaptiveFairShare.capacity] and
 *   the fair share's per-key cap
 * @return what [action] returns
 * @throws IllegalArgumentException if [permits] is negative, above the least capacity or the
 *   per-key cap, or the key's share is out of range; [action] does not run
 * @throws SemaphoreRejectedException if a queue bound of the fair share rejects the wait
 * @throws dev.handoff.SemaphoreClosedException if the fair share is or gets closed before the grant
 */
@OptIn(ExperimentalContracts::class)
public suspend inline fun <K : Any, T> AdaptiveFairShare<K>.withPermits(
    key: K,
    permits: Long,
    action: () -> T,
): T {
    contract { callsInPlace(action, InvocationKind.EXACTLY_ONCE) }
    return acquire(key, permits).sampling({ classify(it) }, action)
}
