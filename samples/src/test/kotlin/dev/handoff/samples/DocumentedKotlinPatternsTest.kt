// SPDX-License-Identifier: Apache-2.0
package dev.handoff.samples

import dev.handoff.Semaphore
import dev.handoff.SemaphoreClosedException
import dev.handoff.coroutines.acquire
import java.util.concurrent.ThreadLocalRandom
import java.util.concurrent.TimeUnit
import kotlin.time.Duration
import kotlin.time.Duration.Companion.milliseconds
import kotlin.time.Duration.Companion.seconds
import kotlinx.coroutines.CancellationException
import kotlinx.coroutines.CoroutineStart
import kotlinx.coroutines.Dispatchers
import kotlinx.coroutines.TimeoutCancellationException
import kotlinx.coroutines.async
import kotlinx.coroutines.delay
import kotlinx.coroutines.runBlocking
import kotlinx.coroutines.withTimeout
import kotlinx.coroutines.yield
import org.junit.jupiter.api.Assertions.assertEquals
import org.junit.jupiter.api.Assertions.assertInstanceOf
import org.junit.jupiter.api.Assertions.assertTrue
import org.junit.jupiter.api.Test
import org.junit.jupiter.api.Timeout

/**
 * The KDoc pattern of `Semaphore.acquire` with a timeout (kotlinx.coroutines issue 2233: the
 * timeout may fire after `acquire` returned, so the grant is noted inside the block and released in
 * `finally`), run through success, failure after the grant, and failure of the acquisition itself
 * (closed, timed out or cancelled while another holder keeps the permits). As in
 * `DocumentedPatternsTest`, a bystander holds [BYSTANDER] permits throughout and a blocker holds
 * the other [N] when the pattern must wait: a release of permits the pattern never got takes
 * theirs, and one of their releases then throws; a leak leaves `availablePermits()` short.
 */
@Timeout(value = 2, unit = TimeUnit.MINUTES)
class DocumentedKotlinPatternsTest {

    private companion object {
        const val CAPACITY = 10L
        const val BYSTANDER = 6L
        const val N = 4L
    }

    /**
     * The pattern, as in the KDoc of `acquire`, with `budget`, `bytes` and `send(request)` bound to
     * the test's.
     */
    private suspend fun sendWithin(
        budget: Semaphore,
        bytes: Long,
        timeout: Duration,
        send: suspend () -> Unit,
    ) {
        // ---- doc: dev.handoff.coroutines.acquire, with 5.seconds = timeout
        var acquired = false
        try {
            withTimeout(timeout) {
                budget.acquire(bytes)
                acquired = true
            }
            send()
        } finally {
            if (acquired) budget.release(bytes)
        }
        // ---- end
    }

    private fun semaphoreWithBystander(): Semaphore {
        val s = Semaphore(CAPACITY)
        assertTrue(s.tryAcquire(BYSTANDER))
        return s
    }

    private fun assertAllBack(s: Semaphore) {
        assertEquals(0, s.queueLength())
        assertEquals(s.capacity(), s.availablePermits()) { "every permit back, none twice: $s" }
    }

    @Test
    fun sendSucceeds() = runBlocking {
        val s = semaphoreWithBystander()
        var availableWhileSending = -1L
        sendWithin(s, N, 5.seconds) {
            delay(5)
            availableWhileSending = s.availablePermits()
        }
        assertEquals(0L, availableWhileSending, "sent holding the permits")
        assertEquals(CAPACITY - BYSTANDER, s.availablePermits())
        s.release(BYSTANDER) // throws if the pattern released twice
        assertAllBack(s)
    }

    @Test
    fun sendFailsAfterTheGrant() = runBlocking {
        val s = semaphoreWithBystander()
        val failure =
            runCatching {
                    sendWithin(s, N, 5.seconds) {
                        delay(5)
                        throw IllegalStateException("connection reset")
                    }
                }
                .exceptionOrNull()
        assertInstanceOf(IllegalStateException::class.java, failure)
        assertEquals(CAPACITY - BYSTANDER, s.availablePermits())
        s.release(BYSTANDER)
        assertAllBack(s)
    }

    @Test
    fun closedBeforeTheCall() = runBlocking {
        val s = semaphoreWithBystander()
        assertTrue(s.tryAcquire(N))
        s.close()
        var sent = false
        val failure = runCatching { sendWithin(s, N, 5.seconds) { sent = true } }.exceptionOrNull()
        assertInstanceOf(SemaphoreClosedException::class.java, failure)
        assertEquals(false, sent)
        assertEquals(0L, s.availablePermits(), "released nothing")
        s.release(N) // the blocker: throws if the failed acquisition had released
        s.release(BYSTANDER)
        assertAllBack(s)
    }

    @Test
    fun closedWhileWaiting() = runBlocking {
        val s = semaphoreWithBystander()
        assertTrue(s.tryAcquire(N))
        var sent = false
        val waiting =
            async(start = CoroutineStart.UNDISPATCHED) {
                runCatching { sendWithin(s, N, 5.seconds) { sent = true } }.exceptionOrNull()
            }
        assertEquals(1, s.queueLength())
        s.close()
        assertInstanceOf(SemaphoreClosedException::class.java, waiting.await())
        assertEquals(false, sent)
        assertEquals(0L, s.availablePermits(), "released nothing")
        s.release(N)
        s.release(BYSTANDER)
        assertAllBack(s)
    }

    @Test
    fun timedOutWhileAnotherHolderKeepsThePermits() = runBlocking {
        val s = semaphoreWithBystander()
        assertTrue(s.tryAcquire(N))
        var sent = false
        val failure =
            runCatching { sendWithin(s, N, 50.milliseconds) { sent = true } }.exceptionOrNull()
        assertInstanceOf(TimeoutCancellationException::class.java, failure)
        assertEquals(false, sent)
        assertEquals(0, s.queueLength(), "the wait was withdrawn")
        assertEquals(0L, s.availablePermits(), "released nothing")
        s.release(
            N
        ) // the blocker leaves: throws if the timed-out acquisition had released its permits
        yield()
        assertEquals(CAPACITY - BYSTANDER, s.availablePermits())
        s.release(BYSTANDER)
        assertAllBack(s)
    }

    @Test
    fun cancelledWhileWaiting() = runBlocking {
        val s = semaphoreWithBystander()
        assertTrue(s.tryAcquire(N))
        var sent = false
        val waiting =
            async(start = CoroutineStart.UNDISPATCHED) {
                sendWithin(s, N, 5.seconds) { sent = true }
            }
        assertEquals(1, s.queueLength())
        waiting.cancel()
        val failure = runCatching { waiting.await() }.exceptionOrNull()
        assertInstanceOf(CancellationException::class.java, failure)
        assertEquals(false, sent)
        assertEquals(0, s.queueLength(), "the wait was withdrawn")
        s.release(N)
        s.release(BYSTANDER)
        assertAllBack(s)
    }

    /**
     * The race the pattern is for: on a multi-threaded dispatcher the timeout fires around the
     * moment another thread's release grants the permits. Whichever wins (no grant; a grant that
     * the timeout then discards; a grant that sends), the count comes back exactly.
     */
    @Test
    fun timeoutRacingTheGrantLeavesTheCountExact() = runBlocking {
        var sentCount = 0
        var timedOut = 0
        repeat(300) {
            val s = semaphoreWithBystander()
            assertTrue(s.tryAcquire(N))
            val attempt =
                async(Dispatchers.Default) { runCatching { sendWithin(s, N, 1.milliseconds) {} } }
            val spinNanos = ThreadLocalRandom.current().nextLong(1_500_000)
            val blocker = Thread {
                val end = System.nanoTime() + spinNanos
                while (System.nanoTime() < end) Thread.onSpinWait()
                s.release(N)
            }
            blocker.start()
            val result = attempt.await()
            blocker.join()
            if (result.isSuccess) sentCount++ else timedOut++
            assertEquals(CAPACITY - BYSTANDER, s.availablePermits()) { "after $result: $s" }
            s.release(BYSTANDER)
            assertAllBack(s)
        }
        println("acquire + withTimeout race: sent $sentCount times, timed out $timedOut times")
    }
}
