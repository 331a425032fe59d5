// SPDX-License-Identifier: Apache-2.0
package dev.handoff.coroutines

import dev.handoff.Semaphore
import dev.handoff.SemaphoreClosedException
import dev.handoff.SemaphoreRejectedException
import dev.handoff.Waker
import java.time.Duration as JavaDuration
import java.util.concurrent.CountDownLatch
import java.util.concurrent.TimeUnit
import java.util.concurrent.atomic.AtomicReference
import kotlin.test.assertEquals
import kotlin.test.assertFailsWith
import kotlin.test.assertFalse
import kotlin.test.assertTrue
import kotlin.time.Duration
import kotlin.time.Duration.Companion.microseconds
import kotlin.time.Duration.Companion.milliseconds
import kotlin.time.Duration.Companion.seconds
import kotlinx.coroutines.CoroutineScope
import kotlinx.coroutines.CoroutineStart
import kotlinx.coroutines.Dispatchers
import kotlinx.coroutines.Job
import kotlinx.coroutines.async
import kotlinx.coroutines.delay
import kotlinx.coroutines.launch
import kotlinx.coroutines.runBlocking
import kotlinx.coroutines.withTimeout
import org.junit.jupiter.api.Test
import org.junit.jupiter.api.Timeout

/** CONTRACT.md section 5 on the coroutine face: timed acquire, up-to, closeAndJoin, shedding. */
@Timeout(60) // a guard against hangs, not a speed check
class CapacityControlSuspendTest {

    @Test
    fun `tryAcquire with a timeout is true iff the permits are held`(): Unit = runBlocking {
        val s = Semaphore(2)
        assertTrue(s.tryAcquire(2, Duration.ZERO))
        assertFalse(s.tryAcquire(1, Duration.ZERO))
        assertFalse(s.tryAcquire(1, 30.milliseconds))
        assertEquals(0, s.queueLength(), "the timed-out wait was withdrawn")
        val later = async(Dispatchers.Default) { s.tryAcquire(1, 10.seconds) }
        while (s.queueLength() == 0) delay(1)
        s.release(1)
        assertTrue(later.await())
        s.release(2)
        assertEquals(2, s.availablePermits())
        assertFailsWith<IllegalArgumentException> { s.tryAcquire(3, 1.seconds) }
        assertFailsWith<IllegalArgumentException> { s.tryAcquire(-1, 1.seconds) }
        s.close()
        assertFailsWith<SemaphoreClosedException> { s.tryAcquire(1, 1.seconds) }
    }

    @Test
    fun `timed tryAcquire racing a release never leaks, 2_000 rounds on Dispatchers Default`():
        Unit = runBlocking {
        val s = Semaphore(1)
        var granted = 0
        repeat(2_000) { round ->
            assertTrue(s.tryAcquire(1))
            val timeout = (50 + round % 200).microseconds
            val waiter = async(Dispatchers.Default) { s.tryAcquire(1, timeout) }
            launch(Dispatchers.Default) { s.release(1) }.join()
            if (waiter.await()) {
                granted++
                s.release(1)
            }
            assertEquals(1, s.availablePermits(), "round $round")
        }
        assertTrue(granted > 0)
    }

    @Test
    fun `acquireUpTo takes between min and max in FIFO order`(): Unit = runBlocking {
        val s = Semaphore(10)
        assertEquals(
            10,
            s.acquireUpTo(1, 10),
        ) // all free: taken at once; held until the releases below
        val heavy = async(Dispatchers.Default, start = CoroutineStart.UNDISPATCHED) { s.acquire(6) }
        val upTo =
            async(Dispatchers.Default, start = CoroutineStart.UNDISPATCHED) { s.acquireUpTo(2, 5) }
        s.release(7)
        heavy.await()
        assertFalse(upTo.isCompleted)
        s.release(3)
        assertEquals(4, upTo.await())
        s.release(6)
        s.release(4)
        assertEquals(10, s.availablePermits())
        assertFailsWith<IllegalArgumentException> { s.acquireUpTo(3, 2) }
    }

    @Test
    fun `acquireUpTo refuses bad bounds naming itself, the values and the limit, and changes nothing`():
        Unit = runBlocking {
        val s = Semaphore(10)
        assertTrue(s.tryAcquire(4))
        val inverted = assertFailsWith<IllegalArgumentException> { s.acquireUpTo(3, 2) }
        assertEquals("acquireUpTo(3, 2): needs 1 <= min <= max", inverted.message)
        val zero = assertFailsWith<IllegalArgumentException> { s.acquireUpTo(0, 2) }
        assertEquals("acquireUpTo(0, 2): needs 1 <= min <= max", zero.message)
        val tooBig = assertFailsWith<IllegalArgumentException> { s.acquireUpTo(11, 20) }
        assertEquals(
            "acquireUpTo(11, 20): min exceeds the capacity 10, so it could never be granted",
            tooBig.message,
        )
        assertEquals(6, s.availablePermits())
        assertEquals(0, s.queueLength())
    }

    @Test
    fun `a cancelled acquireUpTo holds nothing whichever came first`(): Unit = runBlocking {
        val s = Semaphore(4)
        repeat(2_000) {
            assertTrue(s.tryAcquire(4))
            val waiter =
                launch(Dispatchers.Default, start = CoroutineStart.UNDISPATCHED) {
                    val got = s.acquireUpTo(2, 4)
                    s.release(got)
                }
            launch(Dispatchers.Default) { s.release(4) }
            waiter.cancel()
            waiter.join()
            while (s.availablePermits() != 4L) delay(1) // the releaser may still be running
            assertEquals(0, s.queueLength())
        }
    }

    @Test
    fun `acquireUpTo on a closed or full semaphore throws the cause, naming acquireUpTo and its bounds`():
        Unit = runBlocking {
        val full = Semaphore.builder(2).maxQueueLength(0).build()
        assertTrue(full.tryAcquire(2))
        val shed = assertFailsWith<SemaphoreRejectedException> { full.acquireUpTo(1, 2) }
        assertTrue(
            shed.message!!.startsWith("acquireUpTo(1, 2): rejected, the wait queue is full"),
            shed.message,
        )
        val equalBounds = assertFailsWith<SemaphoreRejectedException> { full.acquireUpTo(2, 2) }
        assertTrue(
            equalBounds.message!!.startsWith("acquireUpTo(2, 2): rejected"),
            equalBounds.message,
        )
        val closed = Semaphore(2)
        closed.close()
        val refused = assertFailsWith<SemaphoreClosedException> { closed.acquireUpTo(1, 2) }
        assertEquals("acquireUpTo(1, 2): the semaphore is closed", refused.message)
        val closing = Semaphore(2)
        assertTrue(closing.tryAcquire(2))
        val waiter =
            async(Dispatchers.Default, start = CoroutineStart.UNDISPATCHED) {
                assertFailsWith<SemaphoreClosedException> { closing.acquireUpTo(1, 2) }
            }
        assertEquals(1, closing.queueLength())
        closing.close()
        assertEquals("acquireUpTo(1, 2): the semaphore is closed", waiter.await().message)
    }

    @Test
    fun `a cancelled acquireUpTo whose grant is on its way gives it back before cancel() returns`() {
        val semaphore = Semaphore(5)
        assertTrue(semaphore.tryAcquire(5))
        val dispatcher = QueuedDispatcher()
        val waiter =
            CoroutineScope(dispatcher + Job()).launch(start = CoroutineStart.UNDISPATCHED) {
                semaphore.acquireUpTo(2, 4)
            }
        assertEquals(1, semaphore.queueLength())
        semaphore.release(3) // granted with 3; its resumption waits on the dispatcher
        assertEquals(0, semaphore.queueLength())
        waiter.cancel()
        assertEquals(
            3,
            semaphore.availablePermits(),
            "the undelivered grant is free again before cancel() returns",
        )
        dispatcher.runAll() // the resumption is ignored: the coroutine sees its cancellation
        assertTrue(waiter.isCancelled && waiter.isCompleted)
        assertEquals(3, semaphore.availablePermits(), "given back exactly once")
        semaphore.release(2)
        assertEquals(5, semaphore.availablePermits())
    }

    @Test
    fun `a cancelled acquireUpTo hands its partial permits on, and the next waiter's waker runs on its dispatcher`():
        Unit = runBlocking {
        val semaphore = Semaphore(3)
        assertTrue(semaphore.tryAcquire(3))
        val head = launch(Dispatchers.Default) { semaphore.acquireUpTo(2, 3) }
        while (semaphore.queueLength() < 1) delay(1)
        semaphore.release(1) // the head is handed 1 of the 2 it needs
        val nextWokenOn = AtomicReference<Thread>()
        val nextWoken = CountDownLatch(1)
        val next =
            semaphore.acquireThen(
                1,
                Waker {
                    nextWokenOn.set(Thread.currentThread())
                    nextWoken.countDown()
                },
            )
        head.cancel() // on this thread, which must not run the next waiter's waker
        assertTrue(
            nextWoken.await(20, TimeUnit.SECONDS),
            "the head's partial permit never reached the next waiter",
        )
        assertTrue(next.isGranted)
        val thread = nextWokenOn.get()
        assertTrue(
            thread != Thread.currentThread() && thread.name.startsWith("DefaultDispatcher-worker"),
            "ran on $thread",
        )
        head.join()
        assertEquals(0, semaphore.queueLength())
        semaphore.release(2 + 1)
        assertEquals(3, semaphore.availablePermits())
    }

    /**
     * closeAndJoin starts undispatched: it closes the semaphore on this thread and suspends in its
     * wait before `async` returns. (Dispatched, the test checked `isClosed` 20 ms later, which is
     * not enough for Dispatchers.Default to have run it on a loaded machine.)
     */
    @Test
    fun `closeAndJoin waits for the last holder`(): Unit = runBlocking {
        val s = Semaphore(3)
        assertTrue(s.tryAcquire(2))
        val closing =
            async(Dispatchers.Default, start = CoroutineStart.UNDISPATCHED) { s.closeAndJoin() }
        assertTrue(s.isClosed)
        assertFalse(closing.isCompleted, "2 permits are still held")
        s.release(1)
        delay(20) // room for a wrong completion, resumed on Dispatchers.Default, to show
        assertFalse(closing.isCompleted, "1 permit is still held")
        s.release(1)
        withTimeout(10.seconds) { closing.await() }
    }

    @Test
    fun `a suspend acquire that would exceed the queue bound is rejected and queues nothing`():
        Unit = runBlocking {
        val s = Semaphore.builder(1).maxQueuedPermits(1).build()
        assertTrue(s.tryAcquire(1))
        val first = async(Dispatchers.Default, start = CoroutineStart.UNDISPATCHED) { s.acquire(1) }
        assertEquals(1, s.queuedPermits())
        val refused = assertFailsWith<SemaphoreRejectedException> { s.acquire(1) }
        assertTrue(
            refused.message!!.startsWith("acquire(1): rejected, the wait queue is full"),
            refused.message,
        )
        assertEquals(1, s.queueLength())
        s.release(1)
        first.await()
        s.release(1)
        assertEquals(1, s.availablePermits())
        assertTrue(s.tryAcquireAsync(1, JavaDuration.ZERO).get())
        s.release(1)
    }
}
