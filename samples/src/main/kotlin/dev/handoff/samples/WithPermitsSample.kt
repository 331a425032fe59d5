// SPDX-License-Identifier: Apache-2.0
package dev.handoff.samples

import dev.handoff.Semaphore
import dev.handoff.coroutines.withPermits
import kotlin.random.Random
import kotlinx.coroutines.CancellationException
import kotlinx.coroutines.TimeoutCancellationException
import kotlinx.coroutines.coroutineScope
import kotlinx.coroutines.delay
import kotlinx.coroutines.flow.Flow
import kotlinx.coroutines.flow.flow
import kotlinx.coroutines.launch
import kotlinx.coroutines.runBlocking
import kotlinx.coroutines.withTimeout

/**
 * Sample 4: Kotlin `withPermits` over a [Flow] of weighted jobs, cancelled half-way by [withTimeout].
 *
 * An import writes batches of rows to a database that takes at most [ROW_BUDGET] rows at once, so a
 * batch takes one permit per row. Every batch runs in its own coroutine; the whole import gets
 * [TIMEOUT_MILLIS] ms. When the timeout cancels it, batches that were writing give their rows back
 * in `withPermits`'s `finally`, and batches still waiting leave the queue holding nothing: at the
 * end, every permit is back.
 */
public object WithPermitsSample {

    /** Rows in flight at most. */
    public const val ROW_BUDGET: Long = 1_000

    /** The import's deadline: about half-way, since writing every batch takes at least 559 ms. */
    public const val TIMEOUT_MILLIS: Long = 250

    private const val BATCHES = 40

    /**
     * What the run proves.
     *
     * @property batches the batches emitted by the flow
     * @property completed the batches written before the timeout
     * @property cancelledWhileWriting the batches cancelled while holding their rows' permits
     * @property cancelledWhileWaiting the batches cancelled while waiting for permits
     * @property timedOut whether `withTimeout` cancelled the import
     * @property rowBudget the capacity
     * @property peakRowsInFlight the most rows written at once, at most [rowBudget]
     * @property availableAfter the free permits at the end, equal to [rowBudget]
     * @property queueAfter the waiters at the end, 0
     */
    public data class Figures(
        val batches: Int,
        val completed: Int,
        val cancelledWhileWriting: Int,
        val cancelledWhileWaiting: Int,
        val timedOut: Boolean,
        val rowBudget: Long,
        val peakRowsInFlight: Long,
        val availableAfter: Long,
        val queueAfter: Int,
    )

    private class Batch(val rows: Long)

    /** 40 batches of 50 to 500 rows. */
    private fun batches(): Flow<Batch> = flow {
        val random = Random(7)
        repeat(BATCHES) { emit(Batch(rows = random.nextLong(50, 501))) }
    }

    /** Runs the import and returns the figures. */
    @JvmStatic
    public fun run(): Figures = runBlocking {
        val rowsInFlight = Semaphore(ROW_BUDGET)
        // Every coroutine below runs on runBlocking's single thread: plain counters are enough.
        var batches = 0
        var completed = 0
        var cancelledWhileWriting = 0
        var cancelledWhileWaiting = 0
        var rowsWriting = 0L
        var peakRowsWriting = 0L

        val timedOut = try {
            withTimeout(TIMEOUT_MILLIS) {
                coroutineScope {
                    batches().collect { batch ->
                        batches++
                        launch {
                            var writing = false
                            try {
                                rowsInFlight.withPermits(batch.rows) {
                                    writing = true
                                    rowsWriting += batch.rows
                                    peakRowsWriting = maxOf(peakRowsWriting, rowsWriting)
                                    try {
                                        delay(batch.rows / 10)     // the write: 1 ms per 10 rows
                                    } finally {
                                        rowsWriting -= batch.rows
                                    }
                                }
                                completed++
                            } catch (e: CancellationException) {
                                if (writing) cancelledWhileWriting++ else cancelledWhileWaiting++
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
            batches, completed, cancelledWhileWriting, cancelledWhileWaiting, timedOut,
            ROW_BUDGET, peakRowsWriting, rowsInFlight.availablePermits(), rowsInFlight.queueLength(),
        )
    }

    /** Runs the sample and prints its figures. */
    @JvmStatic
    public fun main(args: Array<String>) {
        val f = run()
        println("4. Kotlin withPermits: a Flow of weighted batches, cancelled half-way by withTimeout")
        println("   ${f.batches} batches of 50..500 rows, at most ${f.rowBudget} rows in flight, $TIMEOUT_MILLIS ms timeout")
        println("   timed out: ${f.timedOut}; written: ${f.completed}, cancelled while writing: " +
            "${f.cancelledWhileWriting}, cancelled while waiting: ${f.cancelledWhileWaiting}")
        println("   peak rows in flight: ${f.peakRowsInFlight} of ${f.rowBudget}")
        println("   permits back after the cancellation: ${f.availableAfter} of ${f.rowBudget}, waiters left: ${f.queueAfter}")
    }
}
