package dev.handoff.benchmarks

import kotlinx.coroutines.sync.Mutex
import kotlinx.coroutines.sync.Semaphore
import kotlinx.coroutines.sync.withLock

/**
 * Peer: [kotlinx.coroutines.sync.Semaphore]. It knows only single permits, so this adapter accepts
 * only `permits == 1`; see [KotlinxWeightedPermits] for the usual workaround for weights.
 *
 * ```
 * val p = KotlinxPermits(2)
 * p.acquire(1); p.release(1)
 * ```
 *
 * @param capacity the number of permits, at most `Int.MAX_VALUE`.
 */
public class KotlinxPermits(capacity: Long) : SuspendingPermits {
    private val semaphore = Semaphore(Math.toIntExact(capacity))

    override val name: String get() = Peers.KOTLINX

    override fun tryAcquire(permits: Long): Boolean {
        checkOne(permits)
        return semaphore.tryAcquire()
    }

    override suspend fun acquire(permits: Long) {
        checkOne(permits)
        return semaphore.acquire()
    }

    override fun release(permits: Long) {
        checkOne(permits)
        semaphore.release()
    }

    private fun checkOne(permits: Long) =
        require(permits == 1L) { "kotlinx Semaphore has no weighted acquire: $permits permits asked" }
}

/**
 * Peer: the common workaround for a weighted acquire on kotlinx.coroutines, a [Mutex] held while
 * taking `n` single permits one by one (so two weighted acquires never deadlock each other holding
 * half of what they need). FIFO between the weighted callers comes from the mutex.
 *
 * A cancellation in the middle leaks the permits already taken; the benchmarks never cancel.
 *
 * ```
 * val p = KotlinxWeightedPermits(16)
 * p.acquire(5); p.release(5)
 * ```
 *
 * @param capacity the number of permits, at most `Int.MAX_VALUE`.
 */
public class KotlinxWeightedPermits(capacity: Long) : SuspendingPermits {
    private val mutex = Mutex()
    private val semaphore = Semaphore(Math.toIntExact(capacity))

    override val name: String get() = Peers.KOTLINX_MUTEX

    override fun tryAcquire(permits: Long): Boolean {
        if (!mutex.tryLock()) return false
        try {
            var taken = 0L
            while (taken < permits && semaphore.tryAcquire()) taken++
            if (taken == permits) return true
            repeat(taken.toInt()) { semaphore.release() }
            return false
        } finally {
            mutex.unlock()
        }
    }

    override suspend fun acquire(permits: Long) {
        mutex.withLock {
            repeat(permits.toInt()) { semaphore.acquire() }
        }
    }

    override fun release(permits: Long) {
        repeat(permits.toInt()) { semaphore.release() }
    }
}
