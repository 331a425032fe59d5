// SPDX-License-Identifier: Apache-2.0
package dev.handoff.coroutines

import dev.handoff.Mutex
import dev.handoff.SemaphoreClosedException
import dev.handoff.SemaphoreRejectedException
import kotlin.test.assertEquals
import kotlin.test.assertFailsWith
import kotlin.test.assertFalse
import kotlin.test.assertTrue
import kotlinx.coroutines.CancellationException
import kotlinx.coroutines.CoroutineStart
import kotlinx.coroutines.ExperimentalCoroutinesApi
import kotlinx.coroutines.delay
import kotlinx.coroutines.launch
import kotlinx.coroutines.test.currentTime
import kotlinx.coroutines.test.runCurrent
import kotlinx.coroutines.test.runTest
import org.junit.jupiter.api.Test

/**
 * The suspending face of [Mutex] on virtual time: the extension `lock()` (the Java callback face is
 * `lockThen(Waker)`), FIFO, cancellation, prompt cancellation, close, a full queue and `withLock`.
 * Every test ends with the mutex unlocked and nobody queued.
 */
@OptIn(ExperimentalCoroutinesApi::class)
class MutexSuspendTest {

    private fun Mutex.assertIdle() {
        assertEquals(0, queueLength(), "queue length of $this")
        assertFalse(isLocked, "$this is still locked")
    }

    @Test
    fun `lock() resolves to the suspending extension and waits in the queue`(): Unit = runTest {
        val mutex = Mutex()
        mutex.lock() // free: returns at once
        assertTrue(mutex.isLocked)
        var locked = false
        val waiter = launch {
            mutex.lock() // must suspend here: the extension, queued on the core
            locked = true
        }
        runCurrent()
        assertFalse(locked)
        assertEquals(1, mutex.queueLength())
        mutex.unlock()
        runCurrent()
        assertTrue(locked)
        assertTrue(waiter.isCompleted)
        assertTrue(mutex.isLocked, "handed over, never free in between")
        mutex.unlock()
        mutex.assertIdle()
    }

    @Test
    fun `waiters get the lock in arrival order`(): Unit = runTest {
        val mutex = Mutex()
        mutex.lock()
        val granted = mutableListOf<Pair<Int, Long>>()
        // Launched 0..4, arriving at virtual times 40, 30, 20, 10, 0: arrival order 4..0.
        val jobs =
            (0 until 5).map { i ->
                launch {
                    delay((4 - i) * 10L)
                    mutex.withLock {
                        granted += i to currentTime
                        delay(5)
                    }
                }
            }
        delay(100)
        assertEquals(5, mutex.queueLength())
        assertFalse(mutex.tryLock(), "no barging while anyone waits")
        mutex.unlock()
        jobs.forEach { it.join() }
        assertEquals(listOf(4 to 100L, 3 to 105L, 2 to 110L, 1 to 115L, 0 to 120L), granted)
        mutex.assertIdle()
    }

    @Test
    fun `withLock excludes, at most one holder at any time`(): Unit = runTest {
        val mutex = Mutex()
        var inside = 0
        var maxInside = 0
        val jobs =
            (0 until 50).map { i ->
                launch {
                    delay(i % 4L)
                    mutex.withLock {
                        inside++
                        maxInside = maxOf(maxInside, inside)
                        delay(1 + i % 3L)
                        inside--
                    }
                }
            }
        jobs.forEach { it.join() }
        assertEquals(1, maxInside)
        mutex.assertIdle()
    }

    @Test
    fun `a cancelled waiter leaves the queue and the next one gets the lock`(): Unit = runTest {
        val mutex = Mutex()
        mutex.lock()
        val first = launch { mutex.lock() }
        var secondRan = false
        val second = launch { mutex.withLock { secondRan = true } }
        runCurrent()
        assertEquals(2, mutex.queueLength())
        first.cancel()
        runCurrent()
        assertEquals(1, mutex.queueLength())
        mutex.unlock()
        runCurrent()
        assertTrue(first.isCancelled)
        assertTrue(secondRan)
        assertTrue(second.isCompleted)
        mutex.assertIdle()
    }

    @Test
    fun `a coroutine cancelled after the grant but before it runs does not keep the lock`(): Unit =
        runTest {
            val mutex = Mutex()
            mutex.lock()
            var ran = false
            var caught: Throwable? = null
            val waiter = launch {
                try {
                    mutex.lock()
                    ran = true
                } catch (e: Throwable) {
                    caught = e
                    throw e
                }
            }
            runCurrent()
            mutex.unlock() // handed to the waiter; its resumption is only scheduled
            assertTrue(mutex.isLocked)
            assertEquals(0, mutex.queueLength())
            waiter.cancel()
            runCurrent()
            assertFalse(ran)
            assertTrue(caught is CancellationException, "caught $caught")
            mutex.assertIdle() // given back by the prompt cancellation
        }

    @Test
    fun `a coroutine cancelled before it suspends does not stay queued`(): Unit = runTest {
        val mutex = Mutex()
        mutex.lock()
        val waiter = launch(start = CoroutineStart.UNDISPATCHED) { mutex.lock() }
        assertEquals(1, mutex.queueLength())
        waiter.cancel()
        assertEquals(0, mutex.queueLength())
        mutex.unlock()
        mutex.assertIdle()
    }

    @Test
    fun `withLock unlocks on return, on exception, on a non-local return and on cancellation`():
        Unit = runTest {
        val mutex = Mutex()
        assertEquals(
            "value",
            mutex.withLock {
                assertTrue(mutex.isLocked)
                "value"
            },
        )
        mutex.assertIdle()

        val failure = assertFailsWith<IllegalStateException> { mutex.withLock { error("boom") } }
        assertEquals("boom", failure.message)
        mutex.assertIdle()

        suspend fun firstNegative(values: List<Int>): Int? {
            for (v in values) {
                mutex.withLock { if (v < 0) return v }
            }
            return null
        }
        assertEquals(-2, firstNegative(listOf(1, -2, 3)))
        mutex.assertIdle()

        val job = launch { mutex.withLock { delay(1_000) } }
        runCurrent()
        assertTrue(mutex.isLocked)
        job.cancel()
        runCurrent()
        assertTrue(job.isCancelled)
        mutex.assertIdle()

        // callsInPlace(EXACTLY_ONCE): a val may be initialised inside the action.
        val initialised: String
        mutex.withLock { initialised = "set" }
        assertEquals("set", initialised)
    }

    @Test
    fun `unlock when not locked throws and changes nothing`(): Unit = runTest {
        val mutex = Mutex()
        val e = assertFailsWith<IllegalStateException> { mutex.unlock() }
        assertEquals("unlock(): the mutex is not locked", e.message)
        mutex.withLock {}
        mutex.assertIdle()
    }

    @Test
    fun `java futures and coroutines share one queue`(): Unit = runTest {
        val mutex = Mutex()
        mutex.lock()
        val order = mutableListOf<String>()
        val coroutine = launch {
            mutex.lock()
            order += "coroutine"
        }
        runCurrent()
        val future = mutex.lockAsync().thenRun { order += "future" }
        mutex.unlock()
        runCurrent()
        assertEquals(listOf("coroutine"), order)
        assertTrue(coroutine.isCompleted)
        assertFalse(future.isDone)
        mutex.unlock() // the coroutine's lock, handed to the future
        assertTrue(future.isDone)
        assertEquals(listOf("coroutine", "future"), order)
        mutex.unlock()
        mutex.assertIdle()
    }

    @Test
    fun `close fails every waiting lock with SemaphoreClosedException, and every later one at once`():
        Unit = runTest {
        val mutex = Mutex()
        mutex.lock()
        val failures = mutableListOf<String>()
        var ranInside = false
        launch { recordClosed(failures) { mutex.lock() } }
        launch { recordClosed(failures) { mutex.withLock { ranInside = true } } }
        runCurrent()
        assertEquals(2, mutex.queueLength())
        mutex.close()
        runCurrent()
        assertEquals(listOf("lock(): the mutex is closed", "lock(): the mutex is closed"), failures)
        assertFalse(ranInside, "withLock's action runs only under the lock")
        assertEquals(0, mutex.queueLength())
        assertTrue(mutex.isLocked, "the holder keeps the lock")
        mutex.unlock() // unlocking works on a closed mutex
        assertFalse(mutex.tryLock())
        val late = assertFailsWith<SemaphoreClosedException> { mutex.lock() }
        assertEquals("lock(): the mutex is closed", late.message)
        mutex.assertIdle()
    }

    @Test
    fun `a lock refused by a full queue names the suspending call and holds nothing`(): Unit =
        runTest {
            val mutex = Mutex.builder().maxQueueLength(1).build()
            mutex.lock()
            var queuedRan = false
            val queued = launch { mutex.withLock { queuedRan = true } }
            runCurrent()
            assertEquals(1, mutex.queueLength())
            val refused = assertFailsWith<SemaphoreRejectedException> { mutex.lock() }
            assertTrue(refused.message!!.startsWith("lock(): rejected"), refused.message)
            assertEquals(1, mutex.queueLength(), "the refused call did not queue")
            mutex.unlock()
            runCurrent()
            assertTrue(queuedRan)
            assertTrue(queued.isCompleted)
            mutex.assertIdle()
        }
}
