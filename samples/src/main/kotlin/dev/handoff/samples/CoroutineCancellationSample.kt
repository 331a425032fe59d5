// SPDX-License-Identifier: Apache-2.0
package dev.handoff.samples

import dev.handoff.Semaphore
import dev.handoff.coroutines.withPermits
import kotlinx.coroutines.CancellationException
import kotlinx.coroutines.TimeoutCancellationException
import kotlinx.coroutines.coroutineScope
import kotlinx.coroutines.delay
import kotlinx.coroutines.launch
import kotlinx.coroutines.runBlocking
import kotlinx.coroutines.withTimeout

/**
 * Sample 8: cancelled coroutines hold nothing: the import of [WithPermitsSample], cancelled
 * half-way by [withTimeout].
 *
 * The whole import gets [TIMEOUT_MILLIS] ms, about half what it needs. When the timeout cancels it,
 * the batches that were writing give their rows back as their `withPermits` block ends, and the
 * batches still waiting leave the queue holding nothing. It prints the batches written, cancelled
 * while writing and cancelled while waiting, and the permits and waiters left (all back, none).
 */
public object CoroutineCancellationSample {

    /** The import's deadline: about half-way, since writing every batch takes at least 559 ms. */
    public const val TIMEOUT_MILLIS: Long = 250

    /**
     * What the run measured: [timedOut] if `withTimeout` cancelled it; the permits free and the
     * waiters left.
     */
    public data class Figures(
        val batches: Int,
        val written: Int,
        val cancelledWhileWriting: Int,
        val cancelledWhileWaiting: Int,
        val timedOut: Boolean,
        val availableAfter: Long,
        val queueAfter: Int,
    )

    /** Runs the import under its timeout and returns the figures. */
    @JvmStatic
    public fun run(): Figures = runBlocking {
        val rowsInFlight = Semaphore(WithPermitsSample.ROW_BUDGET)
        var batches = 0 // on runBlocking's single thread, as below
        var written = 0
        var cancelledWhileWriting = 0
        var cancelledWhileWaiting = 0
        val timedOut =
            try {
                withTimeout(TIMEOUT_MILLIS) {
                    coroutineScope {
                        WithPermitsSample.batches().collect { rows ->
                            batches++
                            launch {
                                var writing = false
                                try {
                                    rowsInFlight.withPermits(rows) {
                                        writing = true
                                        delay(rows / 10) // the write: 1 ms per 10 rows
                                    }
                                    written++
                                } catch (e: CancellationException) {
                                    if (writing) cancelledWhileWriting++
                                    else cancelledWhileWaiting++
                                    throw e
                                }
                            }
                        }
                    }
                }
                false
            } catch (e: TimeoutCancellationException) {
                true
            }
        Figures(
            batches,
            written,
            cancelledWhileWriting,
            cancelledWhileWaiting,
            timedOut,
            rowsInFlight.availablePermits(),
            rowsInFlight.queueLength(),
        )
    }

    /** Runs the sample and prints its figures. */
    @JvmStatic
    public fun main(args: Array<String>) {
        val f = run()
        println(
            "8. Kotlin cancellation: the import of sample 7 cancelled half-way by withTimeout($TIMEOUT_MILLIS)"
        )
        println(
            "   timed out: ${f.timedOut}; written: ${f.written} of ${f.batches}, cancelled while writing: " +
                "${f.cancelledWhileWriting}, cancelled while waiting: ${f.cancelledWhileWaiting}"
        )
        println(
            "   permits back: ${f.availableAfter} of ${WithPermitsSample.ROW_BUDGET}, waiters left: ${f.queueAfter}"
        )
    }
}
