// SPDX-License-Identifier: Apache-2.0
@file:JvmName("RwLocks")

package dev.handoff.coroutines

import dev.handoff.RwLock
import dev.handoff.SemaphoreClosedException
import dev.handoff.spi.Adapters
import java.util.concurrent.Executor
import kotlin.contracts.ExperimentalContracts
import kotlin.contracts.InvocationKind
import kotlin.contracts.contract

/**
 * Takes a read lock, suspending until it is granted. Release it with [RwLock.readUnlock], or use
 * [withReadLock], which does both.
 *
 * Same queue and rules as the Java faces of [RwLock]: strictly FIFO, many readers at once (up to
 * [RwLock.maxReaders]) or one writer. A writer waiting in the queue makes this call wait too, even
 * while read permits are free, so a stream of readers never starves a writer. When a read lock is
 * free and nobody waits, this function returns at once without suspending and without allocating.
 *
 * In Kotlin, a name without a suffix suspends: the Java faces are [RwLock.tryReadLock],
 * [RwLock.readLockThen] (a callback), [RwLock.readLockAsync] and [RwLock.readLockBlocking], so
 * `lock.readLock()` in a coroutine always means this function, and `lock.readLock { }` does not
 * compile (use [withReadLock]). The same holds for [writeLock].
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
 * Memory consistency: actions before [RwLock.writeUnlock] happen-before the return of every later
 * read lock.
 *
 * ```kotlin
 * val lock = RwLock()
 *
 * suspend fun price(sku: String): Long? {
 *     lock.readLock()
 *     try {
 *         return prices[sku]
 *     } finally {
 *         lock.readUnlock()
 *     }
 * }
 * ```
 *
 * @throws SemaphoreClosedException if the lock is or gets [closed][RwLock.close] before the grant;
 *   nothing is held
 * @throws dev.handoff.SemaphoreRejectedException if it would have to wait and the queue is full
 *   ([RwLock.Builder.maxQueueLength]); nothing is held
 */
public suspend fun RwLock.readLock() {
    if (tryReadLock()) {
        return // fast path: no suspension, no allocation
    }
    readLockSuspending() // a tail call, so this function needs no state machine
}

/** The slow path of [readLock]: queues and suspends. */
private suspend fun RwLock.readLockSuspending() {
    ReadLockAcquisition().await<Unit>(this, 1)
}

/** The queue node of one suspended [readLock]. */
private class ReadLockAcquisition : ContinuationAcquisition<RwLock>() {
    override fun start(face: RwLock, permits: Long) {
        Adapters.startReadLock(face, this)
    }

    override fun giveBack(wakes: Executor) = face.readUnlock(wakes)

    override fun closedException(): Throwable =
        SemaphoreClosedException("readLock(): the lock is closed")

    /** A refusal names the suspending `readLock()` its caller called, not `startReadLock()`. */
    override fun callName(): String = "readLock()"

    override fun toString(): String = "ReadLockAcquisition[readLock() on ${startedOn()}]"
}

/**
 * Takes the write lock, suspending until it is granted. Release it with [RwLock.writeUnlock] (or
 * turn it into a read lock with [RwLock.downgrade]), or use [withWriteLock].
 *
 * The writer waits in the same FIFO queue as readers: it is granted once the readers and the writer
 * ahead of it have left, collecting their permits as they go, and the readers that arrive after it
 * wait for it. When nobody holds the lock and nobody waits, this function returns at once without
 * suspending and without allocating. [RwLock.isWriteLocked] is already `true` when the coroutine
 * resumes.
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
 * A cancelled writer that had already collected some read permits hands them on at once, so the
 * readers queued behind it get in.
 *
 * Memory consistency: actions before [RwLock.readUnlock] or [RwLock.writeUnlock] happen-before the
 * return of every later write lock.
 *
 * ```kotlin
 * val lock = RwLock()
 *
 * suspend fun reprice(sku: String, price: Long) {
 *     lock.writeLock()
 *     try {
 *         prices[sku] = price
 *     } finally {
 *         lock.writeUnlock()
 *     }
 * }
 * ```
 *
 * @throws SemaphoreClosedException if the lock is or gets [closed][RwLock.close] before the grant;
 *   nothing is held
 * @throws dev.handoff.SemaphoreRejectedException if it would have to wait and the queue is full
 *   ([RwLock.Builder.maxQueueLength]); nothing is held
 */
public suspend fun RwLock.writeLock() {
    if (tryWriteLock()) {
        return // fast path: no suspension, no allocation
    }
    writeLockSuspending() // a tail call, so this function needs no state machine
}

/** The slow path of [writeLock]: queues and suspends. */
private suspend fun RwLock.writeLockSuspending() {
    WriteLockAcquisition().await<Unit>(this, maxReaders().toLong())
}

/** The queue node of one suspended [writeLock]. The lock marks itself write-locked at our claim. */
private class WriteLockAcquisition : ContinuationAcquisition<RwLock>() {
    override fun start(face: RwLock, permits: Long) {
        Adapters.startWriteLock(face, this)
    }

    override fun giveBack(wakes: Executor) = face.writeUnlock(wakes)

    override fun closedException(): Throwable =
        SemaphoreClosedException("writeLock(): the lock is closed")

    /** A refusal names the suspending `writeLock()` its caller called, not `startWriteLock()`. */
    override fun callName(): String = "writeLock()"

    override fun toString(): String = "WriteLockAcquisition[writeLock() on ${startedOn()}]"
}

/**
 * Runs [action] holding a read lock: [takes][readLock] it (suspending if needed), runs [action]
 * exactly once, and releases it when [action] returns, throws or leaves through a non-local
 * `return`. Other readers may run at the same time; writers may not.
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
 * val lock = RwLock()
 * val routes = HashMap<String, Route>()
 *
 * suspend fun route(host: String): Route? = lock.withReadLock { routes[host] }
 * ```
 *
 * @return what [action] returns
 * @throws SemaphoreClosedException if the lock is or gets [closed][RwLock.close] before the grant;
 *   [action] does not run
 * @throws dev.handoff.SemaphoreRejectedException if it would have to wait and the queue is full
 *   ([RwLock.Builder.maxQueueLength]); [action] does not run
 */
@OptIn(ExperimentalContracts::class)
public suspend inline fun <T> RwLock.withReadLock(action: () -> T): T {
    contract { callsInPlace(action, InvocationKind.EXACTLY_ONCE) }
    readLock()
    try {
        return action()
    } finally {
        readUnlock()
    }
}

/**
 * Runs [action] holding the write lock: [takes][writeLock] it (suspending if needed), runs [action]
 * exactly once, and releases it when [action] returns, throws or leaves through a non-local
 * `return`. Nobody else holds the lock meanwhile.
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
 * Do not call [RwLock.downgrade] inside [action]: the `finally` releases with [RwLock.writeUnlock],
 * which then throws. Downgrade with [writeLock] and explicit unlocks.
 *
 * ```kotlin
 * val lock = RwLock()
 * val routes = HashMap<String, Route>()
 *
 * suspend fun reload(fresh: Map<String, Route>) = lock.withWriteLock {
 *     routes.clear()
 *     routes.putAll(fresh)
 * }
 * ```
 *
 * @return what [action] returns
 * @throws SemaphoreClosedException if the lock is or gets [closed][RwLock.close] before the grant;
 *   [action] does not run
 * @throws dev.handoff.SemaphoreRejectedException if it would have to wait and the queue is full
 *   ([RwLock.Builder.maxQueueLength]); [action] does not run
 */
@OptIn(ExperimentalContracts::class)
public suspend inline fun <T> RwLock.withWriteLock(action: () -> T): T {
    contract { callsInPlace(action, InvocationKind.EXACTLY_ONCE) }
    writeLock()
    try {
        return action()
    } finally {
        writeUnlock()
    }
}
