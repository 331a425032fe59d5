// SPDX-License-Identifier: Apache-2.0
package dev.handoff.samples

import dev.handoff.Semaphore
import dev.handoff.coroutines.asKotlinxSemaphore
import java.util.concurrent.atomic.AtomicInteger
import kotlinx.coroutines.Dispatchers
import kotlinx.coroutines.delay
import kotlinx.coroutines.launch
import kotlinx.coroutines.runBlocking
import kotlinx.coroutines.sync.withPermit
import kotlinx.coroutines.yield

/**
 * Sample 19: moving kotlinx code to handoff in one line. The crawler below was written against
 * `kotlinx.coroutines.sync.Semaphore`; only the line that makes the semaphore changes. The code
 * keeps kotlinx's own `withPermit`, and gains what a `dev.handoff.Semaphore` has: a queue length to
 * watch, strict FIFO, and `close()` for shutdown.
 */
public object KotlinxMigrationSample {

    /** Connections at most. */
    public const val CONNECTIONS: Int = 8

    /**
     * What the run proves.
     *
     * @property fetches the pages fetched
     * @property peakConcurrent the most fetches at once: [CONNECTIONS]
     * @property peakQueued the most coroutines seen waiting in the handoff queue
     * @property availableAfter the free permits at the end: [CONNECTIONS]
     */
    public data class Figures(
        val fetches: Int,
        val peakConcurrent: Int,
        val peakQueued: Int,
        val availableAfter: Long,
    )

    /** Fetches 100 pages with at most [CONNECTIONS] at once. */
    public fun run(): Figures =
        runBlocking(Dispatchers.Default) {
            val pool = Semaphore(CONNECTIONS.toLong()) // dev.handoff.Semaphore
            val connections = pool.asKotlinxSemaphore() // was: kotlinx.coroutines.sync.Semaphore(8)
            val running = AtomicInteger()
            val peak = AtomicInteger()
            var peakQueued = 0
            val crawl = launch {
                repeat(100) { page ->
                    launch {
                        connections.withPermit { // kotlinx's own withPermit, unchanged
                            peak.accumulateAndGet(running.incrementAndGet(), ::maxOf)
                            delay(1L + page % 3)
                            running.decrementAndGet()
                        }
                    }
                }
            }
            while (crawl.isActive) {
                peakQueued =
                    maxOf(peakQueued, pool.queueLength()) // visible only on the handoff side
                yield()
            }
            Figures(100, peak.get(), peakQueued, pool.availablePermits())
        }

    /** Runs the sample and prints what it shows. */
    @JvmStatic
    public fun main(args: Array<String>) {
        println("19. Migrating from kotlinx.coroutines.sync.Semaphore")
        val f = run()
        println(
            "   ${f.fetches} fetches, at most ${f.peakConcurrent} at once (limit $CONNECTIONS), " +
                "up to ${f.peakQueued} waiting in FIFO order; free at the end: ${f.availableAfter}"
        )
    }
}
