// SPDX-License-Identifier: Apache-2.0
package dev.handoff.coroutines

import dev.handoff.Semaphore
import dev.handoff.SemaphoreClosedException
import kotlin.test.assertEquals
import kotlin.test.assertFailsWith
import kotlin.test.assertFalse
import kotlin.test.assertTrue
import kotlinx.coroutines.CancellationException
import kotlinx.coroutines.CoroutineStart
import kotlinx.coroutines.ExperimentalCoroutinesApi
import kotlinx.coroutines.Job
import kotlinx.coroutines.async
import kotlinx.coroutines.currentCoroutineContext
import kotlinx.coroutines.delay
import kotlinx.coroutines.launch
import kotlinx.coroutines.test.currentTime
import kotlinx.coroutines.test.runCurrent
import kotlinx.coroutines.test.runTest
import org.junit.jupiter.api.Test

/**
 * Behaviour of the suspending face on virtual time (kotlinx-coroutines-test): order, weighted
 * handoff, cancellation, prompt cancellation, close and bad arguments. Every test ends by checking
 * that the permits add up.
 */
@OptIn(ExperimentalCoroutinesApi::class)
class SuspendAcquireTest {

    private fun Semaphore.assertIdle() {
        assertEquals(0, queueLength(), "queue length of $this")
        assertEquals(capacity(), availablePermits(), "free permits of $this")
    }

    @Test
    fun `acquire takes free permits at once without suspending`(): Unit = runTest {
        val semaphore = Semaphore(3)
        semaphore.acquire(2)
        semaphore.acquire() // one, the default
        assertEquals(0, semaphore.availablePermits())
        semaphore.acquire(0) // zero is granted even with nothing free
        semaphore.release(3)
        semaphore.assertIdle()
    }

    @Test
    fun `waiters are served in arrival order, not launch order`(): Unit = runTest {
        val semaphore = Semaphore(1)
        semaphore.acquire(1)
        val granted = mutableListOf<Pair<Int, Long>>()
        // Launched 0..4, but coroutine i arrives at virtual time (4 - i) * 10: arrival order 4..0.
        val jobs =
            (0 until 5).map { i ->
                launch {
                    delay((4 - i) * 10L)
                    semaphore.acquire(1)
                    granted += i to currentTime
                    delay(5)
                    semaphore.release(1)
                }
            }
        delay(100)
        assertEquals(5, semaphore.queueLength())
        semaphore.release(1)
        jobs.forEach { it.join() }
        assertEquals(listOf(4 to 100L, 3 to 105L, 2 to 110L, 1 to 115L, 0 to 120L), granted)
        semaphore.assertIdle()
    }

    @Test
    fun `released permits are handed to the head, partially, with no barging`(): Unit = runTest {
        val semaphore = Semaphore(10)
        semaphore.acquire(10)
        val a = launch { semaphore.acquire(6) }
        runCurrent()
        val b = launch { semaphore.acquire(1) }
        runCurrent()
        val c = launch { semaphore.acquire(4) }
        runCurrent()
        assertEquals(3, semaphore.queueLength())

        semaphore.release(5) // all 5 go to the head a (needs 6); b fits but must not pass a
        runCurrent()
        assertFalse(a.isCompleted)
        assertFalse(b.isCompleted)
        assertEquals(0, semaphore.availablePermits())
        assertFalse(semaphore.tryAcquire(1), "no barging while anyone waits")

        semaphore.release(1) // a complete
        runCurrent()
        assertTrue(a.isCompleted)
        assertFalse(b.isCompleted)

        semaphore.release(4) // b takes 1, c gets 3 of 4
        runCurrent()
        assertTrue(b.isCompleted)
        assertFalse(c.isCompleted)
        assertEquals(1, semaphore.queueLength())
        assertEquals(0, semaphore.availablePermits())

        semaphore.release(1) // the test has given back its 10; this is one of a's 6
        runCurrent()
        assertTrue(c.isCompleted)
        assertEquals(0, semaphore.queueLength())
        assertEquals(0, semaphore.availablePermits()) // a 5, b 1, c 4
        semaphore.release(5)
        semaphore.release(1)
        semaphore.release(4)
        semaphore.assertIdle()
    }

    @Test
    fun `weighted handoff between coroutines never exceeds the capacity`(): Unit = runTest {
        val semaphore = Semaphore(10)
        var inUse = 0L
        var peak = 0L
        val weights = listOf(7L, 3L, 5L, 10L, 1L, 9L, 2L, 2L, 6L, 4L, 8L, 1L)
        val jobs =
            weights.mapIndexed { i, w ->
                launch {
                    delay(i % 3L)
                    semaphore.withPermits(w) {
                        inUse += w
                        peak = maxOf(peak, inUse)
                        assertTrue(inUse <= 10, "in use $inUse > capacity")
                        delay(10 + w)
                        inUse -= w
                    }
                }
            }
        jobs.forEach { it.join() }
        assertEquals(10, peak)
        semaphore.assertIdle()
    }

    @Test
    fun `cancelling a waiter returns its partial permits and wakes the followers`(): Unit =
        runTest {
            val semaphore = Semaphore(5)
            semaphore.acquire(5)
            val heavy = launch { semaphore.acquire(4) }
            runCurrent()
            var lightGranted = false
            val light = launch {
                semaphore.acquire(2)
                lightGranted = true
            }
            runCurrent()
            semaphore.release(3) // heavy now holds 3 of its 4, not granted
            runCurrent()
            assertFalse(heavy.isCompleted)
            assertEquals(0, semaphore.availablePermits())
            assertEquals(2, semaphore.queueLength())

            heavy.cancel() // its 3 go on: light takes 2, 1 becomes free
            runCurrent()
            assertTrue(heavy.isCancelled)
            assertTrue(lightGranted)
            assertTrue(light.isCompleted)
            assertEquals(0, semaphore.queueLength())
            assertEquals(1, semaphore.availablePermits())

            semaphore.release(2) // the test's remaining 2
            semaphore.release(2) // light's 2
            semaphore.assertIdle()
        }

    @Test
    fun `a coroutine cancelled after the grant but before it runs holds nothing`(): Unit = runTest {
        val semaphore = Semaphore(3)
        semaphore.acquire(3)
        var ranAfterAcquire = false
        val waiter = launch {
            semaphore.acquire(3)
            ranAfterAcquire = true
        }
        runCurrent()
        semaphore.release(3) // granted and claimed; its resumption is only scheduled
        assertEquals(0, semaphore.queueLength())
        assertEquals(0, semaphore.availablePermits())
        waiter.cancel() // before the test dispatcher runs it: prompt cancellation
        runCurrent()
        assertTrue(waiter.isCancelled)
        assertFalse(ranAfterAcquire)
        semaphore.assertIdle() // the granted permits were released again
    }

    @Test
    fun `a coroutine cancelled before it suspends does not stay queued`(): Unit = runTest {
        val semaphore = Semaphore(1)
        semaphore.acquire(1)
        val waiter = launch(start = CoroutineStart.UNDISPATCHED) { semaphore.acquire(1) }
        assertEquals(1, semaphore.queueLength())
        waiter.cancel()
        assertEquals(0, semaphore.queueLength())
        val late =
            async(start = CoroutineStart.UNDISPATCHED) {
                // Cancelled while it is still running; the acquire then fails without queueing.
                currentCoroutineContext()[Job]!!.cancel()
                semaphore.acquire(1)
            }
        assertTrue(late.isCancelled)
        assertEquals(0, semaphore.queueLength())
        semaphore.release(1)
        semaphore.assertIdle()
    }

    @Test
    fun `close fails suspended and new acquires, and returns partial permits`(): Unit = runTest {
        val semaphore = Semaphore(4)
        semaphore.acquire(4)
        val failures = mutableListOf<Throwable>()
        val waiters =
            listOf(3L, 1L).map { n ->
                launch {
                    try {
                        semaphore.acquire(n)
                    } catch (e: SemaphoreClosedException) {
                        failures += e
                    }
                }
            }
        runCurrent()
        semaphore.release(2) // the head (3) holds 2 of 3
        runCurrent()
        assertEquals(2, semaphore.queueLength())

        semaphore.close()
        runCurrent()
        waiters.forEach { assertTrue(it.isCompleted) }
        assertEquals(2, failures.size)
        assertEquals("acquire(3): the semaphore is closed", failures[0].message)
        assertEquals(2, semaphore.availablePermits(), "the head's partial permits go back")

        assertFailsWith<SemaphoreClosedException> { semaphore.acquire(1) }
        assertFailsWith<SemaphoreClosedException> { semaphore.acquire(0) }
        assertFailsWith<SemaphoreClosedException> { semaphore.withPermit { error("must not run") } }
        semaphore.release(2) // release keeps working
        assertEquals(4, semaphore.availablePermits())
        assertFailsWith<SemaphoreClosedException> { semaphore.acquire(1) }
        semaphore.assertIdle()
    }

    @Test
    fun `bad arguments throw before anything is queued`(): Unit = runTest {
        val semaphore = Semaphore(16)
        semaphore.acquire(16)
        val negative = assertFailsWith<IllegalArgumentException> { semaphore.acquire(-1) }
        assertEquals("acquire(-1): the number of permits must not be negative", negative.message)
        val tooMany = assertFailsWith<IllegalArgumentException> { semaphore.acquire(17) }
        assertEquals(
            "acquire(17): exceeds the capacity 16, so it could never be granted",
            tooMany.message,
        )
        var ran = false
        assertFailsWith<IllegalArgumentException> { semaphore.withPermits(17) { ran = true } }
        assertFalse(ran)
        assertEquals(0, semaphore.queueLength())
        assertEquals(0, semaphore.availablePermits())
        semaphore.release(16)
        semaphore.assertIdle()

        val empty = Semaphore(0)
        empty.acquire(0)
        assertFailsWith<IllegalArgumentException> { empty.withPermit { error("must not run") } }
        empty.assertIdle()
    }

    @Test
    fun `withPermits releases on return, on exception and on a non-local return`(): Unit = runTest {
        val semaphore = Semaphore(5)
        assertEquals(
            "value",
            semaphore.withPermits(3) {
                assertEquals(2, semaphore.availablePermits())
                "value"
            },
        )
        semaphore.assertIdle()

        val failure =
            assertFailsWith<IllegalStateException> {
                semaphore.withPermits(5) {
                    assertEquals(0, semaphore.availablePermits())
                    error("boom")
                }
            }
        assertEquals("boom", failure.message)
        semaphore.assertIdle()

        suspend fun firstEven(values: List<Int>): Int? {
            for (v in values) {
                semaphore.withPermit {
                    if (v % 2 == 0) return v // leaves withPermit through a non-local return
                }
            }
            return null
        }
        assertEquals(4, firstEven(listOf(1, 3, 4, 5)))
        semaphore.assertIdle()

        // The callsInPlace contract: a val may be initialised inside the action.
        val initialised: Int
        semaphore.withPermit { initialised = 42 }
        assertEquals(42, initialised)
    }

    @Test
    fun `a cancellation while the action runs still releases`(): Unit = runTest {
        val semaphore = Semaphore(2)
        val job = launch { semaphore.withPermits(2) { delay(1_000) } }
        runCurrent()
        assertEquals(0, semaphore.availablePermits())
        job.cancel()
        runCurrent()
        assertTrue(job.isCancelled)
        semaphore.assertIdle()
    }

    @Test
    fun `java and kotlin callers share one queue`(): Unit = runTest {
        val semaphore = Semaphore(2)
        semaphore.acquire(2)
        val order = mutableListOf<String>()
        val kotlinWaiter = launch {
            semaphore.acquire(2)
            order += "kotlin"
        }
        runCurrent()
        val future = semaphore.acquireAsync(1).thenRun { order += "future" }
        semaphore.release(2)
        runCurrent()
        assertEquals(listOf("kotlin"), order, "the future queued behind the coroutine")
        assertTrue(kotlinWaiter.isCompleted)
        assertFalse(future.isDone)
        semaphore.release(1)
        assertTrue(future.isDone)
        assertEquals(listOf("kotlin", "future"), order)
        semaphore.release(2)
        semaphore.assertIdle()
    }

    @Test
    fun `a cancelled acquire throws CancellationException, not the close`(): Unit = runTest {
        val semaphore = Semaphore(1)
        semaphore.acquire(1)
        var caught: Throwable? = null
        val waiter = launch {
            try {
                semaphore.acquire(1)
            } catch (e: Throwable) {
                caught = e
                throw e
            }
        }
        runCurrent()
        waiter.cancel()
        semaphore.close() // the cancellation came first
        runCurrent()
        assertTrue(caught is CancellationException, "caught $caught")
        assertEquals(0, semaphore.queueLength())
        semaphore.release(1)
        semaphore.assertIdle()
    }
}
