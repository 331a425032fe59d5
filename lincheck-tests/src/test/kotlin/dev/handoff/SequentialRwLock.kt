// SPDX-License-Identifier: Apache-2.0
package dev.handoff

import kotlinx.coroutines.CancellableContinuation
import kotlinx.coroutines.suspendCancellableCoroutine

/**
 * The sequential specification of [RwLock] (its javadoc), written from the contract alone and as
 * plainly as possible. The state is `(maxReaders, readers, writer, Q)`:
 * - `readers` = read locks held, `writer` = whether the write lock is held;
 * - `Q` = the FIFO queue of waiting read and write requests.
 *
 * A read is granted at once iff `Q` is empty, there is no writer and `readers < maxReaders`; a
 * write iff `Q` is empty, there are no readers and no writer. Otherwise the request joins `Q`.
 * Whenever the lock is given up (an unlock, a downgrade, a waiter leaving `Q`), the heads of `Q`
 * are granted in order while they fit, stopping at the first that does not: a queued writer keeps
 * the readers behind it out, even while read permits are free. [downgrade] turns the writer into
 * one reader. Misuse (read-unlocking while write-locked or not read-locked, write-unlocking or
 * downgrading while not write-locked) returns `false` and changes nothing (the real lock throws
 * IllegalStateException, which the test reports as `false`); a successful unlock returns `true`.
 *
 * **Ownership, a layer of the test, not of the lock.** The lock has no owners, but the Lincheck
 * tests let each thread unlock only what it holds (see RwLockLincheckTest.kt for why), so this
 * class also counts, per *owner slot* (the thread id of the test, 0 = Lincheck's initial part), the
 * read locks and the write lock that the slot's calls obtained. A slot is credited when its call
 * returns normally: a suspended `readLock`/`writeLock` when it resumes (one cancelled after its
 * grant holds the lock for nobody, on both sides), [downgrade] with one read lock. An unlock by a
 * slot other than 0 that holds nothing of the kind returns `false` and does nothing (the test does
 * not call the lock then); slot 0 is never restricted, so the initial part also exercises misuse.
 *
 * Subclasses fix `maxReaders`, because Lincheck creates the specification with its no-argument
 * constructor: [SequentialRwLock2], [SequentialRwLock3].
 */
open class SequentialRwLock(private val maxReaders: Int) {
    private var readers = 0
    private var writer = false
    private val queue = ArrayDeque<Request>()

    /** Read locks obtained and not yet released, per owner slot. */
    private val readsHeld = IntArray(MAX_SLOTS)

    /** Whether each owner slot obtained the write lock and has not yet released it. */
    private val writeHeld = BooleanArray(MAX_SLOTS)

    // ------------------------------------------------------------------ observers

    fun isWriteLocked(): Boolean = writer

    fun readLockCount(): Int = readers

    fun queueLength(): Int = queue.size

    // ------------------------------------------------------------------ non-blocking

    fun tryReadLock(owner: Int): Boolean {
        if (queue.isNotEmpty() || !readFits()) return false
        readers++
        readsHeld[owner]++
        return true
    }

    fun tryWriteLock(owner: Int): Boolean {
        if (queue.isNotEmpty() || !writeFits()) return false
        writer = true
        writeHeld[owner] = true
        return true
    }

    fun readUnlock(owner: Int): Boolean {
        if (owner != INITIAL && readsHeld[owner] == 0)
            return false // not called (see the class comment)
        if (writer || readers == 0) return false // misuse: write-locked, or not read-locked
        readers--
        if (readsHeld[owner] > 0) readsHeld[owner]--
        grantHeads()
        return true
    }

    fun writeUnlock(owner: Int): Boolean {
        if (owner != INITIAL && !writeHeld[owner]) return false // not called
        if (!writer) return false // misuse: not write-locked
        writer = false
        writeHeld[owner] = false
        grantHeads()
        return true
    }

    fun downgrade(owner: Int): Boolean {
        if (owner != INITIAL && !writeHeld[owner]) return false // not called
        if (!writer) return false // misuse: not write-locked
        writer = false
        writeHeld[owner] = false
        readers = 1
        readsHeld[owner]++
        grantHeads()
        return true
    }

    // ------------------------------------------------------------------ suspending

    suspend fun readLock(owner: Int) {
        if (queue.isNotEmpty() || !readFits()) wait(Request(write = false)) else readers++
        readsHeld[owner]++ // when the call returns, not at the grant (see the class comment)
    }

    suspend fun writeLock(owner: Int) {
        if (queue.isNotEmpty() || !writeFits()) wait(Request(write = true)) else writer = true
        writeHeld[owner] = true
    }

    /**
     * Joins the tail of `Q` and suspends until granted. Cancellation while waiting leaves `Q`,
     * which may let the requests behind it in (readers behind a cancelled writer).
     */
    private suspend fun wait(request: Request) {
        suspendCancellableCoroutine { continuation ->
            request.continuation = continuation
            queue.addLast(request)
            continuation.invokeOnCancellation { if (queue.remove(request)) grantHeads() }
        }
    }

    // ------------------------------------------------------------------ the queue

    private fun readFits(): Boolean = !writer && readers < maxReaders

    private fun writeFits(): Boolean = !writer && readers == 0

    private fun grantHeads() {
        while (queue.isNotEmpty()) {
            val head = queue.first()
            if (head.write) {
                if (!writeFits()) return
                writer = true
            } else {
                if (!readFits()) return
                readers++
            }
            queue.removeFirst()
            // If the head is cancelled after this grant but before it runs (prompt cancellation),
            // it
            // gives the lock back, as the real adapter does. (Under Lincheck 3.7 neither side runs
            // this undo, see SemaphoreLincheckTest.kt.)
            head.continuation.resume(Unit) { _, _, _ ->
                if (head.write) writer = false else readers--
                grantHeads()
            }
        }
    }

    private class Request(val write: Boolean) {
        lateinit var continuation: CancellableContinuation<Unit>
    }

    // ------------------------------------------------------------------ state equality for
    // Lincheck's LTS

    private fun snapshot(): Any =
        listOf(readers, writer, queue.map { it.write }, readsHeld.toList(), writeHeld.toList())

    override fun equals(other: Any?): Boolean =
        other is SequentialRwLock &&
            maxReaders == other.maxReaders &&
            snapshot() == other.snapshot()

    override fun hashCode(): Int = snapshot().hashCode()

    override fun toString(): String =
        "SequentialRwLock(maxReaders=$maxReaders, readers=$readers, writer=$writer, " +
            "Q=${queue.map { if (it.write) "W" else "R" }})"

    companion object {
        /** The owner slot of Lincheck's initial part (sequential: never restricted). */
        const val INITIAL = 0

        /**
         * Lincheck numbers its threads from 0 (initial part) to threads + 1 (post part); room
         * for 6.
         */
        const val MAX_SLOTS = 8
    }
}

class SequentialRwLock2 : SequentialRwLock(2)

class SequentialRwLock3 : SequentialRwLock(3)
