// SPDX-License-Identifier: Apache-2.0
package dev.handoff.adaptive

import dev.handoff.FairShareSemaphore
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

/**
 * The suspend faces of [AdaptiveFairShare]: per key, timed and classified, cancellation, rejection,
 * bad input.
 */
class AdaptiveFairSharesTest {
    private val now = AtomicLong(5_000_000)

    private fun recorded(
        fair: FairShareSemaphore<String>,
        start: Int = 10,
    ): Pair<AdaptiveFairShare<String>, AdaptiveCapacityTest.RecordingLimit> {
        val limit = AdaptiveCapacityTest.RecordingLimit(start)
        val adaptive =
            AdaptiveFairShare.builder(fair)
                .minCapacity(2)
                .maxCapacity(50)
                .limit(limit)
                .nanoClock { now.get() }
                .build()
        return adaptive to limit
    }

    @Test
    fun withPermitsTimesClassifiesAndReleasesToTheKey(): Unit = runBlocking {
        val fair = FairShareSemaphore.builder<String>(10).build()
        val (adaptive, limit) = recorded(fair)
        assertEquals(
            "ok",
            adaptive.withPermits("a", 2) {
                assertEquals(2L, fair.heldPermits("a"))
                assertEquals(0L, fair.heldPermits("b"))
                now.addAndGet(7_000_000)
                "ok"
            },
        )
        assertThrows<TimeoutCancellationException> {
            runBlocking {
                withTimeout(1.milliseconds) {
                    adaptive.withPermits("b", 1) {
                        now.addAndGet(3_000_000)
                        awaitCancellation()
                    }
                }
            }
        }
        assertThrows<IOException> {
            runBlocking { adaptive.withPermits("a", 1) { throw IOException("refused") } }
        }
        assertThrows<CancellationException> {
            runBlocking { adaptive.withPermits("a", 1) { throw CancellationException("stop") } }
        }
        assertEquals(
            listOf("start=5 rtt=7 inflight=2", "start=12 rtt=3 inflight=1 dropped"),
            limit.samples,
        )
        assertEquals(0L, fair.heldPermits("a"))
        assertEquals(0L, fair.heldPermits("b"))
        assertEquals(0L, adaptive.inFlight())
        assertEquals(10L, fair.availablePermits())
    }

    @Test
    fun theHandleReleasesToItsKey(): Unit = runBlocking {
        val fair = FairShareSemaphore.builder<String>(10).build()
        val (adaptive, limit) = recorded(fair)
        val permits = adaptive.acquire("c", 2)
        assertEquals(2L, fair.heldPermits("c"))
        now.addAndGet(4_000_000)
        permits.markDropped()
        permits.close()
        assertEquals(0L, fair.heldPermits("c"))
        assertEquals(listOf("start=5 rtt=4 inflight=2 dropped"), limit.samples)
    }

    @Test
    fun aCancelledWaitHoldsNothingAndIsNotSampled(): Unit = runBlocking {
        val fair = FairShareSemaphore.builder<String>(2).build()
        val (adaptive, limit) = recorded(fair, start = 2)
        val all = adaptive.acquire("a", 2)
        val waiter = launch { adaptive.withPermits("b", 1) { error("never runs") } }
        yield()
        assertEquals(1, fair.queueLength("b"))
        waiter.cancel()
        waiter.join()
        assertEquals(0, fair.queueLength())
        all.close()
        assertEquals(2L, fair.availablePermits())
        assertEquals(0L, fair.heldPermits("b"))
        assertEquals(0L, adaptive.inFlight())
        assertEquals(listOf("start=5 rtt=0 inflight=2"), limit.samples)
        assertTrue(waiter.isCancelled)
    }

    @Test
    fun aRejectionIsRecordedAndThrown(): Unit = runBlocking {
        val fair = FairShareSemaphore.builder<String>(2).maxQueueLength(0).build()
        val adaptive =
            AdaptiveFairShare.builder(fair).minCapacity(2).nanoClock { now.get() }.build()
        val held = adaptive.acquire("a", 2)
        assertThrows<SemaphoreRejectedException> {
            runBlocking { adaptive.withPermits("b", 1) { error("never runs") } }
        }
        assertEquals(1L, (adaptive.controller() as BaselineGradient).sums()[2])
        held.close()
        assertEquals(0L, adaptive.inFlight())
        assertEquals(0L, fair.heldPermits("a"))
    }

    @Test
    fun badInputNamesTheCallTheValueAndTheLimitAndHoldsNothing(): Unit = runBlocking {
        val fair = FairShareSemaphore.builder<String>(10).maxPermitsPerKey(1).build()
        val (adaptive, _) = recorded(fair)
        val tooMany =
            assertThrows<IllegalArgumentException> {
                runBlocking { adaptive.withPermits("a", 11) { error("never runs") } }
            }
        assertEquals(
            "acquire(a, 11): the number of permits must be between 0 and the present capacity (10)",
            tooMany.message,
        )
        val overCap =
            assertThrows<IllegalArgumentException> { runBlocking { adaptive.acquire("a", 2) } }
        assertEquals(
            "acquire(a, 2): exceeds maxPermitsPerKey (1) of the fair share, so it could never be granted",
            overCap.message,
        )
        assertThrows<IllegalArgumentException> { runBlocking { adaptive.acquire("a", -1) } }
        assertEquals(10L, fair.availablePermits())
        assertEquals(0, fair.queueLength())
        assertEquals(0L, adaptive.inFlight())
    }
}
