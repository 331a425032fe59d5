// SPDX-License-Identifier: Apache-2.0
package dev.handoff.benchmarks

import java.util.concurrent.atomic.LongAdder
import kotlin.coroutines.Continuation
import kotlin.coroutines.EmptyCoroutineContext
import kotlin.coroutines.intrinsics.COROUTINE_SUSPENDED
import kotlin.coroutines.intrinsics.suspendCoroutineUninterceptedOrReturn
import kotlinx.coroutines.Dispatchers
import kotlinx.coroutines.async
import kotlinx.coroutines.awaitAll
import kotlinx.coroutines.launch
import kotlinx.coroutines.runBlocking
import kotlinx.coroutines.yield
import org.openjdk.jmh.infra.Blackhole

/**
 * The coroutine workloads: rounds of tasks on [Dispatchers.Default] that acquire, work, yield and
 * release, counting how many acquisitions really suspended.
 *
 * ```
 * val suspended = CoroutineRounds.run(Peers.suspending("kotlinx", 2), tasks = 8,
 *     acquisitionsPerTask = 250, weights = longArrayOf(1), work = 50)
 * ```
 */
public object CoroutineRounds {
    /**
     * Runs one round and waits for it: [tasks] coroutines on [Dispatchers.Default]; task `i`
     * acquires `weights[i % weights.size]` permits [acquisitionsPerTask] times, and each time,
     * holding them, burns [work] tokens of CPU (`Blackhole.consumeCPU`), calls `yield()` (so a
     * holder lets the other tasks run into the semaphore even on two worker threads) and releases.
     * [start] says how the tasks are started and awaited (see [Start]).
     *
     * @return the number of acquisitions that suspended (that did not return at once).
     * @throws IllegalArgumentException if [tasks], [acquisitionsPerTask] or [weights] are empty.
     */
    @JvmStatic
    @JvmOverloads
    public fun run(
        permits: SuspendingPermits,
        tasks: Int,
        acquisitionsPerTask: Int,
        weights: LongArray,
        work: Long,
        start: Start = Start.ASYNC_AWAIT_ALL,
    ): Long {
        require(tasks > 0 && acquisitionsPerTask > 0 && weights.isNotEmpty()) {
            "run(tasks=$tasks, acquisitionsPerTask=$acquisitionsPerTask, weights=${weights.size}): all must be positive"
        }
        val suspended = LongAdder()
        suspend fun task(weight: Long) {
            repeat(acquisitionsPerTask) {
                permits.acquireCounting(weight, suspended)
                Blackhole.consumeCPU(work)
                yield()
                permits.release(weight)
            }
        }
        runBlocking {
            when (start) {
                Start.ASYNC_AWAIT_ALL ->
                    List(tasks) { i ->
                            async(Dispatchers.Default) { task(weights[i % weights.size]) }
                        }
                        .awaitAll()
                Start.LAUNCH ->
                    repeat(tasks) { i ->
                        launch(Dispatchers.Default) { task(weights[i % weights.size]) }
                    } // runBlocking waits for its children
            }
        }
        return suspended.sum()
    }

    /**
     * How a round starts its tasks. It matters to a cancellable suspension outside kotlinx: every
     * `suspendCancellableCoroutine` attaches a handle to the task's Job and detaches it at the
     * resumption (kotlinx's own Semaphore keeps one per coroutine, through internal API), and that
     * costs far more when the Job already has a completion handler, which puts its handlers in
     * kotlinx's list form.
     */
    public enum class Start {
        /**
         * `async` each task, then `awaitAll()`: each task's Job carries awaitAll's handler
         * (workloads 3, 4).
         */
        ASYNC_AWAIT_ALL,

        /**
         * `launch` each task in `runBlocking`'s scope, which waits for them: no handler on the
         * tasks' Jobs (3b).
         */
        LAUNCH,
    }

    /**
     * `acquire(permits)`, counting in [suspended] when it suspends. The adapter's `acquire` gets
     * this coroutine's own continuation, as a tail call would, so counting adds no allocation. The
     * count goes to an adder because a suspended coroutine may already run on another thread while
     * this one returns.
     */
    private suspend fun SuspendingPermits.acquireCounting(
        permits: Long,
        suspended: LongAdder,
    ): Unit = suspendCoroutineUninterceptedOrReturn { continuation ->
        val result = Suspensions.acquire(this, permits, continuation)
        if (result === COROUTINE_SUSPENDED) suspended.increment()
        result
    }
}

/**
 * The continuation given to a suspending `acquire` called from Java when it must not suspend (one
 * thread, free permits): resuming it is a bug in the benchmark, so it throws.
 */
public object MustNotSuspend : Continuation<Unit> {
    override val context: EmptyCoroutineContext
        get() = EmptyCoroutineContext

    override fun resumeWith(result: Result<Unit>): Unit =
        throw IllegalStateException("an uncontended acquire suspended and was resumed with $result")
}
