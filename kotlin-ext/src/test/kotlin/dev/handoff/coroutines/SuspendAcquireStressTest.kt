// SPDX-License-Identifier: Apache-2.0
package dev.handoff.coroutines

import dev.handoff.Semaphore
import java.util.concurrent.ThreadLocalRandom
import java.util.concurrent.atomic.AtomicInteger
import java.util.concurrent.atomic.AtomicLong
import kotlin.test.assertEquals
import kotlin.test.assertTrue
import kotlin.time.Duration.Companion.microseconds
import kotlinx.coroutines.CancellationException
import kotlinx.coroutines.CoroutineStart
import kotlinx.coroutines.Dispatchers
import kotlinx.coroutines.ExperimentalCoroutinesApi
import kotlinx.coroutines.TimeoutCancellationException
import kotlinx.coroutines.delay
import kotlinx.coroutines.joinAll
import kotlinx.coroutines.launch
import kotlinx.coroutines.runBlocking
import kotlinx.coroutines.test.runTest
import kotlinx.coroutines.withTimeout
import kotlinx.coroutines.withTimeoutOrNull
import kotlinx.coroutines.yield
import org.junit.jupiter.api.Test
import org.junit.jupiter.api.Timeout

/**
 * Races on real dispatchers (and the withTimeout trap on virtual time). Nothing here measures time:
 * every test checks exact permit counts once all coroutines are done. A lost wake-up shows as a
 * hang, which the class-wide timeout turns into a failure.
 */
@OptIn(ExperimentalCoroutinesApi::class)
@Timeout(120) // a guard against hangs (a lost wake-up), not a speed check: each test needs seconds
class SuspendAcquireStressTest {

    private fun Semaphore.assertIdle() {
        assertEquals(0, queueLength(), "queue length of $this")
        assertEquals(capacity(), availablePermits(), "free permits of $this")
    }

    /**
     * Each round: the semaphore is fully held; a waiter queues for all of it; two releases of half
     * (one on a Default thread, one here) race with the waiter's cancellation (from here).
     * Whichever wins, once everyone is done every permit is free again.
     */
    @Test
    fun `release and cancel race, 100_000 rounds on Dispatchers Default`(): Unit = runBlocking {
        val semaphore = Semaphore(2)
        val granted = AtomicInteger()
        val cancelled = AtomicInteger()
        repeat(100_000) {
            assertTrue(semaphore.tryAcquire(2))
            // Undispatched: it is queued before the races start; it resumes on Dispatchers.Default.
            val waiter =
                launch(Dispatchers.Default, start = CoroutineStart.UNDISPATCHED) {
                    try {
                        semaphore.acquire(2)
                    } catch (e: CancellationException) {
                        cancelled.incrementAndGet()
                        throw e
                    }
                    granted.incrementAndGet()
                    semaphore.release(2)
                }
            val releaser = launch(Dispatchers.Default) { semaphore.release(1) }
            semaphore.release(1)
            waiter.cancel()
            releaser.join()
            waiter.join()
            semaphore.assertIdle()
        }
        // Every waiter was queued, so each either got its permits or saw the cancellation.
        assertEquals(100_000, granted.get() + cancelled.get())
        println("release/cancel race: granted ${granted.get()}, cancelled ${cancelled.get()}")
    }

    @Test
    fun `weighted withPermits on Dispatchers Default never exceed the capacity`(): Unit =
        runBlocking {
            val semaphore = Semaphore(16)
            val inUse = AtomicLong()
            val violations = AtomicInteger()
            val workers =
                (0 until 8).map {
                    launch(Dispatchers.Default) {
                        val random = ThreadLocalRandom.current()
                        repeat(20_000) {
                            val n = 1L + random.nextInt(16)
                            semaphore.withPermits(n) {
                                if (inUse.addAndGet(n) > 16) violations.incrementAndGet()
                                if (random.nextInt(8) == 0) yield()
                                inUse.addAndGet(-n)
                            }
                        }
                    }
                }
            workers.joinAll()
            assertEquals(0, violations.get())
            semaphore.assertIdle()
        }

    @Test
    fun `10_000 waiters on Dispatchers Unconfined are granted through one release chain`(): Unit =
        runBlocking {
            val semaphore = Semaphore(1)
            semaphore.acquire(1)
            val done = AtomicInteger()
            val waiters =
                List(10_000) {
                    launch(Dispatchers.Unconfined) {
                        semaphore.withPermit { done.incrementAndGet() }
                    }
                }
            assertEquals(10_000, semaphore.queueLength())
            semaphore.release(1) // each waiter's release grants the next one, on this thread
            waiters.joinAll()
            assertEquals(10_000, done.get())
            semaphore.assertIdle()
        }

    @Test
    fun `10_000 waiters resumed inside a waker on Dispatchers Unconfined do not overflow the stack`():
        Unit = runBlocking {
        // Started undispatched on Unconfined from inside the core's wake-up of the first one,
        // so every grant nests in the previous waiter's release unless something flattens it.
        val semaphore = Semaphore(1)
        semaphore.acquire(1)
        val done = AtomicInteger()
        val first =
            launch(Dispatchers.Unconfined, start = CoroutineStart.UNDISPATCHED) {
                semaphore.acquire(1)
                val chain =
                    List(10_000) {
                        launch(Dispatchers.Unconfined, start = CoroutineStart.UNDISPATCHED) {
                            semaphore.withPermit { done.incrementAndGet() }
                        }
                    }
                semaphore.release(1)
                chain.joinAll()
            }
        semaphore.release(1)
        first.join()
        assertEquals(10_000, done.get())
        semaphore.assertIdle()
    }

    /**
     * kotlinx issue 2233: `withTimeout { acquire() }` that times out right when the permit is
     * handed over. On one thread (here the virtual-time scheduler) the timeout and the grant are
     * ordered, and the prompt cancellation guarantee (releasing a grant that lands on a timed-out
     * coroutine) must keep the count exact. Timeouts and releases are put on the same virtual
     * instants on purpose.
     */
    @Test
    fun `withTimeout around acquire in a loop never leaks on virtual time`(): Unit = runTest {
        val semaphore = Semaphore(4)
        var holding = 0L
        val jobs =
            (0 until 2_000).map { i ->
                launch {
                    val n = 1L + i % 4
                    delay(10L * (i % 13))
                    val acquired =
                        withTimeoutOrNull(10L * (1 + i % 3)) { semaphore.acquire(n) } != null
                    if (acquired) {
                        holding += n
                        delay(10L * (i % 2))
                        holding -= n
                        semaphore.release(n)
                    }
                }
            }
        jobs.joinAll()
        assertEquals(0, holding)
        semaphore.assertIdle()
    }

    /**
     * The same loop on real threads. There the timer may fire after `acquire` returned but before
     * the `withTimeout` block ends, which discards the block's result (that is kotlinx issue 2233);
     * the leak-free form records the grant inside the block and releases it in `finally`.
     */
    @Test
    fun `withTimeout around acquire in a loop never leaks on Dispatchers Default`(): Unit =
        runBlocking {
            val semaphore = Semaphore(3)
            val workers =
                (0 until 8).map { w ->
                    launch(Dispatchers.Default) {
                        repeat(3_000) { i ->
                            val n = 1L + (i + w) % 3
                            var acquired = false
                            try {
                                withTimeout((1 + i % 50).microseconds) {
                                    semaphore.acquire(n)
                                    acquired = true
                                    if (i % 7 == 0) delay(1)
                                }
                            } catch (_: TimeoutCancellationException) {
                                // gave up; `acquired` says whether the permits were granted first
                            } finally {
                                if (acquired) semaphore.release(n)
                            }
                        }
                    }
                }
            workers.joinAll()
            semaphore.assertIdle()
        }
}
