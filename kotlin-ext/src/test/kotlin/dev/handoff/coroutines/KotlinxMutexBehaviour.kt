// SPDX-License-Identifier: Apache-2.0
package dev.handoff.coroutines

import dev.handoff.Mutex as HandoffMutex
import dev.handoff.SemaphoreClosedException
import kotlin.test.assertEquals
import kotlin.test.assertFailsWith
import kotlin.test.assertFalse
import kotlin.test.assertTrue
import kotlinx.coroutines.ExperimentalCoroutinesApi
import kotlinx.coroutines.async
import kotlinx.coroutines.delay
import kotlinx.coroutines.launch
import kotlinx.coroutines.selects.select
import kotlinx.coroutines.sync.Mutex as KotlinxMutex
import kotlinx.coroutines.sync.withLock
import kotlinx.coroutines.test.runCurrent
import kotlinx.coroutines.test.runTest
import kotlinx.coroutines.withTimeoutOrNull
import org.junit.jupiter.api.Test

/**
 * Behaviour checks of the `kotlinx.coroutines.sync.Mutex` contract, written once and run against
 * kotlinx's own implementation ([KotlinxOwnMutexTest]) and against our view
 * ([HandoffKotlinxMutexViewTest]): whatever kotlinx code may rely on, including the owner checks,
 * the view must do the same. Exception messages differ on purpose (ours name the call), so only the
 * exception types are compared.
 */
@OptIn(ExperimentalCoroutinesApi::class)
abstract class KotlinxMutexBehaviour {

    /** An unlocked mutex. */
    abstract fun mutex(): KotlinxMutex

    private val alice = Any()
    private val bob = Any()

    @Test
    fun `tryLock locks a free mutex and fails on a locked one`(): Unit = runTest {
        val m = mutex()
        assertFalse(m.isLocked)
        assertTrue(m.tryLock())
        assertTrue(m.isLocked)
        assertFalse(m.tryLock())
        assertFalse(m.tryLock(alice), "locked without an owner: another owner just fails")
        m.unlock()
        assertFalse(m.isLocked)
    }

    @Test
    fun `lock suspends until unlock, in FIFO order`(): Unit = runTest {
        val m = mutex()
        m.lock()
        val order = mutableListOf<Int>()
        val waiters =
            (1..3).map { i ->
                launch {
                    m.lock()
                    order += i
                }
            }
        runCurrent()
        assertEquals(emptyList(), order)
        repeat(3) { k ->
            m.unlock()
            runCurrent()
            assertEquals((1..k + 1).toList(), order)
            assertTrue(m.isLocked)
        }
        waiters.forEach { assertTrue(it.isCompleted) }
        m.unlock()
        assertFalse(m.isLocked)
    }

    @Test
    fun `unlock of an unlocked mutex throws IllegalStateException and changes nothing`(): Unit =
        runTest {
            val m = mutex()
            assertFailsWith<IllegalStateException> { m.unlock() }
            assertFailsWith<IllegalStateException> { m.unlock(alice) }
            assertFalse(m.isLocked)
            m.lock()
            m.unlock()
            assertFailsWith<IllegalStateException> { m.unlock() }
            assertFalse(m.isLocked)
            assertTrue(m.tryLock())
            m.unlock()
        }

    @Test
    fun `holdsLock tells the owner`(): Unit = runTest {
        val m = mutex()
        assertFalse(m.holdsLock(alice))
        m.lock(alice)
        assertTrue(m.holdsLock(alice))
        assertFalse(m.holdsLock(bob))
        m.unlock(alice)
        assertFalse(m.holdsLock(alice))
        assertTrue(m.tryLock(bob))
        assertTrue(m.holdsLock(bob))
        assertFalse(m.holdsLock(alice))
        m.unlock(bob)
        m.lock()
        assertFalse(m.holdsLock(alice), "locked without an owner")
        m.unlock()
    }

    @Test
    fun `locking again with the same owner throws instead of deadlocking`(): Unit = runTest {
        val m = mutex()
        m.lock(alice)
        assertFailsWith<IllegalStateException> { m.tryLock(alice) }
        assertFailsWith<IllegalStateException> { m.lock(alice) }
        assertFailsWith<IllegalStateException> { m.withLock(alice) { error("must not run") } }
        assertTrue(m.holdsLock(alice), "still held by alice")
        assertFalse(m.tryLock(bob))
        m.unlock(alice)
        assertFalse(m.isLocked)
    }

    @Test
    fun `unlock with another owner throws and keeps the lock`(): Unit = runTest {
        val m = mutex()
        m.lock(alice)
        assertFailsWith<IllegalStateException> { m.unlock(bob) }
        assertTrue(m.holdsLock(alice))
        m.unlock(alice)

        m.lock() // no owner
        assertFailsWith<IllegalStateException> { m.unlock(alice) }
        assertTrue(m.isLocked)
        m.unlock()

        m.lock(alice)
        m.unlock() // no owner given: unlocks whichever owner holds it
        assertFalse(m.isLocked)
        assertFalse(m.holdsLock(alice))
    }

    @Test
    fun `a waiter with an owner gets it recorded when the lock is handed over`(): Unit = runTest {
        val m = mutex()
        m.lock(alice)
        val waiter = launch { m.lock(bob) }
        runCurrent()
        assertFalse(m.holdsLock(bob))
        m.unlock(alice)
        runCurrent()
        assertTrue(waiter.isCompleted)
        assertTrue(m.holdsLock(bob))
        assertFalse(m.holdsLock(alice))
        m.unlock(bob)
        assertFalse(m.isLocked)
    }

    @Test
    fun `withLock unlocks when the action throws`(): Unit = runTest {
        val m = mutex()
        val e =
            assertFailsWith<IllegalStateException> {
                m.withLock(alice) {
                    assertTrue(m.holdsLock(alice))
                    error("boom")
                }
            }
        assertEquals("boom", e.message)
        assertFalse(m.isLocked)
        assertFalse(m.holdsLock(alice))
    }

    @Test
    fun `withLock unlocks on an early return`(): Unit = runTest {
        val m = mutex()
        suspend fun find(): String {
            listOf("a", "b").forEach { v -> m.withLock { if (v == "a") return "found $v" } }
            return "none"
        }
        assertEquals("found a", find())
        assertFalse(m.isLocked)
        assertEquals("x", m.withLock { "x" })
        assertFalse(m.isLocked)
    }

    @Test
    fun `a cancelled waiter does not take the lock`(): Unit = runTest {
        val m = mutex()
        m.lock()
        val first = launch { m.lock(alice) }
        var secondRan = false
        val second = launch {
            m.lock(bob)
            secondRan = true
        }
        runCurrent()
        first.cancel()
        runCurrent()
        m.unlock()
        runCurrent()
        assertTrue(first.isCancelled)
        assertTrue(secondRan)
        assertTrue(second.isCompleted)
        assertTrue(m.holdsLock(bob))
        m.unlock(bob)
        assertFalse(m.isLocked)
    }

    @Test
    fun `a waiter cancelled after the unlock does not keep the lock`(): Unit = runTest {
        val m = mutex()
        m.lock()
        var ran = false
        val waiter = launch {
            m.lock(alice)
            ran = true
        }
        runCurrent()
        m.unlock() // hands the lock to the waiter, which is not dispatched yet
        waiter.cancel()
        runCurrent()
        assertFalse(ran)
        assertFalse(m.isLocked)
        assertFalse(m.holdsLock(alice))
        assertTrue(m.tryLock(alice), "alice's record is gone")
        m.unlock(alice)
    }

    @Test
    fun `lock under a timeout never leaks the lock`(): Unit = runTest {
        val m = mutex()
        var holders = 0
        val jobs =
            (0 until 200).map { i ->
                launch {
                    val owner = Any()
                    delay(i % 7L)
                    if (withTimeoutOrNull(i % 5L) { m.lock(owner) } != null) {
                        holders++
                        assertEquals(1, holders)
                        assertTrue(m.holdsLock(owner))
                        delay(i % 3L)
                        holders--
                        m.unlock(owner)
                    }
                }
            }
        jobs.forEach { it.join() }
        assertEquals(0, holders)
        assertFalse(m.isLocked)
    }

    @Test
    fun `a select can race a lock through async`(): Unit = runTest {
        // The documented replacement of the deprecated onLock clause, for both implementations.
        val m = mutex()
        m.lock()
        val locking = async { m.lock(alice) }
        val winner = select {
            locking.onAwait { "lock" }
            async { delay(10) }.onAwait { "timer" }
        }
        assertEquals("timer", winner)
        m.unlock()
        locking.await()
        assertTrue(m.holdsLock(alice))
        m.unlock(alice)
    }
}

/** The reference: kotlinx.coroutines' own mutex. */
class KotlinxOwnMutexTest : KotlinxMutexBehaviour() {
    override fun mutex(): KotlinxMutex = KotlinxMutex()
}

/** Our view must behave exactly like the reference. */
@OptIn(ExperimentalCoroutinesApi::class)
class HandoffKotlinxMutexViewTest : KotlinxMutexBehaviour() {
    override fun mutex(): KotlinxMutex = HandoffMutex().asKotlinxMutex()

    @Test
    fun `the view and the mutex share the lock and the queue`(): Unit = runTest {
        val mutex = HandoffMutex()
        val view = mutex.asKotlinxMutex()
        mutex.lock() // the suspending extension on the Java face
        assertTrue(view.isLocked)
        assertFalse(view.tryLock())
        val viaView = launch { view.lock("owner") }
        runCurrent()
        val future = mutex.lockAsync()
        assertEquals(2, mutex.queueLength())
        assertFalse(view.holdsLock("owner"))
        mutex.unlock()
        runCurrent()
        assertTrue(viaView.isCompleted)
        assertTrue(view.holdsLock("owner"))
        assertFalse(future.isDone)
        view.unlock("owner")
        assertTrue(future.isDone)
        assertTrue(view.isLocked)
        assertFalse(view.holdsLock("owner"))
        mutex.unlock()
        assertFalse(view.isLocked)
        assertEquals(0, mutex.queueLength())
    }

    @Test
    fun `a lock taken through the Java face has no owner for the view`(): Unit = runTest {
        val mutex = HandoffMutex()
        val view = mutex.asKotlinxMutex()
        assertTrue(mutex.tryLock())
        assertFalse(view.holdsLock("owner"))
        assertFalse(view.tryLock("owner"))
        val e = assertFailsWith<IllegalStateException> { view.unlock("owner") }
        assertTrue(e.message!!.startsWith("unlock(owner): the mutex is locked by"), e.message)
        assertTrue(mutex.isLocked)
        view.unlock() // no owner: unlocks
        assertFalse(mutex.isLocked)
    }

    @Test
    fun `owner errors name the call`(): Unit = runTest {
        val view = HandoffMutex().asKotlinxMutex()
        view.lock("alice")
        assertEquals(
            "tryLock(alice): the mutex is already locked by this owner",
            assertFailsWith<IllegalStateException> { view.tryLock("alice") }.message,
        )
        assertEquals(
            "lock(alice): the mutex is already locked by this owner",
            assertFailsWith<IllegalStateException> { view.lock("alice") }.message,
        )
        assertEquals(
            "unlock(bob): the mutex is locked by owner alice, not by bob",
            assertFailsWith<IllegalStateException> { view.unlock("bob") }.message,
        )
        view.unlock("alice")
        assertEquals(
            "unlock(alice): the mutex is not locked",
            assertFailsWith<IllegalStateException> { view.unlock("alice") }.message,
        )
        assertEquals(
            "unlock(): the mutex is not locked",
            assertFailsWith<IllegalStateException> { view.unlock() }.message,
        )
    }

    @Test
    fun `close fails the view's waiters with SemaphoreClosedException, and its tryLock is false`():
        Unit = runTest {
        val mutex = HandoffMutex()
        val view = mutex.asKotlinxMutex()
        view.lock("alice")
        val failures = mutableListOf<String>()
        var ranInside = false
        launch { recordClosed(failures) { view.lock("bob") } }
        launch { recordClosed(failures) { view.withLock { ranInside = true } } }
        runCurrent()
        assertEquals(2, mutex.queueLength())
        mutex.close()
        runCurrent()
        assertEquals(
            listOf("lock(): the mutex is closed", "lock(bob): the mutex is closed"),
            failures.sorted(),
        )
        assertFalse(ranInside)
        assertFalse(view.holdsLock("bob"))
        assertTrue(view.holdsLock("alice"), "the holder keeps the lock")
        view.unlock("alice")
        assertFalse(view.tryLock())
        assertEquals(
            "lock(): the mutex is closed",
            assertFailsWith<SemaphoreClosedException> { view.lock() }.message,
        )
        assertFalse(view.isLocked)
        assertEquals(0, mutex.queueLength())
    }

    @Test
    @Suppress("DEPRECATION")
    fun `onLock is not supported and says so`() {
        val view = HandoffMutex().asKotlinxMutex()
        val e = assertFailsWith<UnsupportedOperationException> { view.onLock }
        assertTrue(e.message!!.contains("onLock"), e.message)
        assertFalse(view.isLocked)
    }
}
