// SPDX-License-Identifier: Apache-2.0
package dev.handoff.coroutines

import dev.handoff.FairShareSemaphore
import dev.handoff.SemaphoreClosedException
import kotlin.test.assertEquals
import kotlin.test.assertFailsWith
import kotlin.test.assertTrue
import kotlinx.coroutines.CancellationException
import kotlinx.coroutines.Dispatchers
import kotlinx.coroutines.ExperimentalCoroutinesApi
import kotlinx.coroutines.Job
import kotlinx.coroutines.async
import kotlinx.coroutines.joinAll
import kotlinx.coroutines.launch
import kotlinx.coroutines.runBlocking
import kotlinx.coroutines.test.runCurrent
import kotlinx.coroutines.test.runTest
import org.junit.jupiter.api.Test

/**
 * The suspending faces of [FairShareSemaphore]: `acquire(key, n)` and `withPermits(key, n) { }`.
 */
@OptIn(ExperimentalCoroutinesApi::class)
class FairShareSuspendTest {

    private fun FairShareSemaphore<String>.assertIdle() {
        assertEquals(0, queueLength(), "queue length of $this")
        assertEquals(capacity(), availablePermits(), "free permits of $this")
        assertEquals(0, activeKeys(), "keys of $this")
    }

    @Test
    fun `acquire takes free permits at once and withPermits gives them back to the key`(): Unit =
        runTest {
            val fair = FairShareSemaphore.builder<String>(3).build()
            fair.acquire("a", 2)
            assertEquals(2, fair.heldPermits("a"))
            val result = fair.withPermits("b", 1) { fair.heldPermits("b") }
            assertEquals(1, result)
            fair.release("a", 2)
            fair.assertIdle()
        }

    @Test
    fun `a suspended acquire is served in fair order, not behind the noisy backlog`(): Unit =
        runTest {
            val fair = FairShareSemaphore.builder<String>(1).build()
            fair.acquire("noisy")
            val order = mutableListOf<String>()
            val noisy = (1..50).map { launch { fair.withPermits("noisy", 1) { order += "noisy" } } }
            runCurrent()
            val polite = launch { fair.withPermits("polite", 1) { order += "polite" } }
            runCurrent()
            assertEquals(51, fair.queueLength())
            fair.release("noisy", 1)
            (noisy + polite).joinAll()
            assertTrue(
                order.indexOf("polite") <= 1,
                "polite served at ${order.indexOf("polite")}: $order",
            )
            fair.assertIdle()
        }

    @Test
    fun `a cancelled acquire holds nothing and the next key is served`(): Unit = runTest {
        val fair = FairShareSemaphore.builder<String>(2).build()
        fair.acquire("x", 2)
        val heavy = launch { fair.acquire("a", 2) }
        runCurrent()
        val light = async { fair.withPermits("b", 1) { "served" } }
        runCurrent()
        fair.release("x", 1) // partially to a's 2
        heavy.cancel()
        runCurrent()
        assertEquals("served", light.await())
        assertEquals(0, fair.heldPermits("a"))
        fair.release("x", 1)
        fair.assertIdle()
    }

    @Test
    fun `close fails a suspended acquire and bad arguments are refused before anything queues`():
        Unit = runTest {
        val fair = FairShareSemaphore.builder<String>(1).maxPermitsPerKey(1).build()
        fair.acquire("x")
        val waiting = async { runCatching { fair.acquire("a") } }
        runCurrent()
        fair.close()
        assertTrue(waiting.await().exceptionOrNull() is SemaphoreClosedException)
        val tooMany = assertFailsWith<IllegalArgumentException> { fair.acquire("a", 2) }
        assertEquals(
            "acquire(a, 2): exceeds the capacity 1, so it could never be granted",
            tooMany.message,
        )
        assertFailsWith<IllegalArgumentException> {
            fair.withPermits("a", -1) { error("never runs") }
        }
        fair.release("x", 1)
        fair.assertIdle()
    }

    @Test
    fun `a cancellation racing the grant never leaks, on real threads`(): Unit = runBlocking {
        val fair = FairShareSemaphore.builder<String>(2).build()
        repeat(2_000) { round ->
            val jobs =
                (0 until 4).map { i ->
                    launch(Dispatchers.Default) { fair.withPermits("k${i % 3}", 1L + (i % 2)) {} }
                }
            if (round % 2 == 0) jobs[round % 4].cancel()
            jobs.joinAll()
        }
        fair.assertIdle()
    }

    @Test
    fun `ten thousand coroutines handing a permit on through Unconfined keep the stack bounded`():
        Unit = runBlocking {
        val fair = FairShareSemaphore.builder<String>(1).build()
        fair.acquire("start")
        var done = 0
        val jobs =
            (0 until 10_000).map { i ->
                launch(Dispatchers.Unconfined) { fair.withPermits("k${i % 5}", 1) { done++ } }
            }
        fair.release("start", 1)
        jobs.joinAll()
        assertEquals(10_000, done)
        fair.assertIdle()
    }

    @Test
    fun `prompt cancellation after the grant releases the permits`(): Unit = runTest {
        val fair = FairShareSemaphore.builder<String>(1).build()
        fair.acquire("x")
        var job: Job? = null
        job = launch {
            try {
                fair.acquire("a")
            } catch (e: CancellationException) {
                throw e
            }
            error("a cancelled coroutine never returns normally from acquire")
        }
        runCurrent()
        fair.release("x", 1) // grants a; its resumption is dispatched, not run yet
        job.cancel() // before it runs: the grant is given back
        runCurrent()
        fair.assertIdle()
    }

    @Test
    fun `a grant cancelled before its wake-up is held by nobody and goes on in fair order`(): Unit =
        runTest {
            val fair = FairShareSemaphore.builder<String>(2).build()
            fair.acquire("x", 2)
            lateinit var victim: Job
            var heldByVictimMeanwhile = -1L
            // a callback served in the same release, just before the victim: its wake-up runs
            // between the
            // victim's grant and the victim's own wake-up, and cancels the victim there
            fair.acquireThen("callback", 1) {
                heldByVictimMeanwhile = fair.heldPermits("victim")
                victim.cancel()
            }
            victim = launch { fair.acquire("victim", 1) }
            runCurrent()
            val next = async { fair.withPermits("next", 1) { fair.heldPermits("next") } }
            runCurrent()
            assertEquals(3, fair.queueLength())
            fair.release(
                "x",
                2,
            ) // grants the callback and the victim; the victim's grant is undone at once
            assertEquals(0, heldByVictimMeanwhile, "a grant not yet delivered is held by nobody")
            assertTrue(victim.isCancelled)
            assertEquals(0, fair.heldPermits("victim"))
            assertEquals(1, next.await(), "the undone permit went on to the next key")
            fair.release("callback", 1)
            fair.assertIdle()
        }
}
