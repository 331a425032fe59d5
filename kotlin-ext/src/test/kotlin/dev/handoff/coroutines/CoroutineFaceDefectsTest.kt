// SPDX-License-Identifier: Apache-2.0
package dev.handoff.coroutines

import dev.handoff.Acquisition
import dev.handoff.Semaphore
import dev.handoff.Waker
import dev.handoff.spi.Adapters
import java.io.File
import java.util.concurrent.CountDownLatch
import java.util.concurrent.Executor
import java.util.concurrent.TimeUnit
import java.util.concurrent.atomic.AtomicReference
import kotlin.test.assertEquals
import kotlin.test.assertFailsWith
import kotlin.test.assertFalse
import kotlin.test.assertNotNull
import kotlin.test.assertTrue
import kotlinx.coroutines.CoroutineStart
import kotlinx.coroutines.Dispatchers
import kotlinx.coroutines.TimeoutCancellationException
import kotlinx.coroutines.async
import kotlinx.coroutines.coroutineScope
import kotlinx.coroutines.delay
import kotlinx.coroutines.launch
import kotlinx.coroutines.runBlocking
import kotlinx.coroutines.withTimeout
import org.junit.jupiter.api.Test
import org.junit.jupiter.api.Timeout

/**
 * Regression tests for issues 10 and 11 on the coroutine face: public kotlinx API only, wake-ups of
 * a withdrawal on the cancelled coroutine's own dispatcher, and a failed grant resuming the
 * coroutine with its exception instead of hanging.
 */
@Timeout(60) // a guard against hangs, not a speed check
class CoroutineFaceDefectsTest {

    @Test
    fun `main code opts into no internal kotlinx API`() {
        val sources =
            File("src/main/kotlin")
                .walkTopDown()
                .filter { it.isFile && it.name.endsWith(".kt") }
                .toList()
        assertTrue(
            sources.isNotEmpty(),
            "kotlin-ext's main sources not found from ${File(".").absolutePath}",
        )
        val offenders =
            sources.filter { file ->
                file.readLines().any { line ->
                    "InternalCoroutinesApi" in line && !line.trimStart().startsWith("*")
                }
            }
        assertEquals(emptyList(), offenders.map { it.name })
    }

    /**
     * The head's timeout must fire after this thread has queued the next waiter behind it: only
     * then is the next waiter's grant the head's withdrawal. On a loaded machine this thread may be
     * held up past the head's timeout; then the next waiter is granted at once, on this thread, and
     * the round shows nothing. Such a round is recognised (the head ended before it was seen
     * queued, or the waker ran on this thread inside acquire) and run again with twice the timeout,
     * so the outcome never depends on the machine's speed.
     */
    @Test
    fun `a timed-out head hands its permits on, and the next waiter's waker runs on the head's dispatcher, not kotlinx's timer thread`():
        Unit = runBlocking {
        var timeoutMillis = 100L
        while (!timedOutHeadHandsItsPermitOn(timeoutMillis)) {
            assertTrue(
                timeoutMillis < 10_000,
                "the head always timed out before the next waiter queued behind it",
            )
            timeoutMillis *= 2
        }
    }

    /** One round of the test above; false if it showed nothing (the head timed out too early). */
    private suspend fun timedOutHeadHandsItsPermitOn(timeoutMillis: Long): Boolean =
        coroutineScope {
            val semaphore = Semaphore(2)
            assertTrue(semaphore.tryAcquire(2))
            val nextWokenOn = AtomicReference<Thread>()
            val nextWoken = CountDownLatch(1)
            val head =
                async(Dispatchers.Default) { withTimeout(timeoutMillis) { semaphore.acquire(2) } }
            while (semaphore.queueLength() < 1 && !head.isCompleted) delay(1)
            if (head.isCompleted) {
                assertFailsWith<TimeoutCancellationException> { head.await() }
                return@coroutineScope false
            }
            semaphore.release(1) // the head is handed 1 of its 2
            val next: Acquisition =
                semaphore.acquireThen(
                    1,
                    Waker {
                        nextWokenOn.set(Thread.currentThread())
                        nextWoken.countDown()
                    },
                )
            assertFailsWith<TimeoutCancellationException> { head.await() }
            if (nextWokenOn.get() === Thread.currentThread()) {
                return@coroutineScope false // granted at once: the head had timed out and left
                // before
            }
            assertTrue(
                nextWoken.await(20, TimeUnit.SECONDS),
                "the head's partial permit never reached the next waiter",
            )
            assertTrue(next.isGranted)
            val thread = nextWokenOn.get().name
            assertFalse("DefaultExecutor" in thread, "ran on kotlinx's timer thread: $thread")
            assertTrue(thread.startsWith("DefaultDispatcher-worker"), "ran on $thread")
            semaphore.release(1)
            semaphore.release(1)
            assertEquals(2, semaphore.availablePermits())
            true
        }

    @Test
    fun `a cancelled waiter is out of the queue when its Job completes`(): Unit = runBlocking {
        val semaphore = Semaphore(3)
        assertTrue(semaphore.tryAcquire(3))
        repeat(2_000) {
            val waiter =
                launch(Dispatchers.Default, start = CoroutineStart.UNDISPATCHED) {
                    semaphore.acquire(3)
                }
            semaphore.release(1) // partially served head
            waiter.cancel()
            waiter.join()
            assertEquals(0, semaphore.queueLength())
            assertEquals(
                1,
                semaphore.availablePermits(),
                "the withdrawn head's partial permit is free again",
            )
            assertTrue(semaphore.tryAcquire(1))
        }
        semaphore.release(3)
        assertEquals(3, semaphore.availablePermits())
    }

    /** A node whose grant step fails, as a claim that throws (an Error, a missing method) would. */
    private class FailingGrant(private val boom: Throwable) : ContinuationAcquisition<Semaphore>() {
        override fun start(face: Semaphore, permits: Long) {
            Adapters.startAcquisition(face, permits, this)
        }

        override fun claimed() {
            throw boom
        }

        override fun giveBack(wakes: Executor) = face.release(permits(), wakes)

        override fun closedException(): Throwable = IllegalStateException("closed")
    }

    @Test
    fun `a coroutine whose grant fails resumes with the failure, holds nothing, and its permits go on`():
        Unit = runBlocking {
        val semaphore = Semaphore(2)
        assertTrue(semaphore.tryAcquire(2))
        val boom = StackOverflowError("grant step failed")
        val failing =
            async(Dispatchers.Default, start = CoroutineStart.UNDISPATCHED) {
                // Caught here: an Error escaping a child would cancel runBlocking itself.
                runCatching { FailingGrant(boom).await<Unit>(semaphore, 2) }.exceptionOrNull()
            }
        val behind =
            async(Dispatchers.Default, start = CoroutineStart.UNDISPATCHED) { semaphore.acquire(1) }
        assertEquals(2, semaphore.queueLength())
        semaphore.release(2)
        val thrown = failing.await()
        assertTrue(
            thrown is StackOverflowError && thrown.message == boom.message,
            "resumed with $thrown",
        )
        behind.await() // the failed head's permits went on
        assertEquals(1, semaphore.availablePermits())
        semaphore.release(1)
        assertEquals(2, semaphore.availablePermits())
    }

    @Test
    fun `an immediate grant that fails throws at once and holds nothing`(): Unit = runBlocking {
        val semaphore = Semaphore(2)
        val boom = IllegalStateException("grant step failed")
        val thrown =
            assertFailsWith<IllegalStateException> { FailingGrant(boom).await<Unit>(semaphore, 2) }
        assertEquals(boom.message, thrown.message)
        assertEquals(2, semaphore.availablePermits())
    }

    @Test
    fun `the kotlinx check passes on the kotlinx this module is tested with`() {
        KotlinxSupport.check()
        assertNotNull(KotlinxSupport.OLDEST_SUPPORTED)
    }
}
