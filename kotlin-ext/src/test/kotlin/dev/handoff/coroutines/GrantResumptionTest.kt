// SPDX-License-Identifier: Apache-2.0
package dev.handoff.coroutines

import dev.handoff.Acquisition
import dev.handoff.Semaphore
import dev.handoff.Waker
import dev.handoff.spi.Adapters
import java.util.concurrent.ConcurrentLinkedQueue
import java.util.concurrent.CountDownLatch
import java.util.concurrent.Executor
import java.util.concurrent.RejectedExecutionException
import java.util.concurrent.TimeUnit
import java.util.concurrent.atomic.AtomicReference
import kotlin.coroutines.CoroutineContext
import kotlin.test.assertEquals
import kotlin.test.assertFalse
import kotlin.test.assertTrue
import kotlinx.coroutines.CancellationException
import kotlinx.coroutines.CoroutineDispatcher
import kotlinx.coroutines.CoroutineScope
import kotlinx.coroutines.CoroutineStart
import kotlinx.coroutines.Dispatchers
import kotlinx.coroutines.Job
import kotlinx.coroutines.launch
import kotlinx.coroutines.runBlocking
import kotlinx.coroutines.withTimeout
import org.junit.jupiter.api.Test
import org.junit.jupiter.api.Timeout

/**
 * A dispatcher that only queues: the test decides when (and on which thread) tasks run. It refuses
 * the first [refuseFirst] tasks, as a closed executor would. Shared by the tests of this module
 * that need to hold a grant's resumption back.
 */
internal class QueuedDispatcher(private var refuseFirst: Int = 0) : CoroutineDispatcher() {
    val tasks = ConcurrentLinkedQueue<Runnable>()

    override fun dispatch(context: CoroutineContext, block: Runnable) {
        if (refuseFirst > 0) {
            refuseFirst--
            throw RejectedExecutionException("refused")
        }
        tasks.add(block)
    }

    fun runAll() {
        while (true) {
            (tasks.poll() ?: return).run()
        }
    }
}

/**
 * Where a granted coroutine resumes (on its own dispatcher, through one dispatched task, so that
 * kotlinx's detach of the Job handle happens on the coroutine's thread), and that a cancellation
 * racing that resumption gives the permits back exactly once on every path.
 */
@Timeout(60) // a guard against hangs, not a speed check
class GrantResumptionTest {
    /*
     * The coroutines under test run in scopes of their own, not as children of the test's
     * runBlocking: a failed assertion must end the test, not wait for a coroutine whose queued
     * resumption nobody will run.
     */

    /** Launches [block] in this scope with [start], recording in [thrown] what it throws. */
    private fun CoroutineScope.launchRecording(
        thrown: AtomicReference<Throwable>,
        start: CoroutineStart,
        block: suspend () -> Unit,
    ): Job =
        launch(start = start) {
            try {
                block()
            } catch (e: Throwable) {
                thrown.set(e)
                throw e
            }
        }

    /** Joins [job], failing instead of hanging if it does not complete. */
    private fun joinBounded(job: Job) = runBlocking { withTimeout(10_000) { job.join() } }

    @Test
    fun `a grant is one task on the coroutine's dispatcher, which resumes the coroutine on the thread that runs it`():
        Unit = run {
        val semaphore = Semaphore(1)
        assertTrue(semaphore.tryAcquire(1))
        val dispatcher = QueuedDispatcher()
        val resumedOn = AtomicReference<Thread>()
        val waiter =
            CoroutineScope(dispatcher + Job()).launch(start = CoroutineStart.UNDISPATCHED) {
                semaphore.acquire(1)
                resumedOn.set(Thread.currentThread())
            }
        assertEquals(1, semaphore.queueLength())
        semaphore.release(1)
        assertEquals(0, semaphore.queueLength())
        assertEquals(
            1,
            dispatcher.tasks.size,
            "the grant is handed to the coroutine's dispatcher as one task",
        )
        assertTrue(
            dispatcher.tasks.peek() is ContinuationAcquisition<*>,
            "the task is the node, not kotlinx's resumption",
        )
        assertFalse(waiter.isCompleted, "the coroutine must not run on the releasing thread")
        val runner = Thread(dispatcher::runAll, "grant-runner")
        runner.start()
        runner.join()
        assertEquals(runner, resumedOn.get())
        assertTrue(waiter.isCompleted)
        assertTrue(dispatcher.tasks.isEmpty(), "no second dispatch")
        assertEquals(0, semaphore.availablePermits(), "the coroutine holds its permit")
        semaphore.release(1)
    }

    @Test
    fun `a cancellation after the grant's dispatch but before its run gives the permits back at once, and once`() {
        val semaphore = Semaphore(3)
        assertTrue(semaphore.tryAcquire(3))
        val dispatcher = QueuedDispatcher()
        val thrown = AtomicReference<Throwable>()
        val waiter =
            CoroutineScope(dispatcher + Job()).launchRecording(
                thrown,
                CoroutineStart.UNDISPATCHED,
            ) {
                semaphore.acquire(2)
            }
        semaphore.release(2) // granted; its resumption is queued on the dispatcher
        assertEquals(1, dispatcher.tasks.size)
        waiter.cancel()
        // At once: the permits must be back before the cancelled coroutine's Job can complete.
        assertEquals(2, semaphore.availablePermits(), "the undelivered grant is free again at once")
        dispatcher.runAll() // the queued resumption is ignored; the coroutine sees its cancellation
        assertTrue(waiter.isCancelled && waiter.isCompleted)
        assertTrue(thrown.get() is CancellationException, "threw ${thrown.get()}")
        assertEquals(2, semaphore.availablePermits(), "given back exactly once")
        semaphore.release(1)
        assertEquals(3, semaphore.availablePermits())
    }

    @Test
    fun `the give-back of a grant cancelled before its resumption wakes the next waiter on the coroutine's dispatcher, not the cancelling thread`() {
        val semaphore = Semaphore(3)
        assertTrue(semaphore.tryAcquire(3))
        val dispatcher = QueuedDispatcher()
        val thrown = AtomicReference<Throwable>()
        val waiter =
            CoroutineScope(dispatcher + Job()).launchRecording(
                thrown,
                CoroutineStart.UNDISPATCHED,
            ) {
                semaphore.acquire(2)
            }
        val nextWokenOn = AtomicReference<Thread>()
        val next =
            semaphore.acquireThen(
                2,
                object : Waker {
                    override fun wake() = nextWokenOn.set(Thread.currentThread())
                },
            )
        semaphore.release(2) // the coroutine's grant: its resumption is queued on the dispatcher
        assertEquals(1, dispatcher.tasks.size)
        assertFalse(next.isGranted)

        waiter.cancel() // on this thread: the handler gives the grant back, completing `next`
        assertTrue(next.isGranted, "the permits went on before cancel() returned")
        assertEquals(
            null,
            nextWokenOn.get(),
            "the next waiter's waker must not run on the cancelling thread",
        )

        val runner = Thread(dispatcher::runAll, "dispatcher-runner")
        runner.start()
        runner.join(10_000)
        assertEquals(runner, nextWokenOn.get())
        assertTrue(waiter.isCancelled && waiter.isCompleted)
        assertTrue(thrown.get() is CancellationException, "threw ${thrown.get()}")
        assertEquals(
            0,
            semaphore.availablePermits(),
            "1 held by the test, 2 by `next`: given back exactly once",
        )
        semaphore.release(3)
        assertEquals(3, semaphore.availablePermits())
    }

    /**
     * kotlinx keeps a value resumed before the coroutine has suspended for its getResult, and drops
     * it there if the coroutine's Job was cancelled meanwhile, calling no handler (an undispatched
     * resumption keeps none). That race lies between the end of the suspendCancellableCoroutine
     * block and kotlinx's own suspension, where no caller can time it, so the node's start() plays
     * it on the coroutine's thread: it marks the block as past start() (phase OPEN, as the block
     * does next), releases (the grant becomes one task on the dispatcher), runs that task before
     * the coroutine suspended, and cancels the coroutine.
     */
    @Test
    fun `a grant resumed before the coroutine suspended and then dropped for a cancellation is given back once`() {
        val semaphore = Semaphore(3)
        assertTrue(semaphore.tryAcquire(3))
        val dispatcher = QueuedDispatcher()
        val scope = CoroutineScope(dispatcher + Job())
        val thrown = AtomicReference<Throwable>()
        val waiter = AtomicReference<Job>()
        val node =
            object : ContinuationAcquisition<Semaphore>() {
                override fun start(face: Semaphore, permits: Long) {
                    Adapters.startAcquisition(face, permits, this)
                    phase = ContinuationAcquisition.PHASE_OPEN
                    semaphore.release(2) // grants it
                    assertEquals(1, dispatcher.tasks.size, "the grant's resumption is queued")
                    dispatcher.runAll() // resumes the continuation before it suspended
                    waiter.get().cancel() // before kotlinx's getResult looks at the Job
                }

                override fun giveBack(wakes: Executor) = semaphore.release(2, wakes)

                override fun closedException() = IllegalStateException("closed")
            }
        waiter.set(
            scope.launchRecording(thrown, CoroutineStart.LAZY) { node.await<Unit>(semaphore, 2) }
        )
        waiter.get().start()
        dispatcher
            .runAll() // the coroutine's first run: it suspends in await, granted and cancelled
        // there
        assertTrue(thrown.get() is CancellationException, "threw ${thrown.get()}")
        assertTrue(node.isGranted)
        assertEquals(2, semaphore.availablePermits(), "the dropped grant is free again")
        joinBounded(waiter.get())
        assertTrue(waiter.get().isCancelled)
        assertEquals(2, semaphore.availablePermits(), "given back exactly once")
        semaphore.release(1)
        assertEquals(3, semaphore.availablePermits())
    }

    /**
     * A grant that another thread claims while the node is starting — after start() queued it,
     * before the block decides whether to install the cancellation handler — and whose wake-up is
     * held back (the releaser grants a Java waiter and then this node; the Java waiter's waker
     * holds it), with the coroutine cancelled before that wake-up: either still inside the block,
     * so that kotlinx throws from its getResult ([beforeSuspension]), or once it has suspended.
     * kotlinx then never delivers the grant and ignores the wake-up's resumption, so the node must
     * give it back: by the handler, which must be installed although the node is no longer pending,
     * or by await().
     */
    private fun claimedWhileStarting(
        beforeSuspension: Boolean,
        releaserStopsBeforeResume: Boolean = false,
    ) {
        val semaphore = Semaphore(5) // 2 stay held: a second give-back would not be refused
        assertTrue(semaphore.tryAcquire(5))
        val dispatcher = QueuedDispatcher()
        val inJavaWaker = CountDownLatch(1)
        val holdWakeUps = CountDownLatch(1)
        val first: Acquisition =
            semaphore.acquireThen(
                1,
                Waker {
                    inJavaWaker.countDown()
                    holdWakeUps.await()
                },
            )
        val waiter = AtomicReference<Job>()
        val releaser = AtomicReference<Thread>()
        val node =
            object : ContinuationAcquisition<Semaphore>() {
                override fun start(face: Semaphore, permits: Long) {
                    Adapters.startAcquisition(face, permits, this)
                    // grants the Java waiter and this node under one lock; the wake-ups wait in the
                    // Java waiter's
                    releaser.set(Thread { semaphore.release(3) }.also { it.start() })
                    assertTrue(inJavaWaker.await(10, TimeUnit.SECONDS))
                    assertTrue(isGranted, "claimed before the block looks at the node again")
                    if (releaserStopsBeforeResume) {
                        // as a releaser on a dispatcher that needs no dispatch (Lincheck's) leaves
                        // it when
                        // it is descheduled between its CAS from STARTING and its resume(); its
                        // held-back
                        // wake-up then plays the rest of that call
                        phase = ContinuationAcquisition.PHASE_RESUMING
                    }
                    if (beforeSuspension) {
                        waiter
                            .get()
                            .cancel() // on the coroutine's own thread, before kotlinx suspends it
                    }
                }

                override fun giveBack(wakes: Executor) = semaphore.release(2, wakes)

                override fun closedException() = IllegalStateException("closed")
            }
        val thrown = AtomicReference<Throwable>()
        waiter.set(
            CoroutineScope(dispatcher + Job()).launchRecording(thrown, CoroutineStart.LAZY) {
                node.await<Unit>(semaphore, 2)
            }
        )
        waiter.get().start()
        dispatcher.runAll() // the coroutine's first run: start() above, then it throws or suspends
        if (!beforeSuspension) {
            assertEquals(null, thrown.get(), "suspended")
            waiter.get().cancel()
            assertEquals(
                2,
                semaphore.availablePermits(),
                "the undelivered grant is back when cancel() returns",
            )
            dispatcher.runAll() // its resumption with the CancellationException
        }
        assertTrue(thrown.get() is CancellationException, "threw ${thrown.get()}")
        assertEquals(
            2,
            semaphore.availablePermits(),
            "the undelivered grant is back when the call throws",
        )
        holdWakeUps.countDown()
        releaser.get().join(10_000)
        dispatcher.runAll() // a resumption the wake-up may have queued: ignored by kotlinx
        joinBounded(waiter.get())
        assertTrue(waiter.get().isCancelled)
        assertTrue(first.isGranted)
        assertEquals(2, semaphore.availablePermits(), "given back exactly once")
        semaphore.release(1) // the Java waiter's permit
        assertEquals(3, semaphore.availablePermits())
        semaphore.release(2)
    }

    @Test
    fun `a grant claimed while the node starts, cancelled before the suspension and before its wake-up, is given back once`() {
        claimedWhileStarting(beforeSuspension = true)
    }

    @Test
    fun `a grant claimed while the node starts, cancelled after the suspension but before its wake-up, is given back once`() {
        claimedWhileStarting(beforeSuspension = false)
    }

    @Test
    fun `a grant whose direct resumption is under way when the coroutine is cancelled is back before cancel() returns`() {
        claimedWhileStarting(beforeSuspension = false, releaserStopsBeforeResume = true)
    }

    @Test
    fun `a grant whose direct resumption is under way when kotlinx drops it before the suspension is back when the call throws`() {
        claimedWhileStarting(beforeSuspension = true, releaserStopsBeforeResume = true)
    }

    /**
     * One release grants a Java waiter and then the coroutine; the Java waiter's waker (run first,
     * FIFO) cancels the coroutine, between its claim and its resumption, and then looks at the free
     * permits: the grant the cancellation kept from being delivered must be back as soon as
     * cancel() returns, not later in the releaser's wake-up of the coroutine (a Lincheck stress run
     * saw a cancelled acquire followed by availablePermits() 0 on its own thread). Returns the
     * permits free afterwards (of 5; 2 stay held throughout, so that a second give-back would not
     * be refused as a release beyond the capacity), with the coroutine on [dispatcher].
     */
    private fun cancelledBetweenClaimAndResume(
        dispatcher: CoroutineDispatcher,
        runQueued: () -> Unit,
    ): Long = run {
        val semaphore = Semaphore(5)
        assertTrue(semaphore.tryAcquire(5))
        val victim = AtomicReference<Job>()
        val seenByCanceller = AtomicReference<Long>()
        val first: Acquisition =
            semaphore.acquireThen(
                1,
                Waker {
                    victim.get().cancel()
                    seenByCanceller.set(semaphore.availablePermits())
                },
            )
        val waiter =
            CoroutineScope(dispatcher + Job()).launch(start = CoroutineStart.UNDISPATCHED) {
                semaphore.acquire(2)
            }
        victim.set(waiter)
        assertEquals(2, semaphore.queueLength())
        semaphore.release(3) // grants both, under one lock; then the wakers run in order
        runQueued()
        joinBounded(waiter)
        assertTrue(waiter.isCancelled)
        assertTrue(first.isGranted)
        assertEquals(
            2L,
            seenByCanceller.get(),
            "the undelivered grant is back when cancel() returns",
        )
        semaphore.release(1) // the Java waiter's permit
        semaphore.availablePermits().also { semaphore.release(2) }
    }

    @Test
    fun `a cancellation between claim and a dispatched resumption gives the permits back once`() {
        val dispatcher = QueuedDispatcher()
        assertEquals(3, cancelledBetweenClaimAndResume(dispatcher) { dispatcher.runAll() })
    }

    @Test
    fun `a cancellation between claim and a direct resumption gives the permits back once, though both kotlinx callbacks report it`() {
        // Unconfined needs no dispatch: the grant takes resume(Unit, onCancellation). The
        // cancellation
        // came first, so kotlinx calls the cancellation handler and then the onCancellation.
        assertEquals(3, cancelledBetweenClaimAndResume(Dispatchers.Unconfined) {})
    }

    /**
     * The other side of the same race, with the two parties on two threads (Lincheck's stress mode
     * found it on an RwLock: a readUnlock that granted a writer, then a tryReadLock of the same
     * thread that failed although the writer had been cancelled). The releaser R grants a Java
     * waiter and then the coroutine; the Java waiter's waker starts a thread C that cancels the
     * coroutine, and returns once C's cancellation handler is inside its give-back, which the test
     * holds there. R's wake-up of the coroutine then finds the grant being given back by C: its
     * release must not return before the permits are back.
     */
    @Test
    fun `a release whose grant another thread's cancellation is giving back returns only once the permits are back`() {
        val semaphore = Semaphore(5) // 2 stay held: a second give-back would not be refused
        assertTrue(semaphore.tryAcquire(5))
        val inGiveBack = CountDownLatch(1)
        val proceed = CountDownLatch(1)
        val node =
            object : ContinuationAcquisition<Semaphore>() {
                override fun start(face: Semaphore, permits: Long) {
                    Adapters.startAcquisition(face, permits, this)
                }

                // The first step of the give-back (the grant is still provisional: it is undone
                // next).
                override fun forgetGrant() {
                    inGiveBack.countDown()
                    proceed.await()
                }

                override fun giveBack(wakes: Executor) = semaphore.release(2, wakes)

                override fun closedException() = IllegalStateException("closed")
            }
        val victim = AtomicReference<Job>()
        val canceller = AtomicReference<Thread>()
        val first: Acquisition =
            semaphore.acquireThen(
                1,
                Waker {
                    canceller.set(Thread { victim.get().cancel() }.also { it.start() })
                    inGiveBack.await()
                },
            )
        // Unconfined: the grant takes the direct resumption, as under Lincheck.
        victim.set(
            CoroutineScope(Dispatchers.Unconfined + Job()).launch { node.await<Unit>(semaphore, 2) }
        )
        assertEquals(2, semaphore.queueLength())
        val seenByReleaser = AtomicReference<Long>()
        val releaser = Thread {
            semaphore.release(3) // grants both; the Java waiter's waker runs first
            seenByReleaser.set(semaphore.availablePermits())
        }
        releaser.start()
        assertTrue(inGiveBack.await(10, TimeUnit.SECONDS))
        // Hold C's give-back until R waits for it (or, wrongly, has returned).
        val deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10)
        while (releaser.isAlive && releaser.stackTrace.none { it.methodName == "awaitGiven" }) {
            assertTrue(System.nanoTime() < deadline, "the releaser neither returned nor waited")
            Thread.onSpinWait()
        }
        proceed.countDown()
        releaser.join(10_000)
        canceller.get().join(10_000)
        joinBounded(victim.get())
        assertTrue(victim.get().isCancelled)
        assertTrue(first.isGranted)
        assertEquals(
            2L,
            seenByReleaser.get(),
            "the release returned before the cancelled grant was back",
        )
        semaphore.release(1) // the Java waiter's permit
        assertEquals(3, semaphore.availablePermits(), "given back exactly once")
        semaphore.release(2)
    }

    @Test
    fun `a direct resumption cancelled before it runs gives the permits back once, though both kotlinx callbacks report it`():
        Unit = runBlocking {
        val semaphore = Semaphore(5) // 3 stay held: a second give-back would not be refused
        assertTrue(semaphore.tryAcquire(5))
        val waiter = launch(Dispatchers.Unconfined) { semaphore.acquire(2) }
        assertEquals(1, semaphore.queueLength())
        launch(Dispatchers.Unconfined) {
            // Inside an Unconfined coroutine, kotlinx queues the waiter's direct resumption on
            // this thread's event loop until this block ends; the cancellation lands before it
            // runs, so kotlinx calls both the cancellation handler and the onCancellation.
            semaphore.release(2)
            assertFalse(waiter.isCompleted, "the resumption is queued behind this block")
            waiter.cancel()
        }
        waiter.join()
        assertTrue(waiter.isCancelled)
        assertEquals(
            2,
            semaphore.availablePermits(),
            "the undelivered grant is given back exactly once",
        )
        semaphore.release(3)
        assertEquals(5, semaphore.availablePermits())
    }

    @Test
    fun `a dispatcher that refuses the grant's task has it run on Dispatchers IO, as kotlinx does`() {
        val semaphore = Semaphore(1)
        assertTrue(semaphore.tryAcquire(1))
        val dispatcher = QueuedDispatcher(refuseFirst = 1) // the grant's own task: refused
        val resumedOn = AtomicReference<Thread>()
        val waiter =
            CoroutineScope(dispatcher + Job()).launch(start = CoroutineStart.UNDISPATCHED) {
                semaphore.acquire(1)
                resumedOn.set(Thread.currentThread())
            }
        semaphore.release(1)
        joinBounded(waiter)
        assertFalse(waiter.isCancelled, "resumed with the grant")
        assertTrue(
            resumedOn.get().name.startsWith("DefaultDispatcher-worker"),
            "resumed on ${resumedOn.get()}",
        )
        assertTrue(dispatcher.tasks.isEmpty())
        assertEquals(0, semaphore.availablePermits(), "the coroutine holds its permit")
        semaphore.release(1)
    }
}
