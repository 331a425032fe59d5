// SPDX-License-Identifier: Apache-2.0
@file:Suppress("unused") // operations are called by Lincheck through reflection

package dev.handoff

import java.util.concurrent.locks.ReentrantLock
import kotlin.concurrent.withLock
import kotlin.coroutines.resume
import kotlinx.coroutines.CancellableContinuation
import kotlinx.coroutines.suspendCancellableCoroutine
import org.jetbrains.lincheck.LincheckAssertionError
import org.jetbrains.lincheck.datastructures.IntGen
import org.jetbrains.lincheck.datastructures.Operation
import org.jetbrains.lincheck.datastructures.Options
import org.jetbrains.lincheck.datastructures.Param
import org.jetbrains.lincheck.datastructures.scenario
import org.junit.jupiter.api.Assertions.assertTrue
import org.junit.jupiter.api.Test
import org.junit.jupiter.api.assertThrows

/**
 * Proof that the Lincheck tests of this module can fail: the same configurations, run against
 * deliberately broken variants, must be reported as non-linearizable. If Lincheck silently checked
 * nothing (as the 2.x artifact does on JDK 25), these tests would fail.
 *
 * The broken classes are not named `*Test`, so Surefire does not run their inherited tests.
 */
class BrokenVariantsTest {

    /** The real core behind a suspending adapter that forgets to withdraw a cancelled wait. */
    @Test
    fun forgetfulCancellationIsCaughtByTheModelChecker() {
        val failure =
            assertThrows<LincheckAssertionError> {
                SemaphoreWithForgetfulCancellation()
                    .modelCheckingOptions(quick = false)
                    .minimizeFailedScenario(false)
                    .check(SemaphoreWithForgetfulCancellation::class)
            }
        assertInvalidResults(failure)
    }

    /** A tiny independent semaphore whose tryAcquire barges past the queue. */
    @Test
    fun bargingTryAcquireIsCaughtByTheModelChecker() {
        val failure =
            assertThrows<LincheckAssertionError> {
                BargingSemaphore2()
                    .modelCheckingOptions(quick = false)
                    .minimizeFailedScenario(false)
                    .check(BargingSemaphore2::class)
            }
        assertInvalidResults(failure)
    }

    /** The same barging semaphore, on real threads. */
    @Test
    fun bargingTryAcquireIsCaughtByTheStressMode() {
        val failure =
            assertThrows<LincheckAssertionError> {
                BargingSemaphore2()
                    .stressOptions(quick = false)
                    .minimizeFailedScenario(false)
                    .check(BargingSemaphore2::class)
            }
        assertInvalidResults(failure)
    }

    private fun assertInvalidResults(failure: LincheckAssertionError) {
        val report = failure.message.orEmpty()
        assertTrue(
            report.contains("Invalid execution results"),
            "not a linearizability failure:\n$report",
        )
    }
}

/**
 * Broken variant 1: the configuration of [Semaphore2LincheckTest] (random and custom scenarios)
 * with a suspending acquire that never withdraws its `Acquisition` when the coroutine is cancelled.
 * The cancelled wait stays in the queue (blocking everyone behind it) and the permits later handed
 * to it are lost.
 */
class SemaphoreWithForgetfulCancellation : Semaphore2LincheckTest() {
    override suspend fun acquirePermits(n: Long) {
        if (semaphore.tryAcquire(n)) return
        suspendCancellableCoroutine { continuation ->
            semaphore.acquireThen(n, Waker { continuation.resume(Unit) })
            // Missing: continuation.invokeOnCancellation { acquisition.cancel() }
        }
    }
}

/**
 * Broken variant 2: a weighted FIFO semaphore of its own, correct except that [tryAcquire] barges:
 * it takes free permits even while others wait. (It has no partial assignment: a head that does not
 * fit leaves the released permits free, which is where a barging tryAcquire finds them.)
 */
open class BargingSemaphore(private val capacity: Long) : AbstractLincheckTest() {
    private val lock = ReentrantLock()
    private var free = capacity
    private val queue = ArrayDeque<Pair<Long, CancellableContinuation<Unit>>>()

    @Operation
    fun tryAcquire(@Param(gen = IntGen::class, conf = WEIGHTS) n: Int): Boolean =
        lock.withLock {
            if (n > capacity || free < n) return false // BUG: ignores the queue
            free -= n
            true
        }

    @Operation
    suspend fun acquire(@Param(gen = IntGen::class, conf = WEIGHTS) n: Int) {
        require(n <= capacity) { "acquire($n)" }
        lock.lock()
        if (queue.isEmpty() && free >= n) {
            free -= n
            lock.unlock()
            return
        }
        suspendCancellableCoroutine { continuation ->
            queue.addLast(n.toLong() to continuation)
            lock.unlock()
        }
    }

    /** `false` for an over-release (more than is held), changing nothing, as the specification. */
    @Operation
    fun release(@Param(gen = IntGen::class, conf = WEIGHTS) n: Int): Boolean {
        val granted = ArrayList<CancellableContinuation<Unit>>()
        lock.withLock {
            if (n > capacity - free) return false
            free += n
            while (queue.isNotEmpty() && queue.first().first <= free) {
                val (weight, continuation) = queue.removeFirst()
                free -= weight
                granted += continuation
            }
        }
        granted.forEach { it.resume(Unit) }
        return true
    }

    @Operation fun availablePermits(): Long = lock.withLock { if (queue.isEmpty()) free else 0L }

    @Operation fun queueLength(): Int = lock.withLock { queue.size }

    override fun <O : Options<O, *>> O.customize(): O =
        sequentialSpecification(SequentialWeightedSemaphore2::class.java)
            .actorsAfter(0) // Lincheck runs no post part after suspending operations
            .actorsPerThread(3)
            .addCustomScenario(
                scenario {
                    initial { actor(BargingSemaphore::tryAcquire, 2) }
                    parallel {
                        thread { actor(BargingSemaphore::acquire, 2) }
                        thread {
                            actor(
                                BargingSemaphore::queueLength
                            ) // 1: the acquire waits, so tryAcquire must fail
                            actor(BargingSemaphore::release, 1)
                            actor(BargingSemaphore::tryAcquire, 1)
                        }
                    }
                }
            )
}

class BargingSemaphore2 : BargingSemaphore(2)
