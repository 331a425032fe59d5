// SPDX-License-Identifier: Apache-2.0
package dev.handoff

import kotlinx.coroutines.CancellableContinuation
import kotlinx.coroutines.suspendCancellableCoroutine

/**
 * The sequential specification of [Mutex] (its javadoc), written from the contract alone and as
 * plainly as possible: a `locked` flag and a FIFO queue of waiting `lock()` calls.
 * - [tryLock] locks iff the mutex is unlocked and nobody waits;
 * - [lock] locks at once under the same condition, otherwise joins the tail of the queue;
 * - [unlock], by any caller (the mutex has no owner), hands the lock straight to the head of the
 *   queue (the mutex stays locked), or unlocks if nobody waits, and returns `true`; unlocking an
 *   unlocked mutex returns `false` and changes nothing (the real one throws IllegalStateException,
 *   which the test reports as `false`);
 * - a cancelled waiter leaves the queue (nothing is granted by that: the mutex is locked) and holds
 *   nothing.
 */
class SequentialMutex {
    private var locked = false
    private val queue = ArrayDeque<CancellableContinuation<Unit>>()

    fun isLocked(): Boolean = locked

    fun queueLength(): Int = queue.size

    fun tryLock(): Boolean {
        if (locked || queue.isNotEmpty()) return false
        locked = true
        return true
    }

    fun unlock(): Boolean {
        if (!locked) return false // nothing changes
        val head = queue.removeFirstOrNull()
        if (head == null) {
            locked = false
        } else {
            // The lock goes to the head directly. If the head is cancelled after this grant but
            // before it runs (prompt cancellation), it unlocks again, as the real adapter does: a
            // grant that lost to a cancellation is given back. If someone else unlocked meanwhile,
            // the give-back finds it unlocked and changes nothing. (Under Lincheck 3.7 neither side
            // runs this undo, see SemaphoreLincheckTest.kt.)
            head.resume(Unit) { _, _, _ -> unlock() }
        }
        return true
    }

    suspend fun lock() {
        if (tryLock()) return
        suspendCancellableCoroutine { continuation ->
            queue.addLast(continuation)
            continuation.invokeOnCancellation { queue.remove(continuation) }
        }
    }

    // ------------------------------------------------------------------ state equality for
    // Lincheck's LTS

    private fun snapshot(): Any = listOf(locked, queue.size)

    override fun equals(other: Any?): Boolean =
        other is SequentialMutex && snapshot() == other.snapshot()

    override fun hashCode(): Int = snapshot().hashCode()

    override fun toString(): String = "SequentialMutex(locked=$locked, queued=${queue.size})"
}
