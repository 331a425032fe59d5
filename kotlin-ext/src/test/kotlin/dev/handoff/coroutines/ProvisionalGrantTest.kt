// SPDX-License-Identifier: Apache-2.0
package dev.handoff.coroutines

import dev.handoff.Semaphore
import dev.handoff.Waker
import java.util.concurrent.CompletableFuture
import java.util.concurrent.CountDownLatch
import java.util.concurrent.TimeUnit
import java.util.concurrent.atomic.AtomicReference
import java.util.concurrent.locks.LockSupport
import kotlin.concurrent.thread
import kotlin.test.assertEquals
import kotlin.test.assertFalse
import kotlin.test.assertIs
import kotlin.test.assertNull
import kotlin.test.assertTrue
import kotlinx.coroutines.CancellationException
import kotlinx.coroutines.CoroutineScope
import kotlinx.coroutines.CoroutineStart
import kotlinx.coroutines.Dispatchers
import kotlinx.coroutines.Job
import kotlinx.coroutines.launch
import kotlinx.coroutines.runBlocking
import kotlinx.coroutines.withTimeout
import org.junit.jupiter.api.AfterEach
import org.junit.jupiter.api.BeforeEach
import org.junit.jupiter.api.Test
import org.junit.jupiter.api.Timeout

/**
 * A coroutine's grant is provisional from the moment the semaphore decides it until the coroutine
 * is resumed (or its cancellation gives it back): permits have no owner, so another thread may
 * release permits it does not hold, and a release that could only pass by counting permits on their
 * way to a coroutine that may still be cancelled must not answer before that is decided. It waits;
 * then it fails if the cancellation won (the permits were never held), and passes if the coroutine
 * was resumed. The cancelled acquire always ends with a CancellationException, never with the
 * over-release. (An outside model check found both releases passing and the cancelled acquire
 * ending with the give-back's IllegalStateException.)
 *
 * The window is held open by the order of one release's wake-ups: a callback queued before the
 * coroutine is woken first, and blocks, while the coroutine is granted and not yet resumed.
 */
@Timeout(60) // a guard against hangs, not a speed check
class ProvisionalGrantTest {

    /**
     * The core's bounds on a release's wait for a grant in transit (50 ms where this thread may be
     * the decider, 1 s otherwise), raised while a test watches such a wait, so that a loaded
     * machine cannot end it before the test sees it.
     */
    private val bounds =
        listOf("transitWaitNanos", "transitStallNanos").map {
            Class.forName("dev.handoff.ProvisionalGrants").getDeclaredField(it).apply {
                isAccessible = true
            }
        }
    private var saved = LongArray(bounds.size)

    @BeforeEach
    fun raiseTheBounds() {
        saved = LongArray(bounds.size) { bounds[it].getLong(null) }
        bounds.forEach { it.setLong(null, TimeUnit.SECONDS.toNanos(30)) }
    }

    @AfterEach
    fun restoreTheBounds() {
        bounds.forEachIndexed { i, field -> field.setLong(null, saved[i]) }
    }

    private class Scenario {
        val semaphore = Semaphore(2)
        val inCallback = CountDownLatch(1)
        val letCallbackGo = CountDownLatch(1)
        val acquireThrew = AtomicReference<Throwable>()
        lateinit var coroutine: Job
        lateinit var granter: Thread

        /**
         * Callback A then coroutine C queued; a release of 2 grants both and blocks in A's waker.
         */
        fun openWindow() {
            assertTrue(semaphore.tryAcquire(2))
            semaphore.acquireThen(
                1,
                Waker {
                    inCallback.countDown()
                    letCallbackGo.await(30, TimeUnit.SECONDS)
                },
            )
            coroutine =
                CoroutineScope(Dispatchers.Unconfined).launch(start = CoroutineStart.UNDISPATCHED) {
                    try {
                        semaphore.acquire(1)
                    } catch (e: Throwable) {
                        acquireThrew.set(e)
                        throw e
                    }
                }
            assertEquals(2, semaphore.queueLength())
            granter = thread(isDaemon = true) { semaphore.release(2) }
            assertTrue(inCallback.await(30, TimeUnit.SECONDS))
        }

        /** An over-release by a thread that holds nothing of it, on its own thread: its outcome. */
        fun overReleaseInTheWindow(): CompletableFuture<Throwable?> {
            val outcome = CompletableFuture<Throwable?>()
            val releaser =
                thread(isDaemon = true) {
                    try {
                        semaphore.release(
                            2
                        ) // 1 (the callback's) is held for sure; 1 is on its way to the coroutine
                        outcome.complete(null)
                    } catch (e: Throwable) {
                        outcome.complete(e)
                    }
                }
            // It waits for the coroutine's grant to be decided: parked on the core, not done.
            val deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30)
            while (
                !(releaser.state == Thread.State.TIMED_WAITING &&
                    LockSupport.getBlocker(releaser)?.javaClass?.simpleName == "FifoCore")
            ) {
                assertFalse(
                    outcome.isDone,
                    "answered before the grant was decided: ${outcome.getNow(null)}",
                )
                assertTrue(System.nanoTime() < deadline, "never waited: ${releaser.state}")
                Thread.sleep(1)
            }
            assertFalse(outcome.isDone)
            return outcome
        }

        fun join(job: Job) = runBlocking { withTimeout(30_000) { job.join() } }
    }

    @Test
    fun anOverReleaseRacingACancelledGrantFailsAndTheCancelledAcquireHoldsNothing(): Unit =
        with(Scenario()) {
            openWindow()
            val overRelease = overReleaseInTheWindow()
            coroutine.cancel() // its handler undoes the provisional grant on this thread
            val refused = overRelease.get(30, TimeUnit.SECONDS)
            assertIs<IllegalStateException>(
                refused,
                "the over-release must fail: the coroutine never held its permit",
            )
            letCallbackGo.countDown()
            granter.join(30_000)
            join(coroutine)
            assertIs<CancellationException>(acquireThrew.get())
            assertEquals(
                1,
                semaphore.availablePermits(),
                "the callback holds 1; the cancelled coroutine's went back",
            )
            semaphore.release(1)
            assertEquals(2, semaphore.availablePermits())
        }

    @Test
    fun anOverReleaseRacingADeliveredGrantPassesOnceTheCoroutineIsResumed(): Unit =
        with(Scenario()) {
            openWindow()
            val overRelease = overReleaseInTheWindow()
            letCallbackGo
                .countDown() // the release goes on to resume the coroutine: the grant is confirmed
            assertNull(
                overRelease.get(30, TimeUnit.SECONDS),
                "the coroutine held its permit: the release passes",
            )
            granter.join(30_000)
            join(coroutine)
            assertNull(acquireThrew.get())
            assertEquals(
                2,
                semaphore.availablePermits(),
                "the callback's and the coroutine's permits were released for them",
            )
        }

    @Test
    fun aCancellationThatWonBeforeTheOverReleaseMakesItFailAtOnce(): Unit =
        with(Scenario()) {
            openWindow()
            coroutine.cancel()
            val refused = runCatching { semaphore.release(2) }.exceptionOrNull()
            assertIs<IllegalStateException>(refused)
            letCallbackGo.countDown()
            granter.join(30_000)
            join(coroutine)
            assertIs<CancellationException>(acquireThrew.get())
            semaphore.release(1)
            assertEquals(2, semaphore.availablePermits())
        }
}
