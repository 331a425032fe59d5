// SPDX-License-Identifier: Apache-2.0
package dev.handoff.coroutines

import dev.handoff.RwLock
import dev.handoff.SemaphoreClosedException
import dev.handoff.SemaphoreRejectedException
import kotlin.test.assertEquals
import kotlin.test.assertFailsWith
import kotlin.test.assertFalse
import kotlin.test.assertTrue
import kotlinx.coroutines.ExperimentalCoroutinesApi
import kotlinx.coroutines.Job
import kotlinx.coroutines.delay
import kotlinx.coroutines.launch
import kotlinx.coroutines.test.TestScope
import kotlinx.coroutines.test.runCurrent
import kotlinx.coroutines.test.runTest
import org.junit.jupiter.api.Test

/**
 * The suspending face of [RwLock] on virtual time: readers share, a writer excludes, a queued
 * writer holds back later readers, cancellation of a queued reader and of a partly served writer,
 * prompt cancellation, close, a full queue, downgrade, and the `with` helpers. Every test ends with
 * the lock free (closed, in the close test) and nobody queued.
 */
@OptIn(ExperimentalCoroutinesApi::class)
class RwLockSuspendTest {

    private fun RwLock.assertIdle() {
        assertEquals(0, queueLength(), "queue length of $this")
        assertFalse(isWriteLocked, "$this is write-locked")
        assertEquals(0, readLockCount(), "readers of $this")
        assertTrue(tryWriteLock(), "$this cannot be write-locked") // every read permit is free
        writeUnlock()
    }

    /** Launches a coroutine that takes a read lock and records it in [granted], then waits. */
    private fun TestScope.reader(lock: RwLock, name: String, granted: MutableList<String>): Job =
        launch {
            lock.readLock()
            granted += name
        }

    private fun TestScope.writer(lock: RwLock, name: String, granted: MutableList<String>): Job =
        launch {
            lock.writeLock()
            granted += name
        }

    @Test
    fun `readers share up to maxReaders, the next one waits for a reader to leave`(): Unit =
        runTest {
            val lock = RwLock(3)
            repeat(3) { lock.readLock() } // no suspension: three readers at once
            assertEquals(3, lock.readLockCount())
            val granted = mutableListOf<String>()
            reader(lock, "fourth", granted)
            runCurrent()
            assertEquals(emptyList(), granted, "the reader limit is a real bound")
            assertEquals(1, lock.queueLength())
            lock.readUnlock()
            runCurrent()
            assertEquals(listOf("fourth"), granted)
            assertEquals(3, lock.readLockCount())
            repeat(3) { lock.readUnlock() }
            lock.assertIdle()
        }

    @Test
    fun `a writer excludes readers and writers, and its unlock lets the readers at the head in`():
        Unit = runTest {
        val lock = RwLock(4)
        lock.writeLock()
        assertTrue(lock.isWriteLocked)
        val granted = mutableListOf<String>()
        reader(lock, "r1", granted)
        runCurrent()
        reader(lock, "r2", granted)
        runCurrent()
        writer(lock, "w", granted)
        runCurrent()
        reader(lock, "r3", granted)
        runCurrent()
        assertEquals(emptyList(), granted)
        assertEquals(4, lock.queueLength())

        lock.writeUnlock() // r1 and r2 get in; w waits for them; r3 waits behind w
        runCurrent()
        assertEquals(listOf("r1", "r2"), granted)
        assertEquals(2, lock.readLockCount())
        assertFalse(lock.tryReadLock(), "a queued writer holds back new readers")

        lock.readUnlock()
        lock.readUnlock()
        runCurrent()
        assertEquals(listOf("r1", "r2", "w"), granted)
        assertTrue(lock.isWriteLocked)

        lock.writeUnlock()
        runCurrent()
        assertEquals(listOf("r1", "r2", "w", "r3"), granted)
        lock.readUnlock()
        lock.assertIdle()
    }

    @Test
    fun `a queued writer makes a new reader wait although read permits are free`(): Unit = runTest {
        val lock = RwLock(8)
        lock.readLock()
        val granted = mutableListOf<String>()
        writer(lock, "w", granted)
        runCurrent()
        reader(lock, "late reader", granted)
        runCurrent()
        assertEquals(emptyList(), granted)
        assertEquals(1, lock.readLockCount(), "7 of 8 read permits are not held by any reader")
        assertEquals(2, lock.queueLength())
        assertFalse(lock.tryReadLock())

        lock.readUnlock()
        runCurrent()
        assertEquals(listOf("w"), granted)
        lock.writeUnlock()
        runCurrent()
        assertEquals(listOf("w", "late reader"), granted)
        lock.readUnlock()
        lock.assertIdle()
    }

    @Test
    fun `cancelling a queued, partially served writer lets the readers behind it in`(): Unit =
        runTest {
            val lock = RwLock(3)
            lock.readLock()
            lock.readLock() // two readers; one read permit free
            val granted = mutableListOf<String>()
            val w = writer(lock, "w", granted) // takes the free permit at once, waits for 2 more
            runCurrent()
            reader(lock, "r1", granted)
            runCurrent()
            reader(lock, "r2", granted)
            runCurrent()
            lock.readUnlock() // the writer now holds 2 of its 3
            runCurrent()
            assertEquals(emptyList(), granted)
            assertEquals(3, lock.queueLength())
            assertEquals(1, lock.readLockCount())

            w.cancel() // its 2 permits go on: both readers behind it get in
            runCurrent()
            assertTrue(w.isCancelled)
            assertEquals(listOf("r1", "r2"), granted)
            assertEquals(0, lock.queueLength())
            assertEquals(3, lock.readLockCount())
            repeat(3) { lock.readUnlock() }
            lock.assertIdle()
        }

    @Test
    fun `a writer cancelled after its grant but before it runs does not keep the lock`(): Unit =
        runTest {
            val lock = RwLock(2)
            lock.readLock()
            var ran = false
            val w = launch {
                lock.writeLock()
                ran = true
            }
            runCurrent()
            lock.readUnlock() // granted: write-locked from the grant on, resumption scheduled
            assertTrue(lock.isWriteLocked)
            w.cancel()
            runCurrent()
            assertFalse(ran)
            assertFalse(lock.isWriteLocked)
            lock.assertIdle()
        }

    @Test
    fun `a reader cancelled after its grant but before it runs does not keep its read lock`():
        Unit = runTest {
        val lock = RwLock(2)
        lock.writeLock()
        var ran = false
        val r = launch {
            lock.readLock()
            ran = true
        }
        runCurrent()
        lock.writeUnlock()
        assertEquals(1, lock.readLockCount())
        r.cancel()
        runCurrent()
        assertFalse(ran)
        lock.assertIdle()
    }

    @Test
    fun `downgrade lets waiting readers in but not a waiting writer`(): Unit = runTest {
        val lock = RwLock(4)
        lock.writeLock()
        val granted = mutableListOf<String>()
        reader(lock, "r1", granted)
        runCurrent()
        reader(lock, "r2", granted)
        runCurrent()
        writer(lock, "w", granted)
        runCurrent()
        lock.downgrade()
        runCurrent()
        assertEquals(listOf("r1", "r2"), granted)
        assertEquals(3, lock.readLockCount())
        repeat(3) { lock.readUnlock() }
        runCurrent()
        assertEquals(listOf("r1", "r2", "w"), granted)
        lock.writeUnlock()
        lock.assertIdle()
    }

    @Test
    fun `withReadLock and withWriteLock release on return, exception and non-local return`(): Unit =
        runTest {
            val lock = RwLock(2)
            assertEquals(1, lock.withReadLock { lock.readLockCount() })
            assertEquals(true, lock.withWriteLock { lock.isWriteLocked })
            lock.assertIdle()

            assertFailsWith<IllegalStateException> { lock.withReadLock { error("boom") } }
            assertFailsWith<IllegalStateException> { lock.withWriteLock { error("boom") } }
            lock.assertIdle()

            suspend fun find(values: List<Int>, write: Boolean): Int? {
                for (v in values) {
                    if (write) {
                        lock.withWriteLock { if (v > 1) return v }
                    } else {
                        lock.withReadLock { if (v > 1) return v }
                    }
                }
                return null
            }
            assertEquals(2, find(listOf(1, 2, 3), write = false))
            assertEquals(2, find(listOf(1, 2, 3), write = true))
            lock.assertIdle()

            val read: Int
            val written: Int
            lock.withReadLock { read = 1 }
            lock.withWriteLock { written = 2 }
            assertEquals(3, read + written)
        }

    @Test
    fun `readers run together and writers alone, on virtual time`(): Unit = runTest {
        val lock = RwLock(3)
        var readers = 0
        var writers = 0
        var maxReaders = 0
        val jobs =
            (0 until 60).map { i ->
                launch {
                    delay(i % 5L)
                    if (i % 4 == 0) {
                        lock.withWriteLock {
                            writers++
                            assertEquals(0, readers)
                            assertEquals(1, writers)
                            delay(2)
                            writers--
                        }
                    } else {
                        lock.withReadLock {
                            readers++
                            maxReaders = maxOf(maxReaders, readers)
                            assertEquals(0, writers)
                            assertTrue(readers <= 3)
                            delay(3)
                            readers--
                        }
                    }
                }
            }
        jobs.forEach { it.join() }
        assertEquals(3, maxReaders, "readers did share")
        lock.assertIdle()
    }

    @Test
    fun `a cancelled queued reader leaves the queue holding nothing`(): Unit = runTest {
        val lock = RwLock(2)
        lock.writeLock()
        val granted = mutableListOf<String>()
        val first = reader(lock, "first", granted)
        reader(lock, "second", granted)
        runCurrent()
        assertEquals(2, lock.queueLength())
        first.cancel()
        runCurrent()
        assertTrue(first.isCancelled)
        assertEquals(1, lock.queueLength())
        lock.writeUnlock()
        runCurrent()
        assertEquals(listOf("second"), granted)
        assertEquals(1, lock.readLockCount(), "only the second reader holds a read lock")
        lock.readUnlock()
        lock.assertIdle()
    }

    @Test
    fun `close fails every waiting reader and writer with SemaphoreClosedException`(): Unit =
        runTest {
            val lock = RwLock(2)
            lock.writeLock()
            val failures = mutableListOf<String>()
            var ranInside = false
            launch { recordClosed(failures) { lock.readLock() } }
            launch { recordClosed(failures) { lock.writeLock() } }
            launch { recordClosed(failures) { lock.withReadLock { ranInside = true } } }
            launch { recordClosed(failures) { lock.withWriteLock { ranInside = true } } }
            runCurrent()
            assertEquals(4, lock.queueLength())
            lock.close()
            runCurrent()
            assertEquals(
                listOf(
                    "readLock(): the lock is closed",
                    "readLock(): the lock is closed",
                    "writeLock(): the lock is closed",
                    "writeLock(): the lock is closed",
                ),
                failures.sorted(),
            )
            assertFalse(ranInside, "the with helpers run their action only under the lock")
            assertEquals(0, lock.queueLength())
            assertTrue(lock.isWriteLocked, "the holder keeps the lock")
            lock.writeUnlock() // unlocking works on a closed lock
            assertFalse(lock.tryReadLock())
            assertEquals(
                "readLock(): the lock is closed",
                assertFailsWith<SemaphoreClosedException> { lock.readLock() }.message,
            )
            assertEquals(
                "writeLock(): the lock is closed",
                assertFailsWith<SemaphoreClosedException> { lock.writeLock() }.message,
            )
            assertFalse(lock.isWriteLocked)
            assertEquals(0, lock.readLockCount())
        }

    @Test
    fun `a lock refused by a full queue names the suspending call and holds nothing`(): Unit =
        runTest {
            val lock = RwLock.builder(2).maxQueueLength(1).build()
            lock.writeLock()
            val granted = mutableListOf<String>()
            reader(lock, "queued", granted)
            runCurrent()
            val read = assertFailsWith<SemaphoreRejectedException> { lock.readLock() }
            assertTrue(read.message!!.startsWith("readLock(): rejected"), read.message)
            val write = assertFailsWith<SemaphoreRejectedException> { lock.writeLock() }
            assertTrue(write.message!!.startsWith("writeLock(): rejected"), write.message)
            assertEquals(1, lock.queueLength(), "the refused calls did not queue")
            lock.writeUnlock()
            runCurrent()
            assertEquals(listOf("queued"), granted)
            lock.readUnlock()
            lock.assertIdle()
        }
}
