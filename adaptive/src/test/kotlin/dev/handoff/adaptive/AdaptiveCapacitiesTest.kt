// SPDX-License-Identifier: Apache-2.0
package dev.handoff.adaptive

import dev.handoff.Semaphore
import dev.handoff.SemaphoreRejectedException
import java.io.IOException
import java.util.concurrent.atomic.AtomicLong
import kotlin.time.Duration.Companion.milliseconds
import kotlinx.coroutines.CancellationException
import kotlinx.coroutines.TimeoutCancellationException
import kotlinx.coroutines.awaitCancellation
import kotlinx.coroutines.launch
import kotlinx.coroutines.runBlocking
import kotlinx.coroutines.withTimeout
import kotlinx.coroutines.yield
import org.junit.jupiter.api.Assertions.assertEquals
import org.junit.jupiter.api.Assertions.assertTrue
import org.junit.jupiter.api.Test
import org.junit.jupiter.api.assertThrows

/** The suspend face: timing, classification, cancellation, rejection, bad input. */
class AdaptiveCapacitiesTest {
    private val now = AtomicLong(5_000_000)

    private fun recorded(
        semaphore: Semaphore,
        start: Int = 10,
    ): Pair<AdaptiveCapacity, AdaptiveCapacityTest.RecordingLimit> {
        val limit = AdaptiveCapacityTest.RecordingLimit(start)
        val adaptive =
            AdaptiveCapacity.builder(semaphore)
                .minCapacity(2)
                .maxCapacity(50)
                .limit(limit)
                .nanoClock { now.get() }
                .build()
        return adaptive to limit
    }

    @Test
    fun withPermitsTimesAndClassifies(): Unit = runBlocking {
        val (adaptive, limit) = recorded(Semaphore(10))
        assertEquals(
            "ok",
            adaptive.withPermits(1) {
                now.addAndGet(7_000_000)
                "ok"
            },
        )
        assertThrows<TimeoutCancellationException> {
            runBlocking {
                withTimeout(1.milliseconds) {
                    adaptive.withPermits(2) {
                        now.addAndGet(3_000_000)
                        awaitCancellation()
                    }
                }
            }
        }
        assertThrows<IOException> {
            runBlocking { adaptive.withPermits(1) { throw IOException("refused") } }
        }
        assertEquals(
            listOf("start=5 rtt=7 inflight=1", "start=12 rtt=3 inflight=2 dropped"),
            limit.samples,
        )
        assertEquals(0L, adaptive.inFlight())
        assertEquals(10L, adaptive.semaphore().availablePermits())
    }

    @Test
    fun withPermitsFollowsTheBuildersClassifier(): Unit = runBlocking {
        val adaptive =
            AdaptiveCapacity.builder(Semaphore(10))
                .window(java.time.Duration.ofHours(1))
                .nanoClock { now.get() }
                .classifier { e ->
                    if (e is IllegalStateException) Outcome.DROPPED else Outcome.of(e)
                }
                .build()
        assertThrows<IllegalStateException> {
            runBlocking { adaptive.withPermits(1) { throw IllegalStateException("503") } }
        }
        assertThrows<java.net.SocketTimeoutException> {
            runBlocking { adaptive.withPermits(1) { throw java.net.SocketTimeoutException() } }
        }
        assertThrows<IOException> {
            runBlocking { adaptive.withPermits(1) { throw IOException("refused") } }
        }
        val sums = (adaptive.controller() as BaselineGradient).sums()
        assertEquals(
            listOf(0L, 2L, 0L, 1L),
            sums.toList(),
            "successes, drops, rejections, failures",
        )
        assertEquals(10L, adaptive.semaphore().availablePermits())
    }

    @Test
    fun aCancelledWaitHoldsNothingAndIsNotSampled(): Unit = runBlocking {
        val (adaptive, limit) = recorded(Semaphore(2), start = 2)
        val all = adaptive.acquire(2)
        val waiter = launch { adaptive.withPermits(1) { error("never runs") } }
        yield()
        assertEquals(1, adaptive.semaphore().queueLength())
        waiter.cancel()
        waiter.join()
        assertEquals(0, adaptive.semaphore().queueLength())
        all.close()
        assertEquals(2L, adaptive.semaphore().availablePermits())
        assertEquals(0L, adaptive.inFlight())
        assertEquals(listOf("start=5 rtt=0 inflight=2"), limit.samples)
        assertTrue(waiter.isCancelled)
    }

    @Test
    fun aRejectionIsRecordedAndThrown(): Unit = runBlocking {
        val semaphore = Semaphore.builder(2).maxQueueLength(0).build()
        val adaptive =
            AdaptiveCapacity.builder(semaphore).minCapacity(2).nanoClock { now.get() }.build()
        val held = adaptive.acquire(2)
        assertThrows<SemaphoreRejectedException> {
            runBlocking { adaptive.withPermits(1) { error("never runs") } }
        }
        assertEquals(1L, (adaptive.controller() as BaselineGradient).sums()[2])
        held.close()
        assertEquals(0L, adaptive.inFlight())
    }

    @Test
    fun badInputHoldsNothing(): Unit = runBlocking {
        val (adaptive, _) = recorded(Semaphore(10))
        val e =
            assertThrows<IllegalArgumentException> {
                runBlocking { adaptive.withPermits(11) { error("never runs") } }
            }
        assertEquals(
            "acquire(11): the number of permits must be between 0 and the present capacity (10)",
            e.message,
        )
        assertThrows<IllegalArgumentException> { runBlocking { adaptive.acquire(-1) } }
        assertEquals(10L, adaptive.semaphore().availablePermits())
    }

    @Test
    fun aCancellationInsideTheActionIsAFailureNotADrop(): Unit = runBlocking {
        val (adaptive, limit) = recorded(Semaphore(10))
        assertThrows<CancellationException> {
            runBlocking { adaptive.withPermits(1) { throw CancellationException("stop") } }
        }
        assertEquals(emptyList<String>(), limit.samples)
        assertEquals(0L, adaptive.inFlight())
    }
}
