// SPDX-License-Identifier: Apache-2.0
@file:JvmName("Mutexes")

package dev.handoff.coroutines

import dev.handoff.Mutex
import dev.handoff.SemaphoreClosedException
import dev.handoff.spi.Adapters
import java.util.concurrent.Executor
import java.util.concurrent.atomic.AtomicReference
import kotlin.contracts.ExperimentalContracts
import kotlin.contracts.InvocationKind
import kotlin.contracts.contract
import kotlinx.coroutines.selects.SelectClause2
import kotlinx.coroutines.sync.Mutex as KotlinxMutex

/**
 * Locks this mutex, suspending until the lock is granted. Release it with [Mutex.unlock], or use
 * [withLock], which does both.
 *
 * Same queue and rules as the Java faces of [Mutex]: strictly FIFO by the moment the call joins the
 * queue, and no barging (while anyone waits, [Mutex.tryLock] fails). [Mutex.unlock] hands the lock
 * directly to the longest waiting coroutine, thread or future. When the mutex is unlocked and
 * nobody waits, this function returns at once without suspending and without allocating. Not
 * reentrant: a coroutine that calls it while holding the lock waits for itself forever.
 *
 * In Kotlin, a name without a suffix suspends: the Java faces are [Mutex.tryLock] (never waits),
 * [Mutex.lockThen] (a callback), [Mutex.lockAsync] (a future) and [Mutex.lockBlocking] (parks the
 * thread), so `mutex.lock()` in a coroutine always means this function, and `mutex.lock { }` does
 * not compile (use [withLock]).
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
 * Memory consistency: actions before [Mutex.unlock] happen-before the return of the `lock` that the
 * unlock grants.
 *
 * ```kotlin
 * val mutex = Mutex()
 *
 * suspend fun transfer(from: Account, to: Account, amount: Long) {
 *     mutex.lock()
 *     try {
 *         from.debit(amount)
 *         to.credit(amount)
 *     } finally {
 *         mutex.unlock()
 *     }
 * }
 * ```
 *
 * @throws SemaphoreClosedException if the mutex is or gets [closed][Mutex.close] before the grant;
 *   nothing is held
 * @throws dev.handoff.SemaphoreRejectedException if it would have to wait and the queue is full
 *   ([Mutex.Builder.maxQueueLength])
 */
public suspend fun Mutex.lock() {
    if (tryLock()) {
        return // fast path: no suspension, no allocation
    }
    lockSuspending() // a tail call, so this function needs no state machine
}

/** The slow path of [lock]: queues and suspends. */
private suspend fun Mutex.lockSuspending() {
    MutexAcquisition().await<Unit>(this, 1)
}

/** The queue node of one suspended [lock] on a [Mutex]. */
private class MutexAcquisition : ContinuationAcquisition<Mutex>() {
    override fun start(face: Mutex, permits: Long) {
        Adapters.startLock(face, this)
    }

    override fun giveBack(wakes: Executor) = face.unlock(wakes)

    override fun closedException(): Throwable =
        SemaphoreClosedException("lock(): the mutex is closed")

    /** A refusal names the suspending `lock()` its caller called, not `startLock()`. */
    override fun callName(): String = "lock()"

    override fun toString(): String = "MutexAcquisition[lock() on ${startedOn()}]"
}

/**
 * Runs [action] holding this mutex: [locks][lock] it (suspending if needed), runs [action] exactly
 * once, and unlocks when [action] returns, throws or leaves through a non-local `return`.
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
 * [action] itself is not interrupted by this function; a cancellation that arrives while it runs is
 * seen by the suspending calls inside it, and the lock is released on the way out.
 *
 * ```kotlin
 * val mutex = Mutex()
 * var balance = 0L
 *
 * suspend fun deposit(amount: Long): Long = mutex.withLock {
 *     balance += amount
 *     balance
 * }
 * ```
 *
 * @return what [action] returns
 * @throws SemaphoreClosedException if the mutex is or gets [closed][Mutex.close] before the grant;
 *   [action] does not run
 * @throws dev.handoff.SemaphoreRejectedException if it would have to wait and the queue is full;
 *   [action] does not run
 */
@OptIn(ExperimentalContracts::class)
public suspend inline fun <T> Mutex.withLock(action: () -> T): T {
    contract { callsInPlace(action, InvocationKind.EXACTLY_ONCE) }
    lock()
    try {
        return action()
    } finally {
        unlock()
    }
}

/**
 * Returns a [kotlinx.coroutines.sync.Mutex] backed by this mutex, so code written against
 * kotlinx.coroutines switches with one line. The view and every other caller of this mutex, Java or
 * Kotlin, share one lock and one FIFO queue.
 *
 * The view follows the kotlinx contract: `lock()` has the cancellation behaviour of [lock]
 * (cancellable, prompt cancellation guarantee); `tryLock()` never suspends; `unlock()` of a mutex
 * that is not locked throws [IllegalStateException] and changes nothing; kotlinx's own `withLock`
 * works on it unchanged. Beyond kotlinx: after [Mutex.close], `lock()` throws
 * [SemaphoreClosedException] (an [IllegalStateException]) and `tryLock()` returns `false`.
 *
 * **The owner argument.** As in kotlinx it is a debugging aid, compared by identity; it does not
 * make the mutex reentrant. `lock(owner)`/`tryLock(owner)` with a non-null owner record it from the
 * moment of the grant until the unlock, and then:
 * - `lock(owner)` or `tryLock(owner)` while the mutex is held with the same owner throws
 *   [IllegalStateException] ("already locked by this owner") instead of waiting forever;
 * - `holdsLock(owner)` is `true` exactly while the mutex is held with that owner;
 * - `unlock(owner)` throws [IllegalStateException] and changes nothing if the mutex is not locked
 *   or is held with another owner (or with none); `unlock()` with no owner unlocks whatever owner
 *   holds it. The owner is remembered by the view object, so create the view once and share it (as
 *   you would share a kotlinx `Mutex()`). A lock taken through another face (Java `tryLock()`,
 *   `lockAsync()`, the suspend [lock], or another view) has no owner as far as this view is
 *   concerned: for it `holdsLock(anything)` is `false` and only `unlock()` without an owner
 *   releases it. Conversely, unlock a lock taken through the view through the view: [Mutex.unlock]
 *   on the Java face does not clear the owner the view recorded.
 *
 * `onLock` (the `select` clause, deprecated in kotlinx since 1.6.0 without a replacement, see
 * kotlinx.coroutines issue 2794) throws [UnsupportedOperationException]: its type `SelectClause2`
 * is a sealed interface whose implementations are internal to kotlinx.coroutines, so a view outside
 * that library can only build one by suppressing the compiler's visibility errors, which Kotlin 2
 * treats as unsupported. Racing a lock against other events works with `async { lock() }.onAwait`
 * instead.
 *
 * ```kotlin
 * // Before: val mutex = kotlinx.coroutines.sync.Mutex()
 * val mutex = Mutex().asKotlinxMutex()
 *
 * mutex.withLock { cache.refresh() }          // kotlinx's withLock, unchanged
 * mutex.withLock(owner = this) { audit() }    // same-owner re-entry throws instead of deadlocking
 * ```
 *
 * @return a kotlinx view of this mutex
 */
public fun Mutex.asKotlinxMutex(): KotlinxMutex = KotlinxMutexView(this)

/**
 * The view behind [asKotlinxMutex]. The lock itself is [mutex]; the view only adds kotlinx's owner
 * bookkeeping in [owner].
 */
private class KotlinxMutexView(private val mutex: Mutex) : KotlinxMutex {

    /**
     * Who holds the lock, as far as this view knows: [NOT_RECORDED] when it is not locked through
     * this view; `null` when it was locked through the view without an owner; otherwise the owner.
     * Written after a grant by the granted party (the fast path after `tryLock()`, the slow path in
     * `claimed()` under the core's lock), and cleared back to [NOT_RECORDED] by a CAS before the
     * unlock, so a recorded owner always belongs to the current holder.
     */
    private val owner = AtomicReference<Any?>(NOT_RECORDED)

    override val isLocked: Boolean
        get() = mutex.isLocked

    override fun holdsLock(owner: Any): Boolean = this.owner.get() === owner && mutex.isLocked

    override fun tryLock(owner: Any?): Boolean = tryLock(owner, "tryLock")

    private fun tryLock(owner: Any?, call: String): Boolean {
        if (mutex.tryLock()) {
            this.owner.set(owner)
            return true
        }
        check(owner == null || !holdsLock(owner)) {
            "$call($owner): the mutex is already locked by this owner"
        }
        return false
    }

    /**
     * Locks the underlying mutex, recording [owner]; see [asKotlinxMutex] for the owner and
     * [lock][dev.handoff.coroutines.lock] for the queue.
     *
     * **Cancellation.** This function is cancellable: if the [Job][kotlinx.coroutines.Job] of the
     * calling coroutine is cancelled while the function is suspended, the wait is withdrawn at once
     * (the permits already handed to it go on to the waiters behind it) and the function throws
     * [CancellationException][kotlinx.coroutines.CancellationException]. There is a **prompt
     * cancellation guarantee**: a coroutine that is cancelled while suspended here never returns
     * normally from it, even if its permits were granted before the cancellation took effect; they
     * are then released again. So a cancelled caller ends holding nothing, whichever of the grant
     * and the cancellation came first. This function does not check for cancellation when it does
     * not suspend; use [ensureActive][kotlinx.coroutines.ensureActive] for that in tight loops.
     */
    override suspend fun lock(owner: Any?) {
        if (tryLock(owner, "lock")) {
            return
        }
        OwnerAcquisition(owner).await<Unit>(mutex, 1)
    }

    override fun unlock(owner: Any?) {
        while (true) {
            val current = this.owner.get()
            if (owner != null && current !== owner) {
                throw IllegalStateException(
                    if (!mutex.isLocked) {
                        "unlock($owner): the mutex is not locked"
                    } else {
                        "unlock($owner): the mutex is locked by ${describe(current)}, not by $owner"
                    }
                )
            }
            if (current === NOT_RECORDED || this.owner.compareAndSet(current, NOT_RECORDED)) {
                mutex.unlock() // not locked: throws IllegalStateException, nothing recorded was
                // cleared
                return
            }
            // A concurrent unlock changed the record: look again.
        }
    }

    @Deprecated(
        "Mutex.onLock is deprecated in kotlinx.coroutines without replacement (issue 2794); " +
            "this view does not support it.",
        level = DeprecationLevel.WARNING,
    )
    override val onLock: SelectClause2<Any?, KotlinxMutex>
        get() =
            throw UnsupportedOperationException(
                "onLock: the select clause is not supported by asKotlinxMutex() (deprecated in kotlinx.coroutines, " +
                    "issue 2794; its SelectClause2 can only be implemented inside kotlinx). " +
                    "Use async { mutex.lock() }.onAwait in the select instead."
            )

    override fun toString(): String = "KotlinxMutexView[$mutex, owner=${describe(owner.get())}]"

    private fun describe(recorded: Any?): String =
        when {
            recorded === NOT_RECORDED -> "no owner known to this view"
            recorded == null -> "no owner"
            else -> "owner $recorded"
        }

    /** The queue node of one suspended `lock(owner)`: records [ownerToken] at the grant. */
    private inner class OwnerAcquisition(private val ownerToken: Any?) :
        ContinuationAcquisition<Mutex>() {
        override fun start(face: Mutex, permits: Long) {
            Adapters.startLock(face, this)
        }

        /** Under the core's lock, at the grant: one volatile store. */
        override fun claimed() {
            owner.set(ownerToken)
        }

        /**
         * Granted but cancelled before it ran: forget the owner (then the grant is undone or
         * unlocked).
         */
        override fun forgetGrant() {
            owner.compareAndSet(ownerToken, NOT_RECORDED)
        }

        override fun giveBack(wakes: Executor) {
            mutex.unlock(wakes)
        }

        override fun closedException(): Throwable =
            SemaphoreClosedException("${call()}: the mutex is closed")

        /**
         * The view's call as its caller wrote it: `lock()` without an owner, else `lock(owner)`.
         */
        private fun call(): String = if (ownerToken == null) "lock()" else "lock($ownerToken)"

        /** A refusal names the view's `lock(owner)` its caller called. */
        override fun callName(): String = call()

        override fun toString(): String =
            "KotlinxMutexView.OwnerAcquisition[lock($ownerToken) on $mutex]"
    }

    private companion object {
        /** The record of a lock not taken through this view. */
        val NOT_RECORDED = Any()
    }
}
