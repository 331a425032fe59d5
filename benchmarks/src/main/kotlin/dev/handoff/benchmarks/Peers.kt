// SPDX-License-Identifier: Apache-2.0
package dev.handoff.benchmarks

/**
 * The peers by name, as the benchmarks' `@Param("peer")` values spell them.
 *
 * ```
 * val p: SuspendingPermits = Peers.suspending("kotlinx", 2)
 * ```
 */
public object Peers {
    /** Ours: `dev.handoff.Semaphore`. */
    public const val HANDOFF: String = "handoff"

    /** Ours with a [dev.handoff.WaitListener] (issue 13): the fast path must cost the same. */
    public const val HANDOFF_OBSERVED: String = "handoff-observed"

    /**
     * Diagnostic only: ours built with a [dev.handoff.WaitListener] that does nothing. Set against
     * [HANDOFF] in the coroutine and weighted workloads, it shows whether a listener moves the
     * semaphore off its lock-free paths (it should cost only the calls on the slow path).
     */
    public const val HANDOFF_LISTENER: String = "handoff-listener"

    /**
     * Diagnostic only: ours after `setCapacity(c + 1)` and then `setCapacity(c)`, so the same
     * capacity with a past resize. Set against [HANDOFF], it shows whether a resize that left no
     * debt still keeps the semaphore off its lock-free paths.
     */
    public const val HANDOFF_RESIZED: String = "handoff-resized"

    /**
     * Diagnostic only: ours, suspended without kotlinx's cancellation machinery (see
     * [UncancellablePermits]); never a target, it measures the price of public-API cancellation.
     */
    public const val HANDOFF_UNCANCELLABLE: String = "handoff-uncancellable"

    /** `java.util.concurrent.Semaphore(n, true)`. */
    public const val JUC_FAIR: String = "juc-fair"

    /** `java.util.concurrent.Semaphore(n, false)`. */
    public const val JUC_NONFAIR: String = "juc-nonfair"

    /** `kotlinx.coroutines.sync.Semaphore`, single permits only. */
    public const val KOTLINX: String = "kotlinx"

    /** The kotlinx workaround for weights: a `Mutex` held around `repeat(n) { acquire() }`. */
    public const val KOTLINX_MUTEX: String = "kotlinx-mutex"

    /** A Go-style monitor: a lock, a FIFO queue, a signal per waiter. */
    public const val MONITOR: String = "monitor"

    /** Every name, ours first. */
    public val ALL: List<String> =
        listOf(
            HANDOFF,
            HANDOFF_OBSERVED,
            HANDOFF_LISTENER,
            HANDOFF_RESIZED,
            HANDOFF_UNCANCELLABLE,
            JUC_FAIR,
            JUC_NONFAIR,
            KOTLINX,
            KOTLINX_MUTEX,
            MONITOR,
        )

    /**
     * A new semaphore of [capacity] free permits for a caller that only tries.
     *
     * @throws IllegalArgumentException if [name] is not one of [ALL].
     */
    @JvmStatic
    public fun permits(name: String, capacity: Long): Permits =
        when (name) {
            HANDOFF,
            HANDOFF_OBSERVED,
            HANDOFF_LISTENER,
            HANDOFF_RESIZED -> HandoffPermits(capacity, name)
            HANDOFF_UNCANCELLABLE -> UncancellablePermits(capacity)
            JUC_FAIR -> JucPermits(capacity, fair = true)
            JUC_NONFAIR -> JucPermits(capacity, fair = false)
            KOTLINX -> KotlinxPermits(capacity)
            KOTLINX_MUTEX -> KotlinxWeightedPermits(capacity)
            MONITOR -> MonitorPermits(capacity)
            else -> throw IllegalArgumentException("unknown peer '$name'; known: $ALL")
        }

    /**
     * A new semaphore of [capacity] free permits for parking threads.
     *
     * @throws IllegalArgumentException if [name] is unknown or the peer cannot park a thread.
     */
    @JvmStatic
    public fun blocking(name: String, capacity: Long): BlockingPermits =
        permits(name, capacity) as? BlockingPermits
            ?: throw IllegalArgumentException("peer '$name' has no blocking acquire")

    /**
     * A new semaphore of [capacity] free permits for suspending coroutines.
     *
     * @throws IllegalArgumentException if [name] is unknown or the peer cannot suspend.
     */
    @JvmStatic
    public fun suspending(name: String, capacity: Long): SuspendingPermits =
        permits(name, capacity) as? SuspendingPermits
            ?: throw IllegalArgumentException("peer '$name' has no suspending acquire")

    /**
     * A new semaphore of [capacity] free permits for callers that chain on a `CompletableFuture`.
     *
     * @throws IllegalArgumentException if [name] is unknown or the peer has no future face.
     */
    @JvmStatic
    public fun future(name: String, capacity: Long): FuturePermits =
        permits(name, capacity) as? FuturePermits
            ?: throw IllegalArgumentException("peer '$name' has no future acquire")
}
