// SPDX-License-Identifier: Apache-2.0
package dev.handoff.coroutines

import dev.handoff.Semaphore
import kotlin.test.assertEquals
import kotlin.test.assertFalse
import kotlin.test.assertTrue
import kotlin.test.fail
import kotlinx.coroutines.CancellationException
import kotlinx.coroutines.runBlocking
import kotlinx.coroutines.withTimeoutOrNull
import org.junit.jupiter.api.Assumptions.assumeTrue
import org.junit.jupiter.api.Test

/**
 * On a kotlinx-coroutines older than the oldest supported release, the first suspending acquire
 * must fail at once with an exception that says so, instead of hanging or failing later with a
 * NoSuchMethodError from deep inside a release.
 *
 * Runs only in kotlin-ext's `kotlinx-unsupported` surefire execution, which puts
 * kotlinx-coroutines-core `kotlinx.coroutines.unsupported.version` (1.8.1) on the classpath in
 * place of the pom's version and sets the system property `handoff.unsupportedKotlinx` to it. The
 * other executions exclude this class; run elsewhere (say through `-Dtest=`), it is skipped.
 *
 * Compiled against kotlinx `kotlinx.coroutines.oldest.version` (as all of kotlin-ext) but run on an
 * older release: only kotlinx API that links against that release may be called here. `runBlocking`
 * and `withTimeoutOrNull` (public since 1.0) do, when compiled against 1.9.0; compiled against 1.10
 * or later, `runBlocking` would call `runBlockingK$default`, which 1.9.0 and older lack.
 */
class UnsupportedKotlinxTest {

    private object Granted

    private object TimedOut

    @Test
    fun `the first suspending acquire refuses a too old kotlinx-coroutines instead of hanging`() {
        val unsupported = System.getProperty("handoff.unsupportedKotlinx")
        assumeTrue(unsupported != null) {
            "runs only in kotlin-ext's kotlinx-unsupported execution (-Dhandoff.checkUnsupportedKotlinx=true)"
        }
        val oldest = System.getProperty("handoff.oldestKotlinx") ?: "1.9.0"

        // The execution really swapped the jar: the version, and the API the adapter needs is
        // absent.
        assertEquals(
            unsupported,
            KotlinxOnClasspath.coreVersion(),
            "kotlinx-coroutines-core on the test classpath",
        )
        assertFalse(
            KotlinxOnClasspath.hasResumeWithContext(),
            "kotlinx $unsupported already has the 3-argument CancellableContinuation.resume: it does not test anything",
        )

        val semaphore = Semaphore(1)
        assertTrue(semaphore.tryAcquire(1)) // the only permit is taken, so acquire(1) must suspend

        val outcome: Any = runBlocking {
            withTimeoutOrNull(TIMEOUT_MILLIS) {
                try {
                    semaphore.acquire(1)
                    Granted
                } catch (e: CancellationException) {
                    throw e // the timeout: let withTimeoutOrNull turn it into null
                } catch (e: Throwable) {
                    e
                }
            } ?: TimedOut
        }

        when (outcome) {
            TimedOut ->
                fail(
                    "acquire(1) on kotlinx-coroutines $unsupported still waited after $TIMEOUT_MILLIS ms: " +
                        "it must fail at once, saying that kotlinx-coroutines $oldest or newer is needed"
                )
            Granted ->
                fail(
                    "acquire(1) on kotlinx-coroutines $unsupported was granted a permit nobody released"
                )
            is Throwable -> {
                val message = outcome.message.orEmpty()
                if ("kotlinx-coroutines" !in message || oldest !in message) {
                    throw AssertionError(
                        "acquire(1) on kotlinx-coroutines $unsupported failed, but its message does not say " +
                            "that kotlinx-coroutines $oldest or newer is needed: $outcome",
                        outcome,
                    )
                }
            }
            else -> fail("unexpected outcome $outcome")
        }

        // The refused acquire left nothing behind: no waiter queued, no permit lost or created.
        assertEquals(0, semaphore.queueLength(), "queue length of $semaphore")
        semaphore.release(1)
        assertEquals(
            semaphore.capacity(),
            semaphore.availablePermits(),
            "free permits of $semaphore",
        )
    }

    private companion object {
        const val TIMEOUT_MILLIS = 10_000L
    }
}
