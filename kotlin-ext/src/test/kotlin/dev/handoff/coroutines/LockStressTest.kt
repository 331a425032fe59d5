// SPDX-License-Identifier: Apache-2.0
package dev.handoff.coroutines

import dev.handoff.Mutex
import dev.handoff.RwLock
import java.util.concurrent.atomic.AtomicInteger
import kotlin.test.assertEquals
import kotlin.test.assertFalse
import kotlin.test.assertTrue
import kotlinx.coroutines.CancellationException
import kotlinx.coroutines.CoroutineStart
import kotlinx.coroutines.Dispatchers
import kotlinx.coroutines.joinAll
import kotlinx.coroutines.launch
import kotlinx.coroutines.runBlocking
import kotlinx.coroutines.sync.withLock
import kotlinx.coroutines.yield
import org.junit.jupiter.api.Test
import org.junit.jupiter.api.Timeout

/**
 * Races on real dispatchers for [Mutex], [RwLock] and the kotlinx view. Nothing here measures time:
 * every test checks exact lock states once all coroutines are done. A lost wake-up shows as a hang,
 * which the class-wide timeout turns into a failure.
 */
@Timeout(120) // a guard against hangs (a lost wake-up), not a speed check
class LockStressTest {

    private fun Mutex.assertIdle() {
        assertEquals(0, queueLength(), "queue length of $this")
        assertFalse(isLocked, "$this is still locked")
    }

    private fun RwLock.assertIdle() {
        assertEquals(0, queueLength(), "queue length of $this")
        assertFalse(isWriteLocked, "$this is write-locked")
        assertEquals(0, readLockCount(), "readers of $this")
        assertTrue(tryWriteLock(), "$this: some read permit is held by nobody")
        writeUnlock()
    }

    /** Counts how a waiter ended: it got the lock (and gave it back) or saw the cancellation. */
    private class Outcomes {
        val granted = AtomicInteger()
        val cancelled = AtomicInteger()

        suspend fun record(take: suspend () -> Unit, giveBack: () -> Unit) {
            try {
                take()
            } catch (e: CancellationException) {
                cancelled.incrementAndGet()
                throw e
            }
            granted.incrementAndGet()
            giveBack()
        }

        fun assertAll(rounds: Int, what: String) {
            assertEquals(rounds, granted.get() + cancelled.get(), "every queued $what settled once")
            println("$what: granted ${granted.get()}, cancelled ${cancelled.get()}")
        }
    }

    @Test
    fun `mutex unlock and waiter cancel race, 30_000 rounds on Dispatchers Default`(): Unit =
        runBlocking {
            val mutex = Mutex()
            val outcomes = Outcomes()
            repeat(30_000) {
                assertTrue(mutex.tryLock())
                // Undispatched: it is queued before the race starts; it resumes on
                // Dispatchers.Default.
                val waiter =
                    launch(Dispatchers.Default, start = CoroutineStart.UNDISPATCHED) {
                        outcomes.record({ mutex.lock() }, { mutex.unlock() })
                    }
                val unlocker = launch(Dispatchers.Default) { mutex.unlock() }
                waiter.cancel()
                unlocker.join()
                waiter.join()
                mutex.assertIdle()
            }
            outcomes.assertAll(30_000, "mutex waiters")
        }

    @Test
    fun `queued writer cancel races two reader unlocks, 30_000 rounds on Dispatchers Default`():
        Unit = runBlocking {
        val lock = RwLock(2)
        val writers = Outcomes()
        val readers = Outcomes()
        repeat(30_000) {
            assertTrue(lock.tryReadLock())
            assertTrue(lock.tryReadLock())
            val writer =
                launch(Dispatchers.Default, start = CoroutineStart.UNDISPATCHED) {
                    writers.record({ lock.writeLock() }, { lock.writeUnlock() })
                }
            // Behind the writer: must get in whether the writer is granted or cancelled.
            val reader =
                launch(Dispatchers.Default, start = CoroutineStart.UNDISPATCHED) {
                    readers.record({ lock.readLock() }, { lock.readUnlock() })
                }
            val unlocker = launch(Dispatchers.Default) { lock.readUnlock() }
            lock.readUnlock()
            writer.cancel()
            unlocker.join()
            writer.join()
            reader.join()
            lock.assertIdle()
        }
        writers.assertAll(30_000, "writers")
        assertEquals(30_000, readers.granted.get(), "no reader behind a cancelled writer is stuck")
    }

    @Test
    fun `queued reader cancel races the write unlock, 30_000 rounds on Dispatchers Default`():
        Unit = runBlocking {
        val lock = RwLock(3)
        val outcomes = Outcomes()
        repeat(30_000) {
            assertTrue(lock.tryWriteLock())
            val reader =
                launch(Dispatchers.Default, start = CoroutineStart.UNDISPATCHED) {
                    outcomes.record({ lock.readLock() }, { lock.readUnlock() })
                }
            val unlocker = launch(Dispatchers.Default) { lock.writeUnlock() }
            reader.cancel()
            unlocker.join()
            reader.join()
            lock.assertIdle()
        }
        outcomes.assertAll(30_000, "readers")
    }

    @Test
    fun `kotlinx view unlock(owner) and waiter cancel race, 20_000 rounds on Dispatchers Default`():
        Unit = runBlocking {
        val mutex = Mutex()
        val view = mutex.asKotlinxMutex()
        val outcomes = Outcomes()
        val holder = Any()
        val waiterOwner = Any()
        repeat(20_000) {
            assertTrue(view.tryLock(holder))
            val waiter =
                launch(Dispatchers.Default, start = CoroutineStart.UNDISPATCHED) {
                    outcomes.record(
                        { view.lock(waiterOwner) },
                        {
                            check(view.holdsLock(waiterOwner)) {
                                "the grant did not record the owner"
                            }
                            view.unlock(waiterOwner)
                        },
                    )
                }
            val unlocker = launch(Dispatchers.Default) { view.unlock(holder) }
            waiter.cancel()
            unlocker.join()
            waiter.join()
            mutex.assertIdle()
            assertFalse(view.holdsLock(waiterOwner))
            assertFalse(view.holdsLock(holder))
        }
        outcomes.assertAll(20_000, "view waiters")
    }

    @Test
    fun `4 coroutines x 1000 withWriteLock increments with concurrent readers are exact`(): Unit =
        runBlocking {
            val lock = RwLock(4)
            var a = 0 // two fields written together under the write lock
            var b = 0
            val torn = AtomicInteger()
            val writers =
                (0 until 4).map {
                    launch(Dispatchers.Default) {
                        repeat(1_000) {
                            lock.withWriteLock {
                                a++
                                if (it % 16 == 0) yield()
                                b++
                            }
                        }
                    }
                }
            val readers =
                (0 until 4).map {
                    launch(Dispatchers.Default) {
                        repeat(2_000) { lock.withReadLock { if (a != b) torn.incrementAndGet() } }
                    }
                }
            (writers + readers).joinAll()
            assertEquals(4_000, a)
            assertEquals(4_000, b)
            assertEquals(0, torn.get(), "a reader saw a half-done write")
            lock.assertIdle()
        }

    @Test
    fun `10_000 withLock waiters on Dispatchers Unconfined, granted through one unlock chain`():
        Unit = runBlocking {
        val mutex = Mutex()
        mutex.lock()
        var done = 0 // Unconfined: every waiter runs on this thread, inside the previous unlock
        val waiters = List(10_000) { launch(Dispatchers.Unconfined) { mutex.withLock { done++ } } }
        assertEquals(10_000, mutex.queueLength())
        mutex.unlock() // each waiter's unlock grants the next one, on this thread
        waiters.joinAll()
        assertEquals(10_000, done)
        mutex.assertIdle()
    }

    @Test
    fun `10_000 withLock waiters started inside a waker on Dispatchers Unconfined do not overflow`():
        Unit = runBlocking {
        // Started undispatched on Unconfined from inside the core's wake-up of the first one,
        // so every grant nests in the previous waiter's unlock unless something flattens it.
        val mutex = Mutex()
        mutex.lock()
        var done = 0
        val first =
            launch(Dispatchers.Unconfined, start = CoroutineStart.UNDISPATCHED) {
                mutex.lock()
                val chain =
                    List(10_000) {
                        launch(Dispatchers.Unconfined, start = CoroutineStart.UNDISPATCHED) {
                            mutex.withLock { done++ }
                        }
                    }
                mutex.unlock()
                chain.joinAll()
            }
        mutex.unlock()
        first.join()
        assertEquals(10_000, done)
        mutex.assertIdle()
    }

    @Test
    fun `10_000 alternating readers and writers on Dispatchers Unconfined do not overflow`(): Unit =
        runBlocking {
            val lock = RwLock(2)
            lock.writeLock()
            var reads = 0
            var writes = 0
            val waiters =
                List(10_000) { i ->
                    launch(Dispatchers.Unconfined) {
                        if (i % 3 == 0) lock.withWriteLock { writes++ }
                        else lock.withReadLock { reads++ }
                    }
                }
            lock.writeUnlock()
            waiters.joinAll()
            assertEquals(3_334, writes)
            assertEquals(6_666, reads)
            lock.assertIdle()
        }

    @Test
    fun `10_000 kotlinx withLock(owner) waiters on the view on Dispatchers Unconfined`(): Unit =
        runBlocking {
            val mutex = Mutex()
            val view = mutex.asKotlinxMutex()
            view.lock()
            var done = 0
            val waiters =
                List(10_000) {
                    val owner = Any()
                    launch(Dispatchers.Unconfined) {
                        view.withLock(owner) {
                            check(view.holdsLock(owner))
                            done++
                        }
                    }
                }
            view.unlock()
            waiters.joinAll()
            assertEquals(10_000, done)
            mutex.assertIdle()
        }
}
