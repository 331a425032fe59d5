// SPDX-License-Identifier: Apache-2.0
package dev.handoff

import org.junit.jupiter.api.Assertions.assertEquals
import org.junit.jupiter.api.Test

/*
 * The core's internal lock, checked on the path that parks.
 *
 * On a multi-core machine a thread that finds the lock held polls it (for up to
 * CoreLock.LOCK_SPIN_NANOS) before it parks, so the model checker, which cuts spin loops
 * short, rarely reaches the parking of the lock (an AbstractQueuedSynchronizer: CoreLock)
 * and its unlock's wake-up. With one processor there is no polling (LOCK_SPINS == 0): every
 * contended lock() parks at once. These classes run in their own surefire execution, in a JVM
 * started with -XX:ActiveProcessorCount=1 (see the module's pom), against the same sequential
 * specifications as the other tests:
 *  - the model checker explores the interleavings of parking on the lock and the unlocks' wake-ups,
 *    together with the semaphore operations around them (it lets a park return at any time, so it
 *    checks mutual exclusion and linearizability here, not the absence of lost wake-ups);
 *  - the stress test runs them on real threads, where a lost wake-up is a hang that Lincheck
 *    reports with a thread dump. (Shown once with the lock this replaced: a variant that
 *    registered a parked thread after publishing that it was parked, the classic lost wake-up, hung
 *    this stress test; the model checking test passed it.)
 */

/** Fails the execution at once if the JVM was not started with one processor. */
private fun requireSingleCore() {
    assertEquals(
        0,
        CoreLock.LOCK_SPINS,
        "SingleCore*LincheckTest must run with -XX:ActiveProcessorCount=1 (the single-core-lock execution)",
    )
}

/**
 * The weighted semaphore of capacity 2 (suspend, release, cancellation, resize, close), lock
 * parking at once.
 */
class SingleCoreSemaphoreLincheckTest : Semaphore2LincheckTest() {
    @Test
    fun runsOnOneProcessor() {
        requireSingleCore()
    }
}

/** The read-write lock of two readers (a writer waits for weight 2), lock parking at once. */
class SingleCoreRwLockLincheckTest : RwLock2LincheckTest() {
    @Test
    fun runsOnOneProcessor() {
        requireSingleCore()
    }
}
