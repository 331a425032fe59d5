package dev.handoff.coroutines

import dev.handoff.Semaphore
import dev.handoff.Waker
import kotlinx.coroutines.Dispatchers
import kotlinx.coroutines.cancelAndJoin
import kotlinx.coroutines.delay
import kotlinx.coroutines.launch
import kotlinx.coroutines.runBlocking
import org.junit.jupiter.api.Test
import org.junit.jupiter.api.Timeout
import java.util.concurrent.CountDownLatch
import java.util.concurrent.TimeUnit
import kotlin.test.assertEquals
import kotlin.test.assertTrue

/**
 * Regression test (second review): a coroutine whose grant is decided, but whose wake-up waits
 * behind a slow waker of the same release, and which is cancelled meanwhile, holds nothing once
 * its Job has completed.
 */
@Timeout(60) // a guard against hangs, not a speed check
class CancelBeforeWakeTest {

    @Test
    fun `a cancelled coroutine granted but not yet woken holds nothing when its Job completes`(): Unit = runBlocking {
        val s = Semaphore(2)
        assertTrue(s.tryAcquire(2))
        val gate = CountDownLatch(1)
        val inSlowWaker = CountDownLatch(1)
        s.acquire(1, Waker { inSlowWaker.countDown(); gate.await() }) // first in the chain, slow
        var returned = false
        val job = launch(Dispatchers.Default) {
            s.acquire(1)
            returned = true
        }
        while (s.queueLength() < 2) delay(1)
        val releaser = Thread { s.release(2) } // grants both, then runs the slow waker first
        releaser.start()
        assertTrue(inSlowWaker.await(20, TimeUnit.SECONDS))
        job.cancelAndJoin()
        val afterJoin = s.availablePermits()
        gate.countDown()
        releaser.join(TimeUnit.SECONDS.toMillis(20))
        assertEquals(1L, afterJoin, "the cancelled coroutine's permit was still out after its Job completed")
        assertEquals(false, returned)
        s.release(1) // the slow waker's permit
        assertEquals(2L, s.availablePermits())
    }
}
