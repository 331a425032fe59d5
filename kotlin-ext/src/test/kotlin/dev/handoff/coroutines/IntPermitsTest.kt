// SPDX-License-Identifier: Apache-2.0
package dev.handoff.coroutines

import dev.handoff.Semaphore
import dev.handoff.SemaphoreClosedException
import kotlin.test.assertEquals
import kotlin.test.assertFailsWith
import kotlin.test.assertFalse
import kotlin.test.assertTrue
import kotlin.time.Duration
import kotlinx.coroutines.CoroutineStart
import kotlinx.coroutines.launch
import kotlinx.coroutines.runBlocking
import kotlinx.coroutines.yield
import org.junit.jupiter.api.Test
import org.junit.jupiter.api.Timeout

/** The Int overloads of the suspending faces, and refusals that name the call the caller made. */
@Timeout(60) // a guard against hangs, not a speed check
class IntPermitsTest {

    @Test
    fun `an Int size works where kotlinx takes one`(): Unit = runBlocking {
        val s = Semaphore(100)
        val body = ByteArray(40)
        val seen = s.withPermits(body.size) { s.availablePermits() }
        assertEquals(60, seen)
        s.acquire(body.size)
        assertEquals(60, s.availablePermits())
        s.release(body.size)
        assertTrue(s.tryAcquire(body.size))
        s.release(body.size)
        assertTrue(s.tryAcquire(body.size, Duration.ZERO))
        s.release(body.size)
        assertEquals(100, s.availablePermits())
    }

    @Test
    fun `an Int acquire waits its turn like the Long one`(): Unit = runBlocking {
        val s = Semaphore(3)
        val three = 3
        s.acquire(three)
        val waiter = launch(start = CoroutineStart.UNDISPATCHED) { s.withPermits(2) {} }
        assertEquals(1, s.queueLength())
        assertFalse(s.tryAcquire(1))
        s.release(three)
        waiter.join()
        assertEquals(3, s.availablePermits())
    }

    @Test
    fun `withPermits over the capacity names withPermits, Int or Long`(): Unit = runBlocking {
        val s = Semaphore(1000)
        val int = assertFailsWith<IllegalArgumentException> { s.withPermits(2000) {} }
        assertEquals(
            "withPermits(2000): exceeds the capacity 1000, so it could never be granted",
            int.message,
        )
        val long = assertFailsWith<IllegalArgumentException> { s.withPermits(2000L) {} }
        assertEquals(int.message, long.message)
        val negative = assertFailsWith<IllegalArgumentException> { s.withPermits(-1) {} }
        assertTrue(negative.message!!.startsWith("withPermits(-1)"), negative.message)
        val acquire = assertFailsWith<IllegalArgumentException> { s.acquire(2000) }
        assertTrue(acquire.message!!.startsWith("acquire(2000)"), acquire.message)
        assertEquals(1000, s.availablePermits())
    }

    @Test
    fun `a closed semaphore fails a waiting withPermits naming it`(): Unit = runBlocking {
        val s = Semaphore(1)
        s.acquire(1)
        val waiter =
            launch(start = CoroutineStart.UNDISPATCHED) {
                val e = assertFailsWith<SemaphoreClosedException> { s.withPermits(1) {} }
                assertEquals("withPermits(1): the semaphore is closed", e.message)
            }
        yield()
        s.close()
        waiter.join()
        s.release(1)
        assertEquals(1, s.availablePermits())
    }
}
