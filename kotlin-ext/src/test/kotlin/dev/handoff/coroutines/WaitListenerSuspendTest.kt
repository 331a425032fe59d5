// SPDX-License-Identifier: Apache-2.0
package dev.handoff.coroutines

import dev.handoff.Semaphore
import dev.handoff.WaitListener
import dev.handoff.WaitOutcome
import java.util.Collections
import kotlin.test.assertEquals
import kotlin.test.assertFalse
import kotlin.test.assertNull
import kotlin.time.Duration.Companion.milliseconds
import kotlinx.coroutines.CoroutineStart
import kotlinx.coroutines.Dispatchers
import kotlinx.coroutines.launch
import kotlinx.coroutines.runBlocking
import kotlinx.coroutines.withTimeoutOrNull
import kotlinx.coroutines.yield
import org.junit.jupiter.api.Test
import org.junit.jupiter.api.Timeout

/** The coroutine face tells the semaphore's WaitListener how each suspension ended. */
@Timeout(60) // a guard against hangs, not a speed check
class WaitListenerSuspendTest {

    private class Log : WaitListener {
        val events: MutableList<String> = Collections.synchronizedList(mutableListOf())

        override fun queued(permits: Long, waitersAhead: Int) {
            events += "queued $permits"
        }

        override fun settled(
            permits: Long,
            outcome: WaitOutcome,
            waitNanos: Long,
            waitersAhead: Int,
        ) {
            events += "$outcome $permits"
        }
    }

    @Test
    fun `a suspension ends granted, timed out or cancelled, and says which`(): Unit =
        runBlocking(Dispatchers.Default) {
            val log = Log()
            val s = Semaphore.builder(4).listener(log).build()
            s.acquire(4)

            assertFalse(
                s.tryAcquire(2, 500.milliseconds)
            ) // the timeout of tryAcquire(n, Duration); long enough to queue under load
            assertNull(
                withTimeoutOrNull(500.milliseconds) { s.acquire(3) }
            ) // a user's own withTimeout

            val cancelled = launch(start = CoroutineStart.UNDISPATCHED) { s.acquire(1) }
            cancelled.cancel()
            cancelled.join()

            assertNull(
                withTimeoutOrNull(500.milliseconds) { s.acquireUpTo(1, 2) }
            ) // up-to requests too

            val granted = launch(start = CoroutineStart.UNDISPATCHED) { s.acquire(2) }
            while (s.queueLength() == 0) yield()
            s.release(2)
            granted.join()
            s.release(4)

            assertEquals(
                listOf(
                    "queued 2",
                    "TIMED_OUT 2",
                    "queued 3",
                    "TIMED_OUT 3",
                    "queued 1",
                    "CANCELLED 1",
                    "queued 1",
                    "TIMED_OUT 1",
                    "queued 2",
                    "GRANTED 2",
                ),
                log.events.toList(),
            )
            assertEquals(4, s.availablePermits())
        }
}
