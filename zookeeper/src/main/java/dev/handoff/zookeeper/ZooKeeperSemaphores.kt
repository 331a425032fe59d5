// SPDX-License-Identifier: Apache-2.0
@file:JvmName("ZooKeeperSemaphores")

package dev.handoff.zookeeper

import java.util.concurrent.CompletableFuture
import java.util.concurrent.CompletionException
import kotlin.contracts.ExperimentalContracts
import kotlin.contracts.InvocationKind
import kotlin.contracts.contract
import kotlin.coroutines.CoroutineContext
import kotlin.coroutines.resumeWithException
import kotlinx.coroutines.suspendCancellableCoroutine

/**
 * Suspends until [permits] permits of this cluster-wide semaphore are granted, and returns their
 * [Lease]; close it (or use [withPermits]) to release them. Strictly FIFO across every client of
 * the semaphore's path; all permits are granted together.
 *
 * **Cancellation.** This function is cancellable: if the [Job][kotlinx.coroutines.Job] of the
 * calling coroutine is cancelled while the function is suspended, the request is withdrawn at once
 * (its znode is deleted) and the function throws
 * [CancellationException][kotlinx.coroutines.CancellationException]. There is a **prompt
 * cancellation guarantee**: a coroutine that is cancelled while suspended here never returns
 * normally from it, even if its permits were granted before the cancellation took effect; they are
 * then released again. So a cancelled caller ends holding nothing, whichever of the grant and the
 * cancellation came first.
 *
 * Needs kotlinx-coroutines-core 1.9.0 or later on the classpath.
 *
 * @param permits the number of permits, from `1` to [ZooKeeperSemaphore.capacity]
 * @return the lease
 * @throws IllegalArgumentException if [permits] is below 1 or above the capacity; nothing is
 *   created
 * @throws SessionLostException if the session is lost or the client closed before the grant
 * @throws dev.handoff.SemaphoreClosedException if this semaphore object is closed before the grant
 */
public suspend fun ZooKeeperSemaphore.acquire(permits: Long): Lease =
    awaitLease(acquireAsync(permits))

/**
 * Suspends until [permits] permits of this local front are granted (see [LocalFront]), and returns
 * their [Lease].
 *
 * **Cancellation.** This function is cancellable: if the [Job][kotlinx.coroutines.Job] of the
 * calling coroutine is cancelled while the function is suspended, the request is withdrawn at once
 * and the function throws [CancellationException][kotlinx.coroutines.CancellationException]. There
 * is a **prompt cancellation guarantee**: a coroutine that is cancelled while suspended here never
 * returns normally from it, even if its permits were granted before the cancellation took effect;
 * they are then released again. So a cancelled caller ends holding nothing, whichever of the grant
 * and the cancellation came first.
 *
 * @param permits the number of permits, from `1` to [LocalFront.localCapacity]
 * @return the lease
 * @throws IllegalArgumentException if [permits] is below 1 or above the local capacity
 * @throws SessionLostException if the block's session is lost before the grant
 */
public suspend fun LocalFront.acquire(permits: Long): Lease = awaitLease(acquireAsync(permits))

/**
 * Runs [action] holding [permits] permits of this cluster-wide semaphore: [acquires][acquire] them
 * (suspending if needed), runs [action] exactly once, and closes the lease when [action] returns or
 * throws.
 *
 * **Cancellation.** This function is cancellable: if the [Job][kotlinx.coroutines.Job] of the
 * calling coroutine is cancelled while the function is suspended, the request is withdrawn at once
 * (its znode is deleted) and the function throws
 * [CancellationException][kotlinx.coroutines.CancellationException]. There is a **prompt
 * cancellation guarantee**: a coroutine that is cancelled while suspended here never returns
 * normally from it, even if its permits were granted before the cancellation took effect; they are
 * then released again. So a cancelled caller ends holding nothing, whichever of the grant and the
 * cancellation came first.
 *
 * ```kotlin
 * suspend fun upload(body: ByteArray) = clusterBudget.withPermits(body.size.toLong()) {
 *     downstream.send(body)
 * }
 * ```
 *
 * @param permits the number of permits, from `1` to [ZooKeeperSemaphore.capacity]
 * @return what [action] returns
 * @throws IllegalArgumentException if [permits] is below 1 or above the capacity; [action] does not
 *   run
 * @throws SessionLostException if the session is lost before the grant; [action] does not run
 */
@OptIn(ExperimentalContracts::class)
public suspend inline fun <T> ZooKeeperSemaphore.withPermits(permits: Long, action: () -> T): T {
    contract { callsInPlace(action, InvocationKind.EXACTLY_ONCE) }
    val lease = acquire(permits)
    try {
        return action()
    } finally {
        lease.close()
    }
}

/**
 * Runs [action] holding [permits] permits of this local front, as [ZooKeeperSemaphore.withPermits]
 * does for the cluster semaphore.
 *
 * **Cancellation.** This function is cancellable: if the [Job][kotlinx.coroutines.Job] of the
 * calling coroutine is cancelled while the function is suspended, the request is withdrawn at once
 * and the function throws [CancellationException][kotlinx.coroutines.CancellationException]. There
 * is a **prompt cancellation guarantee**: a coroutine that is cancelled while suspended here never
 * returns normally from it, even if its permits were granted before the cancellation took effect;
 * they are then released again. So a cancelled caller ends holding nothing, whichever of the grant
 * and the cancellation came first.
 *
 * @param permits the number of permits, from `1` to [LocalFront.localCapacity]
 * @return what [action] returns
 * @throws IllegalArgumentException if [permits] is below 1 or above the local capacity; [action]
 *   does not run
 * @throws SessionLostException if the block's session is lost before the grant; [action] does not
 *   run
 */
@OptIn(ExperimentalContracts::class)
public suspend inline fun <T> LocalFront.withPermits(permits: Long, action: () -> T): T {
    contract { callsInPlace(action, InvocationKind.EXACTLY_ONCE) }
    val lease = acquire(permits)
    try {
        return action()
    } finally {
        lease.close()
    }
}

/**
 * Suspends on [future]: resumes with its lease, or throws its failure. A cancellation of the
 * coroutine cancels the future (which withdraws the request); a lease that arrives for a coroutine
 * already cancelled is closed by kotlinx's onCancellation of the resumption, so it is never leaked.
 */
private suspend fun awaitLease(future: CompletableFuture<Lease>): Lease =
    suspendCancellableCoroutine { cont ->
        future.whenComplete { lease, failure ->
            if (failure != null) {
                val cause =
                    if (failure is CompletionException && failure.cause != null) failure.cause!!
                    else failure
                cont.resumeWithException(cause)
            } else {
                val onCancellation: (Throwable, Lease, CoroutineContext) -> Unit =
                    { _, granted, _ ->
                        granted.close()
                    }
                cont.resume(lease, onCancellation)
            }
        }
        cont.invokeOnCancellation { future.cancel(false) }
    }
