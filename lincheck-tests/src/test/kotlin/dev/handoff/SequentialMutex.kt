// SPDX-License-Identifier: Apache-2.0
package dev.handoff

import kotlinx.coroutines.CancellableContinuation
import kotlinx.coroutines.suspendCancellableCoroutine

/**
 * The sequential specification of [Mutex] (CONTRACT.md, section 3), written from the contract
 * alone and as plainly as possible: a `locked` flag and a FIFO queue of waiting `lock()` calls.
 *
 *  - [tryLock] locks iff the mutex is unlocked and nobody waits;
 *  - [lock] locks at once under the same condition, otherwise joins the tail of the queue;
 *  - [unlock] hands the lock straight to the head of the queue (the mutex stays locked), or
 *    unlocks if nobody waits; unlocking an unlocked mutex throws [IllegalStateException] and
 *    changes nothing;
 *  - a cancelled waiter leaves the queue (nothing is granted by that: the mutex is locked).
 */
class SequentialMutex {
    private var locked = false
    private val queue = ArrayDeque<CancellableContinuation<Unit>>()

    fun isLocked(): Boolean = locked

    fun queueLength(): Int = queue.size

    /** The lock held through each thread's own calls (see MutexLincheckTest: unlocks are owned). */
    private val holds = BooleanArray(MAX_SLOTS)

    fun tryLock(owner: Int): Boolean = tryLock().also { if (it) holds[owner] = true }

    /** `unlock()` by [owner] if it holds the lock; `false`, changing nothing, if it does not. */
    fun unlock(owner: Int): Boolean {
        if (!holds[owner]) return false
        holds[owner] = false
        unlock()
        return true
    }

    suspend fun lock(owner: Int) {
        lock()
        holds[owner] = true
    }

    private fun tryLock(): Boolean {
        if (locked || queue.isNotEmpty()) return false
        locked = true
        return true
    }

    private fun unlock() {
        if (!locked) throw IllegalStateException("unlock(): the mutex is not locked") // nothing changes
        val head = queue.removeFirstOrNull()
        if (head == null) {
            locked = false
        } else {
            // The lock goes to the head directly. If the head is cancelled after this grant but
            // before it runs, it unlocks again, as the real adapter does: a grant that lost to a
            // cancellation is given back. If someone else unlocked meanwhile (misuse: the mutex has
            // no owner), the give-back finds it unlocked; the real one's unlock then throws (to
            // kotlinx's exception handler) and changes nothing, so here it changes nothing either.
            head.resume(Unit) { _, _, _ -> if (locked) unlock() }
        }
    }

    private suspend fun lock() {
        if (tryLock()) return
        suspendCancellableCoroutine { continuation ->
            queue.addLast(continuation)
            continuation.invokeOnCancellation { queue.remove(continuation) }
        }
    }

    // ------------------------------------------------------------------ state equality for Lincheck's LTS

    private fun snapshot(): Any = listOf(locked, queue.size, holds.toList())

    override fun equals(other: Any?): Boolean = other is SequentialMutex && snapshot() == other.snapshot()

    override fun hashCode(): Int = snapshot().hashCode()

    override fun toString(): String = "SequentialMutex(locked=$locked, queued=${queue.size})"

    companion object {
        /** Lincheck numbers its threads from 0 (initial part) to threads + 1 (post part); room for 6. */
        const val MAX_SLOTS = 8
    }
}
