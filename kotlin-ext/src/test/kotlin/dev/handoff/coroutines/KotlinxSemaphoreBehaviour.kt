// SPDX-License-Identifier: Apache-2.0
package dev.handoff.coroutines

import dev.handoff.Semaphore as HandoffSemaphore
import kotlin.test.assertEquals
import kotlin.test.assertFailsWith
import kotlin.test.assertFalse
import kotlin.test.assertTrue
import kotlinx.coroutines.ExperimentalCoroutinesApi
import kotlinx.coroutines.delay
import kotlinx.coroutines.launch
import kotlinx.coroutines.sync.Semaphore as KotlinxSemaphore
import kotlinx.coroutines.sync.withPermit
import kotlinx.coroutines.test.runCurrent
import kotlinx.coroutines.test.runTest
import kotlinx.coroutines.withTimeoutOrNull
import org.junit.jupiter.api.Test

/**
 * Behaviour checks of the `kotlinx.coroutines.sync.Semaphore` contract, written once and run
 * against kotlinx's own implementation ([KotlinxOwnSemaphoreTest]) and against our view
 * ([HandoffKotlinxViewTest]): whatever kotlinx code may rely on, the view must do the same.
 */
@OptIn(ExperimentalCoroutinesApi::class)
abstract class KotlinxSemaphoreBehaviour {

    /** A semaphore of [permits] permits, all free. */
    abstract fun semaphore(permits: Int): KotlinxSemaphore

    @Test
    fun `tryAcquire takes free permits and release returns them`(): Unit = runTest {
        val s = semaphore(2)
        assertEquals(2, s.availablePermits)
        assertTrue(s.tryAcquire())
        assertEquals(1, s.availablePermits)
        assertTrue(s.tryAcquire())
        assertFalse(s.tryAcquire())
        assertEquals(0, s.availablePermits)
        s.release()
        assertEquals(1, s.availablePermits)
        s.release()
        assertEquals(2, s.availablePermits)
    }

    @Test
    fun `acquire suspends until a release, in FIFO order`(): Unit = runTest {
        val s = semaphore(1)
        s.acquire()
        val order = mutableListOf<Int>()
        val waiters =
            (1..3).map { i ->
                launch {
                    s.acquire()
                    order += i
                }
            }
        runCurrent()
        assertEquals(emptyList(), order)
        assertFalse(s.tryAcquire(), "no barging while anyone waits")
        repeat(3) { k ->
            s.release()
            runCurrent()
            assertEquals((1..k + 1).toList(), order)
        }
        waiters.forEach { assertTrue(it.isCompleted) }
        s.release()
        assertEquals(1, s.availablePermits)
    }

    @Test
    fun `releasing more than was acquired throws IllegalStateException`(): Unit = runTest {
        val s = semaphore(2)
        assertFailsWith<IllegalStateException> { s.release() }
        assertEquals(2, s.availablePermits)
        s.acquire()
        s.release()
        assertFailsWith<IllegalStateException> { s.release() }
        assertEquals(2, s.availablePermits)
        assertTrue(s.tryAcquire())
        assertTrue(s.tryAcquire())
        assertFalse(s.tryAcquire())
    }

    @Test
    fun `withPermit releases when the action throws`(): Unit = runTest {
        val s = semaphore(1)
        val e =
            assertFailsWith<IllegalStateException> {
                s.withPermit {
                    assertEquals(0, s.availablePermits)
                    error("boom")
                }
            }
        assertEquals("boom", e.message)
        assertEquals(1, s.availablePermits)
    }

    @Test
    fun `withPermit releases on an early return`(): Unit = runTest {
        val s = semaphore(1)
        suspend fun find(): String {
            listOf("a", "b").forEach { v -> s.withPermit { if (v == "a") return "found $v" } }
            return "none"
        }
        assertEquals("found a", find())
        assertEquals(1, s.availablePermits)
        assertEquals("x", s.withPermit { "x" })
        assertEquals(1, s.availablePermits)
    }

    @Test
    fun `a cancelled waiter does not take the next permit`(): Unit = runTest {
        val s = semaphore(1)
        s.acquire()
        val first = launch { s.acquire() }
        var secondGranted = false
        val second = launch {
            s.acquire()
            secondGranted = true
        }
        runCurrent()
        first.cancel()
        runCurrent()
        s.release()
        runCurrent()
        assertTrue(first.isCancelled)
        assertTrue(secondGranted)
        assertTrue(second.isCompleted)
        assertEquals(0, s.availablePermits)
        s.release()
        assertEquals(1, s.availablePermits)
    }

    @Test
    fun `a waiter cancelled after the release does not keep the permit`(): Unit = runTest {
        val s = semaphore(1)
        s.acquire()
        var ran = false
        val waiter = launch {
            s.acquire()
            ran = true
        }
        runCurrent()
        s.release() // hands the permit to the waiter, which is not dispatched yet
        waiter.cancel()
        runCurrent()
        assertFalse(ran)
        assertEquals(1, s.availablePermits)
    }

    @Test
    fun `acquire under a timeout never leaks a permit`(): Unit = runTest {
        val s = semaphore(2)
        var held = 0
        val jobs =
            (0 until 200).map { i ->
                launch {
                    delay(i % 7L)
                    if (withTimeoutOrNull(i % 5L) { s.acquire() } != null) {
                        held++
                        delay(i % 3L)
                        held--
                        s.release()
                    }
                }
            }
        jobs.forEach { it.join() }
        assertEquals(0, held)
        assertEquals(2, s.availablePermits)
    }
}

/** The reference: kotlinx.coroutines' own semaphore. */
class KotlinxOwnSemaphoreTest : KotlinxSemaphoreBehaviour() {
    override fun semaphore(permits: Int): KotlinxSemaphore = KotlinxSemaphore(permits)
}

/** Our view must behave exactly like the reference. */
@OptIn(ExperimentalCoroutinesApi::class)
class HandoffKotlinxViewTest : KotlinxSemaphoreBehaviour() {
    override fun semaphore(permits: Int): KotlinxSemaphore =
        HandoffSemaphore(permits.toLong()).asKotlinxSemaphore()

    @Test
    fun `availablePermits is clamped to Int MAX_VALUE`() {
        val huge = HandoffSemaphore(HandoffSemaphore.MAX_PERMITS)
        assertEquals(Int.MAX_VALUE, huge.asKotlinxSemaphore().availablePermits)
        assertTrue(huge.tryAcquire(HandoffSemaphore.MAX_PERMITS - 5))
        assertEquals(5, huge.asKotlinxSemaphore().availablePermits)
    }

    @Test
    fun `the view and the semaphore share permits and queue`(): Unit = runTest {
        val semaphore = HandoffSemaphore(3)
        val view = semaphore.asKotlinxSemaphore()
        assertTrue(semaphore.tryAcquire(2))
        assertEquals(1, view.availablePermits)
        assertTrue(view.tryAcquire())
        val viaView = launch { view.acquire() }
        runCurrent()
        assertEquals(1, semaphore.queueLength())
        semaphore.release(2)
        runCurrent()
        assertTrue(viaView.isCompleted)
        assertEquals(1, semaphore.availablePermits())
        view.release()
        view.release()
        assertEquals(3, semaphore.availablePermits())
    }

    @Test
    fun `after close the view fails acquire and refuses tryAcquire`(): Unit = runTest {
        val semaphore = HandoffSemaphore(1)
        val view = semaphore.asKotlinxSemaphore()
        view.acquire()
        val waiter = launch {
            assertFailsWith<dev.handoff.SemaphoreClosedException> { view.acquire() }
        }
        runCurrent()
        semaphore.close()
        runCurrent()
        assertTrue(waiter.isCompleted)
        assertFalse(view.tryAcquire())
        view.release()
        assertFalse(view.tryAcquire())
        assertFailsWith<dev.handoff.SemaphoreClosedException> { view.acquire() }
        assertEquals(1, view.availablePermits)
    }
}
