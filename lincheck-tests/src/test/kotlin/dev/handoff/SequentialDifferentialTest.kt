// SPDX-License-Identifier: Apache-2.0
package dev.handoff

import java.util.SplittableRandom
import java.util.concurrent.CompletableFuture
import org.junit.jupiter.api.Assertions.fail
import org.junit.jupiter.api.Test

/**
 * Long random runs of one thread against [SequentialWeightedSemaphore], step by step: where the
 * Lincheck tests explore short scenarios from a few threads, these go deep into one history (debt
 * after shrinks, growth past the compact layout of the state word, queues of mixed weights up to
 * 2^56) and compare every result and the three observers after each step. Weights and capacities
 * come from a table per run, so the same specification checks small semaphores and ones whose
 * counts need every bit of the word; a second test does the same for [FairShareSemaphore] against
 * [SequentialFairShare] (many keys, caps, solo mode entered and left). A failure is reported as the
 * shortest failing history found by dropping steps.
 *
 * Shown once (2026-11-29): with the wide word's free count above 2^40 kept as if it were the
 * compact layout's stamp (the defect fixed that day), the "compact edge" runs fail at once: a
 * semaphore grown past 2^40 - 1 reports 2^40 permits available while a waiter queues; with the fair
 * share's rebase of virtual time leaving the keys' finish tags as they were, the wide fair share
 * run fails (a key served out of its turn).
 */
class SequentialDifferentialTest {

    /** The specification with its parameters standing for [table]'s weights. */
    private class TableSpecification(
        capacity: Long,
        maxQueuedPermits: Long,
        private val table: LongArray,
    ) : SequentialWeightedSemaphore(capacity, maxQueuedPermits = maxQueuedPermits) {
        override fun weight(n: Int): Long = table[n]
    }

    /** One run: [table] gives the weights (index 0 is 0), [capacity] the start. */
    private class Run(
        val name: String,
        val capacity: Long,
        val table: LongArray,
        val maxQueuedPermits: Long = Long.MAX_VALUE,
    )

    private val runs =
        listOf(
            Run("small", 3, longArrayOf(0, 1, 2, 3)),
            Run("small, bounded", 3, longArrayOf(0, 1, 2, 3), maxQueuedPermits = 3),
            Run(
                "compact edge",
                (1L shl 40) - 1,
                longArrayOf(0, 1, (1L shl 39) + 1, (1L shl 40) - 1, 1L shl 40, 1L shl 41),
            ),
            Run("wide", (1L shl 40) + 1, longArrayOf(0, 1, 1L shl 40, (1L shl 40) + 1, 3L shl 40)),
            Run(
                "wide, bounded",
                (1L shl 40) + 1,
                longArrayOf(0, 1, 1L shl 40, (1L shl 40) + 1),
                (1L shl 40) + 1,
            ),
            Run(
                "largest",
                Semaphore.MAX_PERMITS,
                longArrayOf(0, 1, (1L shl 32) + 7, 1L shl 55, Semaphore.MAX_PERMITS),
            ),
        )

    @Test
    fun everyStepOfLongRandomRunsMatchesTheSpecification() {
        for (run in runs) {
            for (seed in 1L..1000L) {
                runOnce(run, seed)
            }
        }
    }

    /** One step of a run: which operation ([op]), on which weights ([i], [j]) and slot ([t]). */
    private data class Step(val op: Int, val i: Int, val j: Int, val t: Int)

    /**
     * A random run of 250 steps; if it fails, the shortest history found by dropping steps one at a
     * time that still fails is reported (a failure deep in a run is then a few steps to read).
     */
    private fun runOnce(run: Run, seed: Long) {
        val random = SplittableRandom(seed)
        val weights = run.table.size
        val steps =
            List(250) { n ->
                Step(
                    random.nextInt(if (n < 240) 12 else 13),
                    random.nextInt(weights),
                    random.nextInt(weights),
                    random.nextInt(SLOTS),
                )
            } // a close (op 12) near the end only
        val failure = shortestFailure(steps) { replay(run, it) } ?: return
        fail<Unit>("${run.name}, seed $seed, shortest failing history: $failure")
    }

    /**
     * What [replay] reports for [steps], or null if they pass; for a failure, what it reports for
     * the shortest history found by dropping one step at a time while it still fails.
     */
    private fun shortestFailure(steps: List<Step>, replay: (List<Step>) -> String?): String? {
        var failure = replay(steps) ?: return null
        var failing = steps
        var dropped = true
        while (dropped) {
            dropped = false
            for (k in failing.indices.reversed()) {
                val shorter = failing.filterIndexed { n, _ -> n != k }
                val f = replay(shorter) ?: continue
                failing = shorter
                failure = f
                dropped = true
                break
            }
        }
        return failure
    }

    /** Replays [steps] on a new semaphore and specification: the first difference, or null. */
    private fun replay(run: Run, steps: List<Step>): String? {
        val spec = TableSpecification(run.capacity, run.maxQueuedPermits, run.table)
        val real = Semaphore.builder(run.capacity).maxQueuedPermits(run.maxQueuedPermits).build()
        val slots = arrayOfNulls<Any>(SLOTS) // an Acquisition or a CompletableFuture<Permits>
        val history = mutableListOf<String>()
        for ((opDrawn, i, j, t) in steps) {
            val w = run.table[i]
            var op = opDrawn
            if (op == 11 && slots[t] !is CompletableFuture<*>) {
                op = 10 // a handle is a future's: a callback acquisition is cancelled instead
            }
            val (what, expected, actual) =
                when (op) {
                    0 ->
                        Triple(
                            "tryAcquire($i)",
                            outcome { spec.tryAcquire(i) },
                            outcome { real.tryAcquire(w) },
                        )
                    1,
                    2 ->
                        Triple(
                            "release($i)",
                            outcome { spec.release(i) },
                            outcome { accepted { real.release(w) } },
                        )
                    3 ->
                        Triple(
                            "setCapacity($i)",
                            outcome { spec.setCapacity(i) },
                            outcome { real.setCapacity(w) },
                        )
                    4 ->
                        Triple(
                            "tryAcquireUpTo($i, $j)",
                            outcome {
                                if (i == 0) spec.tryAcquireUpTo(j) else spec.tryAcquireRange(i, j)
                            },
                            outcome {
                                if (i == 0) real.tryAcquireUpTo(run.table[j])
                                else real.tryAcquireUpTo(w, run.table[j])
                            },
                        )
                    5,
                    6 ->
                        Triple(
                            "start($t, $i)",
                            outcome { spec.start(t, i) },
                            outcome { start(real, w, slots, t, false) },
                        )
                    7 ->
                        Triple(
                            "startDeclining($t, $i)",
                            outcome { spec.startDeclining(t, i) },
                            outcome { start(real, w, slots, t, true) },
                        )
                    8 ->
                        Triple(
                            "startAsync($t, $i)",
                            outcome { spec.startAsync(t, i) },
                            outcome { slots[t] = real.acquireAsync(w) },
                        )
                    9 ->
                        Triple(
                            "startAsyncUpTo($t, $i, $j)",
                            outcome { spec.startAsyncUpTo(t, i, j) },
                            outcome { slots[t] = real.acquireUpToAsync(w, run.table[j]) },
                        )
                    10 ->
                        Triple(
                            "cancel($t)",
                            outcome { spec.cancel(t) },
                            outcome {
                                when (val slot = slots[t]) {
                                    is Acquisition -> slot.cancel()
                                    // (a CompletableFuture cancelled before answers true again)
                                    is CompletableFuture<*> ->
                                        !slot.isCancelled && slot.cancel(false)
                                    else -> false
                                }
                            },
                        )
                    11 ->
                        Triple(
                            "releaseHandle($t)",
                            outcome { spec.releaseHandle(t) },
                            outcome { releaseHandle(slots[t]) },
                        )
                    else -> Triple("close()", outcome { spec.close() }, outcome { real.close() })
                }
            history +=
                "$what: $actual" + if (actual == expected) "" else " (specification: $expected)"
            val observed = listOf(real.availablePermits(), real.queueLength(), real.queuedPermits())
            val specified =
                listOf(spec.availablePermits(), spec.queueLength(), spec.queuedPermits())
            if (actual != expected || observed != specified) {
                return "$history, then availablePermits, queueLength, queuedPermits = $observed " +
                    "(specification: $specified)"
            }
        }
        return null
    }

    /**
     * `acquireThen(w, waker)` into slot [t], as the specification's `start` (or `startDeclining`,
     * whose waker's claim declines every grant) answers it: settled at once, waiting, or rejected.
     */
    private fun start(
        real: Semaphore,
        w: Long,
        slots: Array<Any?>,
        t: Int,
        declines: Boolean,
    ): String {
        var asked = false
        var woken = false
        val waker =
            object : Waker {
                override fun claim(): Boolean {
                    asked = true
                    return !declines
                }

                override fun wake() {
                    woken = true
                }
            }
        val a =
            try {
                real.acquireThen(w, waker)
            } catch (shed: SemaphoreRejectedException) {
                slots[t] = null
                return SequentialWeightedSemaphore.REJECTED
            }
        slots[t] = a
        return when {
            a.isGranted -> SequentialWeightedSemaphore.GRANTED
            a.isClosed -> SequentialWeightedSemaphore.CLOSED
            declines && asked && !woken -> SequentialWeightedSemaphore.CANCELLED
            else -> SequentialWeightedSemaphore.WAITING
        }
    }

    /**
     * `Permits.release()` of the handle slot [slot]'s future completed with, as the specification
     * names it.
     */
    private fun releaseHandle(slot: Any?): String {
        val future = slot as? CompletableFuture<*> ?: return SequentialWeightedSemaphore.NO_HANDLE
        if (!future.isDone || future.isCompletedExceptionally)
            return SequentialWeightedSemaphore.NO_HANDLE
        return try {
            if ((future.join() as Permits).release()) SequentialWeightedSemaphore.RELEASED
            else SequentialWeightedSemaphore.ALREADY_RELEASED
        } catch (overRelease: IllegalStateException) {
            SequentialWeightedSemaphore.OVER_RELEASE
        }
    }

    /**
     * A fair share's run: capacity, the share of each key (keys 0 until shares.size), the cap.
     * [table], if given, maps the weight parameters 1 until its size to weights (see
     * [TableSpecification]), else they are the weights 1 to the capacity (or the cap).
     */
    private class FairRun(
        val capacity: Long,
        val shares: LongArray,
        val cap: Long = Long.MAX_VALUE,
        val table: LongArray? = null,
    ) {
        /** How many weight parameters there are, from 1. */
        val weights: Int = if (table != null) table.size - 1 else minOf(capacity, cap).toInt()

        fun weight(n: Int): Long = table?.get(n) ?: n.toLong()
    }

    /** The fair share's specification with the weights of [run]. */
    private class FairSpecification(private val run: FairRun) :
        SequentialFairShare(run.capacity, run.shares, run.cap) {
        override fun weight(n: Int): Long = run.weight(n)
    }

    private val fairRuns =
        listOf(
            FairRun(2, longArrayOf(1, 2)),
            FairRun(3, longArrayOf(1, 2, 3)),
            FairRun(3, longArrayOf(1, 2, 3), cap = 2),
            FairRun(4, longArrayOf(1, 1, 5)),
            // the wide state word; grants of 2^40 at share 1 move virtual time by about 2^59.5, so
            // the fair share rebases its tags (past 2^61) every few grants
            FairRun(
                1L shl 41,
                longArrayOf(1, 16, 3),
                table = longArrayOf(0, 1, (1L shl 39) + 3, 1L shl 40),
            ),
        )

    /**
     * The same for [FairShareSemaphore] against [SequentialFairShare]: random keys, weights and
     * slots; after each step every key's held permits and queue, the queue, the free permits and
     * the active keys are compared too (solo mode for one key, and leaving it, included).
     */
    @Test
    fun everyStepOfAFairShareMatchesTheSpecification() {
        for (run in fairRuns) {
            for (seed in 1L..300L) {
                val random = SplittableRandom(seed)
                val steps =
                    List(250) { n ->
                        Step(
                            random.nextInt(if (n < 240) 8 else 9),
                            random.nextInt(run.shares.size),
                            1 + random.nextInt(run.weights),
                            random.nextInt(SLOTS),
                        )
                    }
                val failure = shortestFailure(steps) { replayFair(run, it) } ?: continue
                fail<Unit>(
                    "capacity ${run.capacity}, shares ${run.shares.toList()}, cap ${run.cap}, seed $seed, " +
                        "shortest failing history: $failure"
                )
            }
        }
    }

    /**
     * Replays [steps] ([Step.i] the key, [Step.j] the weight) on a new fair share: the first
     * difference, or null.
     */
    private fun replayFair(run: FairRun, steps: List<Step>): String? {
        val spec = FairSpecification(run)
        val shares = run.shares
        val real =
            FairShareSemaphore.builder<Int>(run.capacity)
                .share { key: Int -> shares[key] }
                .maxPermitsPerKey(run.cap)
                .build()
        val slots = arrayOfNulls<Acquisition>(SLOTS)
        val history = mutableListOf<String>()
        for ((op, key, n, t) in steps) {
            val w = run.weight(n)
            val (what, expected, actual) =
                when (op) {
                    0 ->
                        Triple(
                            "tryAcquire($key, $n)",
                            outcome { spec.tryAcquire(key, n) },
                            outcome { real.tryAcquire(key, w) },
                        )
                    1,
                    2 ->
                        Triple(
                            "release($key, $n)",
                            outcome { spec.release(key, n) },
                            outcome { accepted { real.release(key, w) } },
                        )
                    3,
                    4 ->
                        Triple(
                            "start($t, $key, $n)",
                            outcome { spec.start(t, key, n) },
                            outcome { startFair(real, key, w, slots, t, false) },
                        )
                    5 ->
                        Triple(
                            "startDeclining($t, $key, $n)",
                            outcome { spec.startDeclining(t, key, n) },
                            outcome { startFair(real, key, w, slots, t, true) },
                        )
                    6 ->
                        Triple(
                            "cancel($t)",
                            outcome { spec.cancel(t) },
                            outcome { slots[t]?.cancel() ?: false },
                        )
                    7 ->
                        Triple(
                            "state($t)",
                            outcome { spec.state(t) },
                            outcome { fairState(slots[t]) },
                        )
                    else -> Triple("close()", outcome { spec.close() }, outcome { real.close() })
                }
            history +=
                "$what: $actual" + if (actual == expected) "" else " (specification: $expected)"
            val observed =
                listOf(real.availablePermits(), real.queueLength(), real.activeKeys()) +
                    shares.indices.map { listOf(real.heldPermits(it), real.queueLength(it)) }
            val specified =
                listOf(spec.availablePermits(), spec.queueLength(), spec.activeKeys()) +
                    shares.indices.map { listOf(spec.heldPermits(it), spec.queueLengthOf(it)) }
            if (actual != expected || observed != specified) {
                return "$history, then availablePermits, queueLength, activeKeys, [held, queued] per key = " +
                    "$observed (specification: $specified); slots ${(0 until SLOTS).map { fairState(slots[it]) }} " +
                    "(specification: ${(0 until SLOTS).map { spec.state(it) }})"
            }
        }
        return null
    }

    /**
     * `acquireThen(key, w, waker)` into slot [t], answered as the specification's `start` or
     * `startDeclining`.
     */
    private fun startFair(
        real: FairShareSemaphore<Int>,
        key: Int,
        w: Long,
        slots: Array<Acquisition?>,
        t: Int,
        declines: Boolean,
    ): String {
        var woken = false
        val waker =
            object : Waker {
                override fun claim(): Boolean = !declines

                override fun wake() {
                    woken = true
                }
            }
        val a = real.acquireThen(key, w, waker)
        slots[t] = a
        return when {
            declines && woken -> SequentialFairShare.CLOSED // only a close wakes it
            declines && a.state == Acquisition.CANCELLED -> SequentialFairShare.CANCELLED
            !woken -> SequentialFairShare.WAITING
            a.isGranted -> SequentialFairShare.GRANTED
            else -> SequentialFairShare.CLOSED
        }
    }

    private fun fairState(a: Acquisition?): String =
        when {
            a == null -> SequentialFairShare.NONE
            a.isGranted -> SequentialFairShare.GRANTED
            a.isClosed -> SequentialFairShare.CLOSED
            a.state == Acquisition.CANCELLED -> SequentialFairShare.CANCELLED
            else -> SequentialFairShare.WAITING
        }

    /** A result to compare: the value, or the class of what was thrown (messages differ). */
    private inline fun outcome(call: () -> Any?): Any? =
        try {
            call().let { if (it == Unit) "done" else it }
        } catch (e: RuntimeException) {
            e.javaClass.simpleName
        }

    private companion object {
        /** The callback acquisitions each run remembers, as the specification's handles. */
        const val SLOTS = 4
    }
}
