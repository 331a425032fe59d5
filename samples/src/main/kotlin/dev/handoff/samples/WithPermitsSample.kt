// SPDX-License-Identifier: Apache-2.0
package dev.handoff.samples

import dev.handoff.Semaphore
import dev.handoff.coroutines.withPermits
import kotlin.random.Random
import kotlinx.coroutines.coroutineScope
import kotlinx.coroutines.delay
import kotlinx.coroutines.flow.Flow
import kotlinx.coroutines.flow.flow
import kotlinx.coroutines.launch
import kotlinx.coroutines.runBlocking

/**
 * Sample 7: Kotlin `withPermits` over a [Flow] of weighted jobs.
 *
 * An import writes batches of 50 to 500 rows to a database that takes at most [ROW_BUDGET] rows at
 * once, so a batch takes one permit per row. Every batch runs in its own coroutine, which suspends
 * in FIFO order until its rows fit, and gives them back when its `withPermits` block ends. It
 * prints the batches written, the most rows written at once (never above the budget) and the
 * permits back.
 */
public object WithPermitsSample {

    /** Rows in flight at most. */
    public const val ROW_BUDGET: Long = 1_000

    /**
     * What the run measured.
     *
     * @property batches the batches emitted by the flow
     * @property written the batches written
     * @property peakRowsInFlight the most rows written at once, at most [ROW_BUDGET]
     * @property availableAfter the free permits at the end: [ROW_BUDGET]
     */
    public data class Figures(
        val batches: Int,
        val written: Int,
        val peakRowsInFlight: Long,
        val availableAfter: Long,
    )

    /**
     * The import: 40 batches of 50 to 500 rows (the same on every run), each batch its number of
     * rows.
     */
    internal fun batches(): Flow<Long> = flow {
        val random = Random(7)
        repeat(40) { emit(random.nextLong(50, 501)) }
    }

    /** Runs the import and returns the figures. */
    @JvmStatic
    public fun run(): Figures = runBlocking {
        val rowsInFlight = Semaphore(ROW_BUDGET)
        // Every coroutine below runs on runBlocking's single thread: plain counters are enough.
        var batches = 0
        var written = 0
        var rowsWriting = 0L
        var peakRowsWriting = 0L
        coroutineScope {
            batches().collect { rows ->
                batches++
                launch {
                    rowsInFlight.withPermits(rows) { // suspends, in FIFO order, until the rows fit
                        rowsWriting += rows
                        peakRowsWriting = maxOf(peakRowsWriting, rowsWriting)
                        delay(rows / 10) // the write: 1 ms per 10 rows
                        rowsWriting -= rows // counted out before the rows go back
                    } // released here, also on exception or cancellation
                    written++
                }
            }
        }
        Figures(batches, written, peakRowsWriting, rowsInFlight.availablePermits())
    }

    /** Runs the sample and prints its figures. */
    @JvmStatic
    public fun main(args: Array<String>) {
        val f = run()
        println("7. Kotlin withPermits: a Flow of weighted batches, one permit per row")
        println(
            "   ${f.batches} batches of 50..500 rows, at most $ROW_BUDGET rows in flight: ${f.written} written"
        )
        println(
            "   peak rows in flight: ${f.peakRowsInFlight} of $ROW_BUDGET; permits back at the end: ${f.availableAfter}"
        )
    }
}
