// SPDX-License-Identifier: Apache-2.0
@file:JvmName("Semaphores")

package dev.handoff.coroutines

import dev.handoff.Semaphore
import dev.handoff.SemaphoreClosedException
import dev.handoff.spi.Adapters
import java.util.concurrent.Executor
import kotlin.contracts.ExperimentalContracts
import kotlin.contracts.InvocationKind
import kotlin.contracts.contract
import kotlin.time.Duration
import kotlinx.coroutines.future.await
import kotlinx.coroutines.sync.Semaphore as KotlinxSemaphore
import kotlinx.coroutines.withTimeoutOrNull

/**
 * Takes [permits] permits of this semaphore, suspending until they are granted.
 *
 * Same queue and rules as the Java faces of [Semaphore]: strictly FIFO by the moment the call joins
 * the queue, weighted, no barging, and head-of-line blocking is intended (a heavy acquisition at
 * the head makes lighter ones behind it wait, so it is never starved). Released permits are handed
 * directly to the waiting coroutines, partially to the head if it needs more. When the permits are
 * free and nobody waits, this function returns at once without suspending and without allocating.
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
 * In Kotlin, a name without a suffix suspends: the Java faces are [Semaphore.tryAcquire] (never
 * waits), [Semaphore.acquireThen] (a callback), [Semaphore.acquireAsync] (a future) and
 * [Semaphore.acquireBlocking] (parks the thread). So `semaphore.acquire(n)` in a coroutine always
 * means this function, and `semaphore.acquire(n) { ... }` does not compile (use [withPermits]).
 *
 * Memory consistency: a [Semaphore.release] happens-before the return of every `acquire` it grants.
 *
 * ```kotlin
 * val budget = Semaphore(64L shl 20) // at most 64 MiB in flight
 *
 * suspend fun upload(body: ByteArray) {
 *     budget.acquire(body.size.toLong())
 *     try {
 *         client.send(body)
 *     } finally {
 *         budget.release(body.size.toLong())
 *     }
 * }
 * ```
 *
 * [withPermits] writes the same in one line.
 *
 * With a timeout: on a multi-threaded dispatcher, [withTimeout][kotlinx.coroutines.withTimeout] may
 * fire after this function returned but before the timed block ends; the block's result is then
 * lost although the permits are held (kotlinx.coroutines issue 2233). Record the grant inside the
 * block and release in `finally`:
 * ```kotlin
 * var acquired = false
 * try {
 *     withTimeout(5.seconds) {
 *         budget.acquire(bytes)
 *         acquired = true
 *     }
 *     send(request)
 * } finally {
 *     if (acquired) budget.release(bytes)
 * }
 * ```
 *
 * @param permits the number of permits, from `0` to [Semaphore.capacity]; `0` returns at once
 *   unless the semaphore is closed
 * @throws IllegalArgumentException if [permits] is negative or greater than the capacity (it could
 *   never be granted); thrown before anything is queued
 * @throws SemaphoreClosedException if the semaphore is or gets [closed][Semaphore.close] before the
 *   grant; nothing is held
 */
public suspend fun Semaphore.acquire(permits: Long = 1) {
    if (permits >= 0 && tryAcquire(permits)) {
        return // fast path: no suspension, no allocation
    }
    acquireSuspending(permits) // a tail call, so this function needs no state machine
}

/**
 * [acquire] on behalf of [call], the suspending function the caller called (`withPermits`): its
 * refusals name that call. Public only so that the inline [withPermits] can call it.
 */
@PublishedApi
internal suspend fun Semaphore.acquireFor(call: String, permits: Long) {
    if (permits >= 0 && tryAcquire(permits)) {
        return // fast path: no suspension, no allocation
    }
    acquireSuspending(permits, call)
}

/** The slow path of [acquire]: checks the arguments, then queues and suspends. */
private suspend fun Semaphore.acquireSuspending(permits: Long, call: String = "acquire") {
    require(permits >= 0) { "$call($permits): the number of permits must not be negative" }
    require(permits <= capacity()) {
        "$call($permits): exceeds the capacity ${capacity()}, so it could never be granted"
    }
    val node =
        when (call) {
            "acquire" -> SemaphoreAcquisition()
            "withPermits" -> WithPermitsAcquisition()
            else -> NamedSemaphoreAcquisition(call)
        }
    node.await<Unit>(this, permits)
}

/**
 * The queue node of one suspended [acquire] on a [Semaphore]. The call its refusals name is a
 * method, not a field, so that the node of the common calls stays at 72 bytes (a field would make
 * it 80).
 */
private open class SemaphoreAcquisition : ContinuationAcquisition<Semaphore>() {
    /** The suspending call the caller made: its refusals name it. */
    open val call: String
        get() = "acquire"

    override fun start(face: Semaphore, permits: Long) {
        Adapters.startAcquisition(face, permits, this)
    }

    override fun giveBack(wakes: Executor) = face.release(permits(), wakes)

    /** A refusal names the suspending `acquire(n)` its caller called, not `startAcquisition(n)`. */
    override fun callName(): String = call

    override fun closedException(): Throwable =
        SemaphoreClosedException("$call(${permits()}): the semaphore is closed")

    override fun toString(): String = "SemaphoreAcquisition[$call(${permits()}) on ${startedOn()}]"
}

/** The node of one suspended [withPermits]. */
private class WithPermitsAcquisition : SemaphoreAcquisition() {
    override val call: String
        get() = "withPermits"
}

/** The node of a suspended acquisition made on behalf of another [call] (see [acquireFor]). */
private class NamedSemaphoreAcquisition(override val call: String) : SemaphoreAcquisition()

/**
 * Runs [action] holding [permits] permits of this semaphore: [acquires][acquire] them (suspending
 * if needed), runs [action] exactly once, and releases them when [action] returns or throws.
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
 * seen by the suspending calls inside it, and the permits are released on the way out.
 *
 * ```kotlin
 * val rowsInFlight = Semaphore(10_000)
 *
 * suspend fun write(batch: List<Row>) = rowsInFlight.withPermits(batch.size.toLong()) {
 *     database.insert(batch)
 * }
 * ```
 *
 * @param permits the number of permits, from `0` to [Semaphore.capacity]
 * @return what [action] returns
 * @throws IllegalArgumentException if [permits] is negative or greater than the capacity; [action]
 *   does not run
 * @throws SemaphoreClosedException if the semaphore is or gets closed before the grant; [action]
 *   does not run
 */
@OptIn(ExperimentalContracts::class)
public suspend inline fun <T> Semaphore.withPermits(permits: Long, action: () -> T): T {
    contract { callsInPlace(action, InvocationKind.EXACTLY_ONCE) }
    acquireFor("withPermits", permits)
    try {
        return action()
    } finally {
        release(permits)
    }
}

/**
 * Runs [action] holding one permit of this semaphore: `withPermits(1, action)`.
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
 * val connections = Semaphore(8)
 *
 * suspend fun fetch(url: String): String = connections.withPermit { http.get(url) }
 * ```
 *
 * @return what [action] returns
 * @throws IllegalArgumentException if the capacity is `0` (a permit could never be granted)
 * @throws SemaphoreClosedException if the semaphore is or gets closed before the grant; [action]
 *   does not run
 */
@OptIn(ExperimentalContracts::class)
public suspend inline fun <T> Semaphore.withPermit(action: () -> T): T {
    contract { callsInPlace(action, InvocationKind.EXACTLY_ONCE) }
    return withPermits(1, action)
}

/**
 * Returns a [kotlinx.coroutines.sync.Semaphore] backed by this semaphore, so code written against
 * kotlinx.coroutines switches with one line. Each kotlinx `acquire`, `tryAcquire` and `release` is
 * one permit of this semaphore, on the same FIFO queue as every other caller, Java or Kotlin.
 *
 * The view follows the kotlinx contract: `acquire()` has the cancellation behaviour of [acquire]
 * (cancellable, prompt cancellation guarantee); `tryAcquire()` never suspends; `release()` of a
 * permit that nobody holds throws [IllegalStateException] and changes nothing; `availablePermits`
 * is [Semaphore.availablePermits], clamped to [Int.MAX_VALUE]. Beyond kotlinx: after
 * [Semaphore.close], `acquire()` throws [SemaphoreClosedException] (an [IllegalStateException]) and
 * `tryAcquire()` returns `false`. The view keeps no state of its own; it is cheap to create.
 *
 * ```kotlin
 * // Before: val limit = kotlinx.coroutines.sync.Semaphore(4)
 * val limit = Semaphore(4).asKotlinxSemaphore()
 *
 * limit.withPermit { crawl(page) } // kotlinx's withPermit, unchanged
 * ```
 *
 * @return a kotlinx view of this semaphore
 */
public fun Semaphore.asKotlinxSemaphore(): KotlinxSemaphore = KotlinxSemaphoreView(this)

/** The view behind [asKotlinxSemaphore]: one kotlinx permit is one permit of [semaphore]. */
private class KotlinxSemaphoreView(private val semaphore: Semaphore) : KotlinxSemaphore {
    override val availablePermits: Int
        get() = semaphore.availablePermits().coerceAtMost(Int.MAX_VALUE.toLong()).toInt()

    /**
     * Takes one permit of the underlying semaphore; see [Semaphore.acquire].
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
    override suspend fun acquire() {
        semaphore.acquire(1)
    }

    override fun tryAcquire(): Boolean = semaphore.tryAcquire(1)

    override fun release() {
        semaphore.release(1)
    }

    override fun toString(): String = "KotlinxSemaphoreView[$semaphore]"
}

/**
 * Takes [permits] permits, suspending for at most [timeout]: returns `true` iff the permits are
 * held when it returns (the caller must release them), `false` if the timeout came first, with
 * nothing held and the permits partially handed to the wait passed on to the waiters behind it.
 *
 * The timeout is a [kotlin.time.Duration]: the Java face that parks the thread for a
 * `java.time.Duration` is named [Semaphore.tryAcquireBlocking], so a coroutine cannot block its
 * dispatcher's thread by importing the other `Duration`.
 *
 * Unlike `withTimeoutOrNull(timeout) { acquire(permits) }`, this never loses a grant that lands as
 * the timeout fires (kotlinx.coroutines issue 2233): the answer and the permits always agree.
 * Cancellation of the calling coroutine: as [acquire] (prompt; nothing held), then it throws
 * [CancellationException][kotlinx.coroutines.CancellationException].
 *
 * ```kotlin
 * if (budget.tryAcquire(bytes, 200.milliseconds)) {
 *     try { send(body) } finally { budget.release(bytes) }
 * } else {
 *     reply(429)
 * }
 * ```
 *
 * @param permits the number of permits, from `0` to [Semaphore.capacity]
 * @param timeout the longest wait; zero or negative does not suspend
 * @return whether the permits are held
 * @throws IllegalArgumentException if [permits] is negative or greater than the capacity
 * @throws SemaphoreClosedException if the semaphore is or gets closed before the grant
 * @throws dev.handoff.SemaphoreRejectedException if it would have to wait and the queue is full
 */
public suspend fun Semaphore.tryAcquire(permits: Long, timeout: Duration): Boolean {
    require(permits >= 0) {
        "tryAcquire($permits, $timeout): the number of permits must not be negative"
    }
    require(permits <= capacity()) {
        "tryAcquire($permits, $timeout): exceeds the capacity ${capacity()}, so it could never be granted"
    }
    if (tryAcquire(permits)) return true
    if (isClosed)
        throw SemaphoreClosedException("tryAcquire($permits, $timeout): the semaphore is closed")
    if (!timeout.isPositive()) return false
    var acquired = false
    try {
        withTimeoutOrNull(timeout) {
            acquire(permits)
            acquired =
                true // set with the grant, so a timeout that fires right after cannot hide it
        }
    } catch (e: Throwable) {
        if (acquired) release(permits)
        throw e
    }
    return acquired
}

/**
 * One FIFO request for between [min] and [max] permits: suspends until at least [min] can be
 * granted to it, then takes as many as are being handed out (or are free), up to [max], and returns
 * how many; the caller must release them. While nobody waits and at least [min] are free it returns
 * at once, without suspending and without allocating. In the queue it weighs [min] (for shedding
 * and [Semaphore.queuedPermits]). Cancellation as for [acquire]: the wait is withdrawn at once (the
 * permits already handed to it go on to the waiters behind it, whose wake-ups run on this
 * coroutine's dispatcher), prompt cancellation holds, and a cancelled caller ends holding nothing,
 * whichever of the grant and the cancellation came first.
 *
 * ```kotlin
 * val bytes = buffers.acquireUpTo(64L shl 10, 4L shl 20)
 * try { readChunk(bytes) } finally { buffers.release(bytes) }
 * ```
 *
 * @return the permits taken, from [min] to [max]
 * @throws IllegalArgumentException unless `1 <= min <= max` and `min <= capacity()`
 * @throws SemaphoreClosedException if the semaphore is or gets closed before the grant
 * @throws dev.handoff.SemaphoreRejectedException if it would have to wait and the queue is full
 */
public suspend fun Semaphore.acquireUpTo(min: Long, max: Long): Long {
    require(min in 1..max) { "acquireUpTo($min, $max): needs 1 <= min <= max" }
    require(min <= capacity()) {
        "acquireUpTo($min, $max): min exceeds the capacity ${capacity()}, so it could never be granted"
    }
    val got =
        tryAcquireUpTo(min, max) // all or nothing: never holds fewer than min, even for an instant
    if (got > 0) {
        return got // fast path: no suspension, no allocation
    }
    val node = SemaphoreUpToAcquisition(min, max)
    node.await<Unit>(this, min)
    return node.permits() // what the grant gave it, from min to max
}

/**
 * The queue node of one suspended [acquireUpTo]: started as an up-to request, it behaves as
 * [SemaphoreAcquisition] does (cancellation, prompt cancellation, wake-ups of a withdrawal on the
 * coroutine's own dispatcher); [permits] is what it took once granted.
 */
private class SemaphoreUpToAcquisition(private val min: Long, private val max: Long) :
    ContinuationAcquisition<Semaphore>() {
    override fun start(face: Semaphore, permits: Long) {
        Adapters.startAcquisitionUpTo(face, permits, max, this)
    }

    override fun giveBack(wakes: Executor) = face.release(permits(), wakes)

    /**
     * A refusal names the suspending `acquireUpTo(min, max)` its caller called, bounds included
     * (also when equal).
     */
    override fun callName(): String = "acquireUpTo($min, $max)"

    override fun closedException(): Throwable =
        SemaphoreClosedException("acquireUpTo($min, $max): the semaphore is closed")

    override fun toString(): String =
        "SemaphoreUpToAcquisition[acquireUpTo($min, $max) on ${startedOn()}]"
}

/**
 * Closes the semaphore and suspends until every held permit (and any debt after a shrink) has come
 * back: `closeAsync()` for coroutines, named like kotlinx's `cancelAndJoin`. Cancelling the caller
 * stops the waiting, not the drain.
 *
 * ```kotlin
 * limiter.closeAndJoin() // refuse new work, let running work finish
 * ```
 */
public suspend fun Semaphore.closeAndJoin() {
    // kotlinx's await() cancels the future if the caller is cancelled; closeAsync() returns a
    // copy per call, so that stops this wait and never the drain.
    closeAsync().await()
}
