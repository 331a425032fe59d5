// SPDX-License-Identifier: Apache-2.0
package dev.handoff

import kotlin.coroutines.resumeWithException
import kotlinx.coroutines.CancellableContinuation
import kotlinx.coroutines.suspendCancellableCoroutine

/**
 * The sequential specification of [Semaphore] (CONTRACT.md, section 1), written from the contract
 * alone and as plainly as possible; Lincheck checks that every concurrent history of the real
 * semaphore could also have happened, one operation at a time, on this class.
 *
 * The state is `(N, held, Q, closed)`:
 * - `N` = [capacity];
 * - `held` = permits owned by callers;
 * - `Q` = the FIFO queue of waiting acquisitions, each with its weight.
 *
 * The permits that nobody holds, `N - held`, are the *pool*. While `Q` is non-empty the whole pool
 * belongs to the head of `Q` (the permits "handed to it but not yet enough"; the head never fits in
 * the pool, or it would have been granted), so [availablePermits] is the pool when `Q` is empty and
 * 0 otherwise, and the partial assignment of the head needs no field of its own.
 *
 * Three faces share the queue:
 * - the suspending `acquire` and `acquireUpTo` of `dev.handoff.coroutines` ([acquire],
 *   [acquireUpTo]: an up-to request weighs its minimum in `Q`, and the head it becomes takes the
 *   whole pool, up to its maximum, once the pool covers that minimum);
 * - the callback face `acquireThen(n, waker)` ([start], [cancel]), also with a waker whose claim
 *   declines ([startDeclining]);
 * - the future face `acquireAsync(n)` and `acquireUpToAsync(min, max)` ([startAsync],
 *   [startAsyncUpTo], [cancelAsync]), and `Permits.release()` of the handle a granted future
 *   completes with ([releaseHandle]). A callback or future acquisition is remembered per thread
 *   (the `thread` argument), so that a later `cancel` of the same thread can refer to it.
 *
 * Permits have no owner: any thread may [release], and a release of more than `held` returns
 * `false` and changes nothing (the tests' release operations report the semaphore's
 * IllegalStateException as `false`).
 *
 * A cancelled suspending acquire holds nothing, and ends with CancellationException (Lincheck's
 * `Cancelled`), never with another exception: it leaves `Q` ([withdraw]), and nothing here throws
 * on a cancellation. So a real acquire that is cancelled and ends with, say, an
 * IllegalStateException (the give-back of a grant that lost to the cancellation, failing because
 * another release took the permits meanwhile) has no sequential history. The one way a cancelled
 * acquire keeps permits here is Lincheck's own: see the grant's undo in [acquire].
 *
 * Queue bounds (`Semaphore.builder(n).maxQueueLength(k)` and `.maxQueuedPermits(q)`, as their
 * javadoc words them): a request that would have to join `Q` while `|Q| + 1 > k` or
 * `queuedPermits() + w > q` (`w` its weight, an up-to request's minimum) is rejected ([shed]): the
 * suspending faces throw SemaphoreRejectedException, [start] and [startDeclining] return
 * `"rejected"`, and nothing changes (the thread's remembered acquisition is forgotten, as the test
 * forgets it). The bound is asked only where the request would join `Q`: after the checks of the
 * weight and of `closed`, and never for a request granted at once. Unbounded by default.
 *
 * Subclasses fix the capacity (and the bounds), because Lincheck creates the specification with its
 * no-argument constructor: [SequentialWeightedSemaphore1], [SequentialWeightedSemaphore2], ...
 */
open class SequentialWeightedSemaphore(
    private var capacity: Long,
    private val maxQueueLength: Int = Int.MAX_VALUE,
    private val maxQueuedPermits: Long = Long.MAX_VALUE,
) {
    private var held = 0L
    private var closed = false
    private val queue = ArrayDeque<Waiter>()

    /** The last callback or future acquisition started by each thread. */
    private val handles = arrayOfNulls<Handle>(MAX_THREADS)

    private val pool: Long
        get() = capacity - held

    // ------------------------------------------------------------------ observers

    /**
     * Free permits: the pool while nobody waits (0 while it is negative: debt), 0 while anyone
     * waits.
     */
    fun availablePermits(): Long = if (queue.isEmpty()) maxOf(pool, 0L) else 0L

    /** The sum of the weights of the waiting acquisitions. */
    fun queuedPermits(): Long = queue.sumOf { it.weight }

    fun capacity(): Long = capacity

    /**
     * Changes `N` (CONTRACT.md section 5). The pool `N - held` moves by the difference: growing
     * serves the queue as a release would; shrinking below what is held makes the pool negative,
     * which is the debt (releases fill it before anyone is served). Waiters heavier than the new
     * `N` fail (their partial permits are part of the pool and stay there); the next heads may then
     * be served.
     */
    fun setCapacity(n: Int) {
        val c = weight(n)
        if (c < 0) throw IllegalArgumentException("setCapacity($n)")
        capacity = c
        val tooHeavy = queue.filter { it.weight > c }
        queue.removeAll(tooHeavy)
        tooHeavy.forEach { it.failTooHeavy() }
        grantHeads()
    }

    /** Takes `min(max, pool)` if nobody waits and not closed (maybe 0), else 0. */
    fun tryAcquireUpTo(max: Int): Long {
        if (max < 0) throw IllegalArgumentException("tryAcquireUpTo($max)")
        if (closed || queue.isNotEmpty()) return 0
        val take = minOf(weight(max), maxOf(pool, 0L))
        held += take
        return take
    }

    /**
     * Takes `min(max, pool)` if nobody waits, not closed and the pool covers [min], else 0 (so a
     * [min] above `N` takes nothing, as [tryAcquire] of a weight above `N` is false); bounds out of
     * order or below 1 are refused.
     */
    fun tryAcquireRange(min: Int, max: Int): Long {
        if (min < 1 || min > max) throw IllegalArgumentException("tryAcquireUpTo($min, $max)")
        if (closed || queue.isNotEmpty() || pool < weight(min)) return 0
        val take = minOf(weight(max), pool)
        held += take
        return take
    }

    fun queueLength(): Int = queue.size

    /**
     * The weight an operation's parameter stands for: itself, unless a subclass maps the small
     * parameters Lincheck generates onto weights that need the semaphore's wide layout.
     */
    protected open fun weight(n: Int): Long = n.toLong()

    // ------------------------------------------------------------------ non-blocking

    /**
     * Grants iff `Q` is empty, not closed and the pool covers `n`; checks in the contract's order.
     */
    fun tryAcquire(n: Int): Boolean {
        val w = weight(n)
        if (w < 0) throw IllegalArgumentException("tryAcquire($n)")
        if (closed) return false
        if (w == 0L) return true
        if (w > capacity) return false
        if (queue.isNotEmpty() || pool < w) return false
        held += w
        return true
    }

    /**
     * Returns `n` permits, then grants the heads of `Q` in order while they fit; `false`, changing
     * nothing, if `n` exceeds what is held (the real release throws IllegalStateException).
     */
    fun release(n: Int): Boolean {
        if (n < 0) throw IllegalArgumentException("release($n)")
        return release(weight(n))
    }

    private fun release(w: Long): Boolean {
        if (w > held) return false
        held -= w
        grantHeads()
        return true
    }

    /** Fails every waiter (their partial permits stay in the pool); later acquires fail. */
    fun close() {
        if (closed) return
        closed = true
        val failed = queue.toList()
        queue.clear()
        failed.forEach { it.fail() }
    }

    // ------------------------------------------------------------------ suspending face

    /**
     * Grants at once if `Q` is empty and the pool covers `n`; otherwise joins the tail of `Q` and
     * suspends until [release] or a cancellation ahead of it grants it, or [close] fails it.
     * Cancellation while waiting leaves `Q`, and its partial permits may complete the next heads:
     * the cancelled call holds nothing.
     *
     * A grant resumes the coroutine with the same undo as the real adapter: if the coroutine is
     * cancelled after the grant but before it runs again (prompt cancellation), the permits are
     * released again. Under Lincheck 3.7 neither side runs this undo (see
     * SemaphoreLincheckTest.kt): an operation that Lincheck cancels after its resumption ends
     * `Cancelled` and its permits stay held, by nobody, here as in the real run.
     */
    suspend fun acquire(n: Int) {
        val w = weight(n)
        if (w < 0 || w > capacity) throw IllegalArgumentException("acquire($n)")
        if (closed) throw SemaphoreClosedException("acquire($n)")
        if (w == 0L || (queue.isEmpty() && pool >= w)) {
            held += w
            return
        }
        if (shed(w)) throw SemaphoreRejectedException("acquire($n)")
        suspendCancellableCoroutine { continuation ->
            val waiter = SuspendedAcquire(w, continuation)
            queue.addLast(waiter)
            continuation.invokeOnCancellation { withdraw(waiter) }
        }
    }

    /**
     * One request for [min] to [max] permits: if `Q` is empty and the pool covers [min] it takes
     * `min(pool, max)` at once; otherwise it joins the tail of `Q` weighing [min], and when the
     * queue reaches it with a pool of at least [min] it takes `min(pool, max)`. Cancellation, close
     * and setCapacity as for [acquire].
     */
    suspend fun acquireUpTo(min: Int, max: Int): Long {
        if (min < 1 || min > max || weight(min) > capacity)
            throw IllegalArgumentException("acquireUpTo($min, $max)")
        if (closed) throw SemaphoreClosedException("acquireUpTo($min, $max)")
        if (queue.isEmpty() && pool >= weight(min)) {
            val take = minOf(weight(max), pool)
            held += take
            return take
        }
        if (shed(weight(min))) throw SemaphoreRejectedException("acquireUpTo($min, $max)")
        return suspendCancellableCoroutine { continuation ->
            val waiter = SuspendedUpTo(weight(min), weight(max), continuation)
            queue.addLast(waiter)
            continuation.invokeOnCancellation { withdraw(waiter) }
        }
    }

    // ------------------------------------------------------------------ callback and future faces

    /**
     * `acquireThen(n, waker)` by [thread]: `"granted"` or `"closed"` if it settled at once (the
     * waker ran before the call returned), `"waiting"` if it joined `Q`, `"rejected"` if a queue
     * bound refused it ([shed]; nothing changes, and [thread] has no acquisition to cancel).
     */
    fun start(thread: Int, n: Int): String {
        val w = weight(n)
        if (w < 0 || w > capacity) throw IllegalArgumentException("acquire($n, waker)")
        val handle = Handle(thread, w)
        handles[thread] = handle
        when {
            closed -> handle.state = CLOSED
            w == 0L || (queue.isEmpty() && pool >= w) -> {
                held += w
                handle.taken = w
                handle.state = GRANTED
            }
            shed(w) -> return rejected(thread)
            else -> queue.addLast(handle)
        }
        return handle.state
    }

    /**
     * `acquireThen(n, waker)` by [thread] with a waker whose `claim()` always declines (its party
     * is gone). A declined grant is, for everyone else, as if the acquisition had never asked: if
     * it could be granted at once it settles as `"cancelled"` and nothing changes (no permit is
     * ever seen in transit); if it must wait it joins `Q` like any other, and when the queue
     * reaches it with enough permits it leaves `Q`, and the permits go on to the next heads once
     * the pass that granted it is done (see [grantHeads]). A close fails it like any waiter
     * (`"closed"`; a close does not ask the claim).
     */
    fun startDeclining(thread: Int, n: Int): String {
        val w = weight(n)
        if (w < 0 || w > capacity) throw IllegalArgumentException("acquire($n, decliningWaker)")
        val handle = Handle(thread, w, declines = true)
        handles[thread] = handle
        when {
            closed -> handle.state = CLOSED
            w == 0L || (queue.isEmpty() && pool >= w) -> handle.state = CANCELLED
            shed(w) -> return rejected(thread)
            else -> queue.addLast(handle)
        }
        return handle.state
    }

    /**
     * `Acquisition.cancel()` of the last acquisition of [thread]: true iff it was still waiting.
     */
    fun cancel(thread: Int): Boolean {
        val handle = handles[thread] ?: return false
        if (handle.state != WAITING) return false
        handle.state = CANCELLED
        withdraw(handle)
        return true
    }

    /** `cancel(executor)`: where the wakers run is not part of the model. */
    fun cancelWakingLater(thread: Int): Boolean = cancel(thread)

    /** `release(n, executor)`: where the wakers run is not part of the model. */
    fun releaseWakingLater(n: Int): Boolean = release(n)

    /**
     * `acquireAsync(n)` by [thread]; what it settled to shows through [cancelAsync] and the
     * observers.
     */
    fun startAsync(thread: Int, n: Int) {
        start(thread, n)
    }

    /**
     * `acquireUpToAsync(min, max)` by [thread]: as [acquireUpTo], but settled through a future, so
     * it shows through [cancelAsync] and the observers. Bounds out of order, below 1 or a [min]
     * above `N` are refused; a closed semaphore fails the future.
     */
    fun startAsyncUpTo(thread: Int, min: Int, max: Int) {
        if (min < 1 || min > max || weight(min) > capacity)
            throw IllegalArgumentException("acquireUpToAsync($min, $max)")
        val handle = Handle(thread, weight(min), maximum = weight(max))
        handles[thread] = handle
        when {
            closed -> handle.state = CLOSED
            queue.isEmpty() && pool >= weight(min) -> {
                handle.taken = minOf(pool, weight(max))
                held += handle.taken
                handle.state = GRANTED
            }
            shed(weight(min)) -> rejected(thread)
            else -> queue.addLast(handle)
        }
    }

    /** `future.cancel(false)` of the last future of [thread]: true iff the wait was withdrawn. */
    fun cancelAsync(thread: Int): Boolean = cancel(thread)

    /**
     * `Permits.release()` of the handle that the last future of [thread] completed with
     * (CONTRACT.md section 8): [NO_HANDLE] unless that acquisition was granted (it waits, was
     * cancelled, closed or failed: the future has no handle); the first call gives the permits it
     * took back, as [release] of that many would ([RELEASED]); every later call is a no-op
     * ([ALREADY_RELEASED]). If those permits are no longer held, because someone released by count
     * meanwhile, the call changes nothing and reports the over-release ([OVER_RELEASE]: the real
     * handle throws IllegalStateException), and the handle counts as released from then on.
     */
    fun releaseHandle(thread: Int): String {
        val handle = handles[thread]
        if (handle == null || handle.state != GRANTED) return NO_HANDLE
        if (handle.released) return ALREADY_RELEASED
        handle.released = true
        return if (release(handle.taken)) RELEASED else OVER_RELEASE
    }

    // ------------------------------------------------------------------ the queue

    /**
     * Whether a request of weight [w] that would have to join `Q` is refused by a queue bound:
     * `|Q| + 1 > maxQueueLength` or `queuedPermits() + w > maxQueuedPermits`.
     */
    private fun shed(w: Long): Boolean =
        queue.size + 1 > maxQueueLength || queuedPermits() + w > maxQueuedPermits

    /**
     * A rejected callback or future acquisition of [thread]: nothing queued, nothing to cancel
     * later.
     */
    private fun rejected(thread: Int): String {
        handles[thread] = null
        return REJECTED
    }

    /**
     * Grants the heads of `Q` in order while they fit. A waker's `claim()` is asked once the grants
     * are made, not during them: a head whose claim declines is granted like any other, its permits
     * in transit (not in the pool) while the heads behind it are served, and then given back, one
     * declined grant after the other in FIFO order, each going on to the heads behind as a release
     * of them would. So an up-to request served in the same pass as a declining head ahead of it
     * takes what the pool held without the declined permits (which may then become free).
     */
    private fun grantHeads() {
        val declined = ArrayDeque<Long>()
        var transit = 0L
        do {
            if (declined.isNotEmpty()) transit -= declined.removeFirst() // back, for the next heads
            while (queue.isNotEmpty() && queue.first().weight <= pool - transit) {
                val head = queue.removeFirst()
                val take =
                    minOf(pool - transit, head.maximum) // its weight, unless an up-to request
                if (head.grant(take)) {
                    held += take
                } else {
                    transit += take
                    declined.addLast(take)
                }
            }
        } while (declined.isNotEmpty())
    }

    private fun withdraw(waiter: Waiter) {
        if (queue.remove(waiter)) grantHeads() // a head's partial permits go on to the next heads
    }

    /**
     * A waiting acquisition; [weight] is what it needs (an up-to request's minimum), [maximum] what
     * it may take.
     */
    private abstract class Waiter(val weight: Long, val maximum: Long = weight) {
        /**
         * The queue reached this waiter with [take] permits for it; returns whether it took them.
         */
        abstract fun grant(take: Long): Boolean

        abstract fun fail()

        /** setCapacity made this waiter heavier than the capacity: it fails, holding nothing. */
        abstract fun failTooHeavy()

        /**
         * What identifies this waiter for state equality (continuations are compared by Lincheck).
         */
        abstract fun key(): Any
    }

    private inner class SuspendedAcquire(
        weight: Long,
        private val continuation: CancellableContinuation<Unit>,
    ) : Waiter(weight) {
        override fun grant(take: Long): Boolean {
            // A grant that loses to a (prompt) cancellation is given back; never a throw from a
            // cancellation (if the permits were released by others meanwhile, the give-back
            // returns false and changes nothing). Not run under Lincheck 3.7: see [acquire].
            continuation.resume(Unit) { _, _, _ -> release(take.toInt()) }
            return true
        }

        override fun fail() {
            continuation.resumeWithException(SemaphoreClosedException("acquire($weight)"))
        }

        override fun failTooHeavy() {
            continuation.resumeWithException(
                IllegalStateException("acquire($weight): exceeds the new capacity")
            )
        }

        override fun key(): Any = weight
    }

    /** A suspended [acquireUpTo]: resumed with the number it took. */
    private inner class SuspendedUpTo(
        min: Long,
        max: Long,
        private val continuation: CancellableContinuation<Long>,
    ) : Waiter(min, max) {
        override fun grant(take: Long): Boolean {
            continuation.resume(take) { _, _, _ -> release(take.toInt()) } // as SuspendedAcquire
            return true
        }

        override fun fail() {
            continuation.resumeWithException(
                SemaphoreClosedException("acquireUpTo($weight, $maximum)")
            )
        }

        override fun failTooHeavy() {
            continuation.resumeWithException(
                IllegalStateException("acquireUpTo($weight, $maximum): exceeds the new capacity")
            )
        }

        override fun key(): Any = listOf(weight, maximum)
    }

    private class Handle(
        val thread: Int,
        weight: Long,
        val declines: Boolean = false,
        maximum: Long = weight,
    ) : Waiter(weight, maximum) {
        var state = WAITING

        /**
         * The permits it took once [GRANTED]: its weight, or for an up-to request what it was
         * handed.
         */
        var taken = 0L

        /** Whether `Permits.release()` was called on it ([releaseHandle]). */
        var released = false

        override fun grant(take: Long): Boolean {
            state = if (declines) CANCELLED else GRANTED
            if (!declines) taken = take
            return !declines
        }

        override fun fail() {
            state = CLOSED
        }

        override fun failTooHeavy() {
            state = FAILED
        }

        override fun key(): Any = listOf(thread, weight, maximum, declines)
    }

    // ------------------------------------------------------------------ state equality for
    // Lincheck's LTS

    private fun snapshot(): List<Any?> =
        listOf(
            capacity,
            maxQueueLength,
            maxQueuedPermits,
            held,
            closed,
            queue.map { it.key() },
            handles.map { it?.let { h -> listOf(h.weight, h.state, h.taken, h.released) } },
        )

    override fun equals(other: Any?): Boolean =
        other is SequentialWeightedSemaphore &&
            capacity == other.capacity &&
            snapshot() == other.snapshot()

    override fun hashCode(): Int = snapshot().hashCode()

    override fun toString(): String =
        "SequentialWeightedSemaphore(N=$capacity, held=$held, closed=$closed, Q=${queue.map { it.key() }})"

    companion object {
        const val WAITING = "waiting"
        const val GRANTED = "granted"
        const val CLOSED = "closed"
        const val CANCELLED = "cancelled"
        const val FAILED = "failed"
        const val REJECTED = "rejected"

        /** The results of [releaseHandle]. */
        const val NO_HANDLE = "no handle"
        const val RELEASED = "released"
        const val ALREADY_RELEASED = "already released"
        const val OVER_RELEASE = "over-release"

        /**
         * Lincheck numbers its threads from 0 (initial part) to threads + 1 (post part); room
         * for 6.
         */
        const val MAX_THREADS = 8
    }
}

class SequentialWeightedSemaphore1 : SequentialWeightedSemaphore(1)

class SequentialWeightedSemaphore2 : SequentialWeightedSemaphore(2)

class SequentialWeightedSemaphore3 : SequentialWeightedSemaphore(3)

/** Capacity 2, at most one waiting acquisition (`maxQueueLength(1)`). */
class SequentialShedLength2 : SequentialWeightedSemaphore(2, maxQueueLength = 1)

/** Capacity 2, at most 2 permits waiting in total (`maxQueuedPermits(2)`). */
class SequentialShedPermits2 : SequentialWeightedSemaphore(2, maxQueuedPermits = 2)
