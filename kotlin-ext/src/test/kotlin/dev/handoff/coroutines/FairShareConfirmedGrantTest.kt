// SPDX-License-Identifier: Apache-2.0
package dev.handoff.coroutines

import dev.handoff.FairShareSemaphore
import java.util.concurrent.ConcurrentLinkedQueue
import kotlin.coroutines.CoroutineContext
import kotlin.test.assertEquals
import kotlin.test.assertIs
import kotlin.test.assertTrue
import kotlinx.coroutines.CoroutineDispatcher
import kotlinx.coroutines.CoroutineScope
import kotlinx.coroutines.Job
import kotlinx.coroutines.launch
import org.junit.jupiter.api.AfterEach
import org.junit.jupiter.api.BeforeEach
import org.junit.jupiter.api.Test
import org.junit.jupiter.api.Timeout

/**
 * A fair share's grant to a suspended `acquire(key, n)` once it is confirmed (the waker has
 * dispatched the coroutine's resumption) and before the coroutine runs: permits have no owner, so
 * another caller's `release(key, n)` may spend them, and a cancellation that lands then finds fewer
 * held than it gives back. That give-back changes nothing and is reported to the thread's
 * uncaught-exception handler as an over-release; the coroutine ends cancelled. Without that other
 * release the same cancellation gives the permits back silently. This is the report that
 * FairShareSuspendingLincheckTest's `release(key, n)` actors cause, and expect.
 *
 * The window is held open by a dispatcher that runs nothing until the test says so.
 */
// A guard against hangs, not a speed check. In the thread that made the instance: the tests read
// what that thread's uncaught-exception handler was given.
@Timeout(value = 60, threadMode = Timeout.ThreadMode.SAME_THREAD)
class FairShareConfirmedGrantTest {

    /** Queues the coroutine's tasks; the test runs them. */
    private class HeldDispatcher : CoroutineDispatcher() {
        private val tasks = ConcurrentLinkedQueue<Runnable>()

        override fun dispatch(context: CoroutineContext, block: Runnable) {
            tasks += block
        }

        fun runAll() {
            while (true) {
                (tasks.poll() ?: return).run()
            }
        }
    }

    private val reports = ConcurrentLinkedQueue<Throwable>()
    private val me = Thread.currentThread()
    private var saved: Thread.UncaughtExceptionHandler? = null

    @BeforeEach
    fun captureUncaught() {
        saved = me.uncaughtExceptionHandler
        me.uncaughtExceptionHandler = Thread.UncaughtExceptionHandler { _, e -> reports += e }
    }

    @AfterEach
    fun restoreUncaught() {
        me.uncaughtExceptionHandler = saved
    }

    /** Key "k" holds the only permit; a coroutine of "k" waits for it; the release grants it. */
    private fun grantedAndConfirmed(
        fair: FairShareSemaphore<String>,
        dispatcher: HeldDispatcher,
    ): Job {
        assertTrue(fair.tryAcquire("k", 1))
        val job = CoroutineScope(dispatcher).launch { fair.acquire("k", 1L) }
        dispatcher.runAll() // it starts and waits
        assertEquals(1, fair.queueLength())
        fair.release("k", 1) // granted, confirmed, its resumption dispatched (not run yet)
        assertEquals(0, fair.queueLength())
        assertEquals(1, fair.heldPermits("k"))
        return job
    }

    @Test
    fun aCancelledConfirmedGrantGivesItsPermitsBack() {
        val fair = FairShareSemaphore.builder<String>(1).build()
        val dispatcher = HeldDispatcher()
        val job = grantedAndConfirmed(fair, dispatcher)
        job.cancel() // before the resumption ran: the give-back releases the permit
        dispatcher.runAll()
        assertTrue(job.isCancelled)
        assertEquals(0, fair.heldPermits("k"))
        assertEquals(1, fair.availablePermits())
        assertEquals(listOf(), reports.toList())
    }

    @Test
    fun anotherCallersReleaseFirstMakesTheGiveBackAReportedOverRelease() {
        val fair = FairShareSemaphore.builder<String>(1).build()
        val dispatcher = HeldDispatcher()
        val job = grantedAndConfirmed(fair, dispatcher)
        fair.release("k", 1) // another caller releases the key's permit: the coroutine's
        assertEquals(0, fair.heldPermits("k"))
        job.cancel() // the give-back finds nothing held
        dispatcher.runAll()
        assertTrue(job.isCancelled)
        assertEquals(0, fair.heldPermits("k"))
        assertEquals(1, fair.availablePermits()) // changed nothing: not given back twice
        val report = reports.single()
        assertIs<IllegalStateException>(report)
        assertTrue(report.message.orEmpty().endsWith("(an over-release)"), report.toString())
        assertTrue(
            report.cause?.message.orEmpty().contains("permits held by that key"),
            report.cause.toString(),
        )
    }
}
