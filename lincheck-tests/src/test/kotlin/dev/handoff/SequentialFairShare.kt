// SPDX-License-Identifier: Apache-2.0
package dev.handoff

import java.math.BigInteger
import kotlinx.coroutines.CancellableContinuation
import kotlinx.coroutines.suspendCancellableCoroutine

/**
 * The sequential specification of [FairShareSemaphore] (CONTRACT §9), written from the contract and
 * the definition of start-time fair queuing, not from the implementation: it keeps no heap, no
 * core, no dispatch queue of its own, only per-key FIFO lists, a pool of free permits, and the one
 * request that is being served; after every operation it recomputes who is served from scratch.
 *
 * The order across keys, as the contract's notes define it:
 * - virtual time is counted in units of 1/720720; a grant of `n` to a key of share `w` advances
 *   that key's finish time by `ceil(n * 720720 / w)`;
 * - a key that starts to hold or wait after holding and waiting for nothing starts with finish time
 *   = the system virtual time `v`;
 * - when a key can be served (it waits, it is not the one being served, its cap allows its first
 *   request) and has no start tag yet, its first request gets the start tag `max(v, finish)`; a key
 *   that can no longer be served loses its tag;
 * - while nobody is being served, the request with the smallest (tag, arrival) is: `v` becomes its
 *   tag; it takes what is free, all of it if that is enough (granted), else all that is free and
 *   every permit returned later until it has enough (partial assignment, head-of-line blocking);
 * - a grant at once (nothing can be served, the key waits for nothing, its cap allows it, enough is
 *   free) is not charged: it takes nobody's turn, so it moves neither `v` nor the key's finish.
 *   Within a key: FIFO. Cancelling the request being served returns its partial permits to the
 *   pool.
 *
 * The suspending `acquire(key, n)` of `dev.handoff.coroutines` ([acquire]) is one more request of
 * the same order: granted at once as [tryAcquire] would, else queued until the order reaches it; a
 * cancellation while it waits withdraws it like [cancel], so a cancelled acquire ends with
 * CancellationException holding nothing, never with another exception. Permits have no owner:
 * [release] by any thread, `false` (nothing changes) if the key holds fewer than `n`.
 */
open class SequentialFairShare(
    private val capacity: Long,
    private val shares: LongArray,
    private val cap: Long = Long.MAX_VALUE,
) {
    private class Request(
        val thread: Int,
        val key: Int,
        val n: Long,
        val arrival: Long,
        val continuation: CancellableContinuation<Unit>? = null,
        val declines: Boolean = false,
    ) {
        var state = WAITING
    }

    private class Key(val share: Long, var finish: BigInteger) {
        var held = 0L
        /**
         * Granted to a declining claim that is asked after the pass (see [settle]); 0 between
         * calls.
         */
        var transit = 0L
        val queue = ArrayDeque<Request>()
        var tag: BigInteger? = null
    }

    private val keys = HashMap<Int, Key>()
    private val handles = arrayOfNulls<Request>(MAX_THREADS)
    /** Virtual time, unbounded (the fair share keeps it in a long and rebases it now and then). */
    private var v = BigInteger.ZERO
    private var arrivals = 0L
    private var pool = capacity
    private var served: Request? = null
    private var assigned = 0L
    private var closed = false

    /** Keys are generated as 0..2 and folded into this configuration's keys, as the test does. */
    private fun fold(key: Int): Int = key.coerceIn(0, shares.lastIndex)

    private fun advance(n: Long, w: Long): BigInteger =
        (BigInteger.valueOf(n) * BigInteger.valueOf(SCALE) + BigInteger.valueOf(w - 1)) /
            BigInteger.valueOf(w)

    /**
     * The weight an operation's parameter stands for: itself, unless a subclass maps the small
     * parameters onto weights that need the wide layout of the state word.
     */
    protected open fun weight(n: Int): Long = n.toLong()

    private fun key(k: Int): Key = keys.getOrPut(k) { Key(shares[k], v) }

    private fun forgetIfIdle(k: Int) {
        val s = keys[k] ?: return
        if (s.held == 0L && s.transit == 0L && s.queue.isEmpty() && served?.key != k) keys.remove(k)
    }

    private fun servable(k: Key): Boolean {
        val first = k.queue.firstOrNull() ?: return false
        return served?.let { keys[it.key] } !== k && k.held + k.transit + first.n <= cap
    }

    /** Requests granted in this pass whose claims decline, in the order their claims are asked. */
    private val declined = ArrayDeque<Request>()

    /**
     * Recomputes who is served after a change: tags, picks, hands the pool out. A waker's claim is
     * asked after the pass of grants, not during it: a request whose claim declines is granted like
     * any other (its key charged for the turn), its permits in transit (counting against its key's
     * cap) while the pass goes on; then, one declined request after the other, its permits come
     * back and go on to the next requests in order, as a release of them would.
     */
    private fun settle() {
        if (closed) return
        while (true) {
            pass()
            val r = declined.removeFirstOrNull() ?: return
            keys[r.key]!!.transit -= r.n
            pool += r.n
            forgetIfIdle(r.key)
            if (closed) return
        }
    }

    /** One pass of grants: until nothing can be served, or the served request waits for more. */
    private fun pass() {
        while (true) {
            for (k in keys.values) {
                if (servable(k)) {
                    if (k.tag == null) k.tag = maxOf(v, k.finish)
                } else {
                    k.tag = null
                }
            }
            var r = served
            if (r == null) {
                val next =
                    keys.values
                        .filter { it.tag != null }
                        .minWithOrNull(compareBy<Key>({ it.tag!! }, { it.queue.first().arrival }))
                        ?: return
                r = next.queue.removeFirst()
                v = maxOf(v, next.tag!!)
                next.tag = null
                served = r
                servedTag = v
                assigned = 0
            }
            val need = r.n - assigned
            if (pool < need) {
                assigned += pool
                pool = 0
                return
            }
            pool -= need
            served = null
            assigned = 0
            val k = keys[r.key]!!
            if (r.declines) {
                // Its turn was taken (its key charged as for a grant); its claim, asked after the
                // pass, turns the permits down (see settle)
                k.finish = servedTag + advance(r.n, k.share)
                k.transit += r.n
                r.state = CANCELLED
                declined.addLast(r)
                continue
            }
            r.state = GRANTED
            k.held += r.n
            k.finish = servedTag + advance(r.n, k.share)
            // A suspended acquire resumes; a grant that loses to a prompt cancellation is given
            // back (never a throw: if others released the permits meanwhile, nothing changes).
            // Lincheck 3.7 runs this undo on neither side (see SemaphoreLincheckTest.kt).
            r.continuation?.resume(Unit) { _, _, _ -> releaseWeight(r.key, r.n) }
        }
    }

    private var servedTag = BigInteger.ZERO

    private fun nothingServable(): Boolean = served == null && keys.values.none { servable(it) }

    private fun grantAtOnce(k: Int, n: Long) {
        key(k).held += n
    }

    private fun fitsAtOnce(k: Int, n: Long): Boolean {
        val s = keys[k]
        return nothingServable() &&
            (s == null || (s.queue.isEmpty() && s.held + n <= cap)) &&
            pool >= n
    }

    fun tryAcquire(key: Int, n: Int): Boolean {
        val k = fold(key)
        val w = weight(n)
        if (closed) return false
        if (w > capacity || w > cap || !fitsAtOnce(k, w)) return false
        pool -= w
        grantAtOnce(k, w)
        return true
    }

    fun start(thread: Int, key: Int, n: Int): String {
        val k = fold(key)
        val w = weight(n)
        val r = Request(thread, k, w, arrivals)
        handles[thread] = r
        if (closed) {
            r.state = CLOSED
            return CLOSED
        }
        if (fitsAtOnce(k, w)) {
            pool -= w
            grantAtOnce(k, w)
            r.state = GRANTED
            return GRANTED
        }
        arrivals++
        key(k).queue.addLast(r)
        settle()
        return if (r.state == GRANTED) GRANTED else WAITING
    }

    /**
     * `acquireThen(key, n, waker)` with a waker whose `claim()` declines (its party is gone by the
     * grant): if it could be granted at once it settles as `"cancelled"` and nothing changes;
     * otherwise it waits like any request, and when its turn comes it takes nothing (its key
     * charged for the turn) and the permits go on once the pass that granted it is done (see
     * [settle]). A close fails it like any waiter.
     */
    fun startDeclining(thread: Int, key: Int, n: Int): String {
        val k = fold(key)
        val w = weight(n)
        val r = Request(thread, k, w, arrivals, declines = true)
        handles[thread] = r
        if (closed) {
            r.state = CLOSED
            return CLOSED
        }
        if (w == 0L || fitsAtOnce(k, w)) {
            r.state = CANCELLED
            return CANCELLED
        }
        arrivals++
        key(k).queue.addLast(r)
        settle()
        return r.state
    }

    fun cancel(thread: Int): Boolean {
        val r = handles[thread] ?: return false
        return withdraw(r)
    }

    /**
     * The suspending `acquire(key, n)`: granted at once if [tryAcquire] would grant, else queued in
     * order (tagged as any request) until granted, or withdrawn by a cancellation (holding
     * nothing), or failed by [close].
     */
    suspend fun acquire(key: Int, n: Int) {
        val k = fold(key)
        val w = weight(n)
        if (closed) throw SemaphoreClosedException("acquire($k, $n)")
        if (w == 0L) return
        if (fitsAtOnce(k, w)) {
            pool -= w
            grantAtOnce(k, w)
            return
        }
        suspendCancellableCoroutine { continuation ->
            val r = Request(-1, k, w, arrivals++, continuation)
            key(k).queue.addLast(r)
            continuation.invokeOnCancellation { withdraw(r) }
            settle()
        }
    }

    /** Withdraws a waiting request (cancel, or a cancelled suspension): true iff it was waiting. */
    private fun withdraw(r: Request): Boolean {
        if (r.state != WAITING) return false
        r.state = CANCELLED
        if (served === r) {
            served = null
            pool += assigned
            assigned = 0
        } else {
            keys[r.key]!!.queue.remove(r)
        }
        forgetIfIdle(r.key)
        settle()
        return true
    }

    fun state(thread: Int): String = handles[thread]?.state ?: NONE

    fun release(key: Int, n: Int): Boolean = releaseWeight(fold(key), weight(n))

    private fun releaseWeight(k: Int, n: Long): Boolean {
        val s = keys[k]
        if (s == null || s.held < n) return false
        s.held -= n
        pool += n
        settle()
        forgetIfIdle(k)
        return true
    }

    fun close() {
        if (closed) return
        closed = true
        served?.let { it.fail() }
        pool += assigned
        assigned = 0
        served = null
        for (s in keys.values) {
            for (r in s.queue) r.fail()
            s.queue.clear()
            s.tag = null
        }
        keys.keys.toList().forEach { forgetIfIdle(it) }
    }

    private fun Request.fail() {
        state = CLOSED
        continuation?.resumeWith(Result.failure(SemaphoreClosedException("acquire($key, $n)")))
    }

    fun heldPermits(key: Int): Long = keys[fold(key)]?.held ?: 0L

    fun availablePermits(): Long = if (nothingServable()) pool else 0L

    fun queueLength(): Int = keys.values.sumOf { it.queue.size } + (if (served != null) 1 else 0)

    fun queueLengthOf(key: Int): Int {
        val k = fold(key)
        return (keys[k]?.queue?.size ?: 0) + (if (served?.key == k) 1 else 0)
    }

    fun activeKeys(): Int = keys.size

    /**
     * State equality for Lincheck's transition system (continuations are compared by identity
     * there).
     */
    private fun snapshot(): List<Any?> =
        listOf(
            v,
            arrivals,
            pool,
            assigned,
            closed,
            servedTag,
            served?.let { listOf(it.key, it.n, it.arrival, it.declines) },
            keys.toSortedMap().map { (id, k) ->
                listOf(
                    id,
                    k.held,
                    k.finish,
                    k.tag,
                    k.queue.map { listOf(it.n, it.arrival, it.thread, it.declines) },
                )
            },
            handles.map { it?.let { h -> listOf(h.key, h.n, h.state) } },
        )

    override fun equals(other: Any?): Boolean =
        other is SequentialFairShare &&
            javaClass == other.javaClass &&
            snapshot() == other.snapshot()

    override fun hashCode(): Int = snapshot().hashCode()

    companion object {
        const val SCALE = 720_720L
        const val MAX_THREADS = 8
        const val WAITING = "waiting"
        const val GRANTED = "granted"
        const val CLOSED = "closed"
        const val CANCELLED = "cancelled"
        const val NONE = "none"
    }
}

/** Capacity 3, keys 0 and 1 with shares 1 and 2, no cap: the suspending face. */
class SequentialFairShare3 : SequentialFairShare(3, longArrayOf(1, 2))

/** Capacity 2, keys 0 and 1 with shares 1 and 2. */
class SequentialFairShare2 : SequentialFairShare(2, longArrayOf(1, 2))

/**
 * Capacity 3, keys 0, 1 and 2 with shares 1, 2 and 3 (3 does not divide into whole tags for 2), cap
 * 2 per key.
 */
class SequentialFairShare3Capped : SequentialFairShare(3, longArrayOf(1, 2, 3), cap = 2)
