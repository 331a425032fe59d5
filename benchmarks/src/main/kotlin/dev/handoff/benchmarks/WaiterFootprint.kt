// SPDX-License-Identifier: Apache-2.0
package dev.handoff.benchmarks

import java.lang.management.ManagementFactory
import kotlin.system.exitProcess
import kotlinx.coroutines.CoroutineStart
import kotlinx.coroutines.Job
import kotlinx.coroutines.awaitCancellation
import kotlinx.coroutines.launch
import kotlinx.coroutines.runBlocking

/**
 * Workload 6: the heap a suspended waiter keeps alive. Suspends `waiters` coroutines on a semaphore
 * whose permits are all held, forces full collections, and divides the growth of the live heap by
 * the number of waiters. The same is done with the coroutines parked in `awaitCancellation()`
 * instead (the baseline: what any suspended coroutine costs), so the semaphore's own share is the
 * difference. Run it in a fresh JVM with a stop-the-world collector (`-XX:+UseParallelGC`), where
 * the heap after `System.gc()` is exactly the live data; [main] does that measurement.
 *
 * ```
 * java -XX:+UseParallelGC -Xmx2g -cp benchmarks.jar dev.handoff.benchmarks.WaiterFootprint handoff 1000000
 * ```
 */
public object WaiterFootprint {
    /** The [baseline] pseudo-peer: coroutines suspended on nothing but `awaitCancellation()`. */
    public const val BASELINE: String = "baseline"

    /**
     * Suspends [waiters] coroutines in `acquire(1)` of [peer] (or in `awaitCancellation()` for
     * [BASELINE]), measures the live heap, then lets them all finish.
     *
     * @return the live bytes per suspended coroutine, the coroutine itself included.
     * @throws IllegalArgumentException if [peer] cannot suspend or [waiters] is not positive.
     */
    @JvmStatic
    public fun bytesPerWaiter(peer: String, waiters: Int): Double {
        require(waiters > 0) { "bytesPerWaiter(waiters=$waiters): must be positive" }
        val permits = if (peer == BASELINE) null else Peers.suspending(peer, waiters.toLong())
        if (permits != null) {
            // All permits held, so every acquire below must wait.
            repeat(waiters) {
                check(permits.tryAcquire(1)) { "$peer: permit ${it + 1} of $waiters not free" }
            }
        }
        var perWaiter = 0.0
        runBlocking {
            val jobs = arrayOfNulls<Job>(waiters)
            val before = liveHeap()
            for (i in 0 until waiters) {
                // UNDISPATCHED: the coroutine runs on this thread at once, up to its suspension.
                jobs[i] =
                    launch(start = CoroutineStart.UNDISPATCHED) {
                        if (permits == null) awaitCancellation() else permits.acquire(1)
                    }
            }
            val after = liveHeap()
            perWaiter = (after - before).toDouble() / waiters
            check(jobs.all { it!!.isActive }) { "$peer: a waiter did not wait" }
            if (permits == null) {
                jobs.forEach { it!!.cancel() }
            } else {
                repeat(waiters) { permits.release(1) }
            }
            jobs.forEach { it!!.join() }
        }
        return perWaiter
    }

    private fun liveHeap(): Long {
        val memory = ManagementFactory.getMemoryMXBean()
        var used = Long.MAX_VALUE
        // Several collections until the figure settles (finalizers and soft references aside).
        repeat(4) {
            System.gc()
            used = minOf(used, memory.heapMemoryUsage.used)
        }
        return used
    }

    /**
     * `WaiterFootprint <peer> <waiters>`: prints one line, `footprint <peer> <waiters> <bytes>`.
     * Exits with status 2 on bad arguments.
     */
    @JvmStatic
    public fun main(args: Array<String>) {
        if (args.size != 2) {
            System.err.println("usage: WaiterFootprint <${BASELINE}|peer> <waiters>")
            exitProcess(2)
        }
        val bytes = bytesPerWaiter(args[0], args[1].toInt())
        println("footprint ${args[0]} ${args[1]} $bytes")
    }
}
