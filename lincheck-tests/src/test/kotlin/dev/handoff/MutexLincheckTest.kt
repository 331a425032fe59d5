// SPDX-License-Identifier: Apache-2.0
@file:Suppress("unused") // operations are called by Lincheck through reflection

package dev.handoff

import dev.handoff.coroutines.lock as lockSuspending
import org.jetbrains.lincheck.datastructures.Operation
import org.jetbrains.lincheck.datastructures.Options
import org.jetbrains.lincheck.datastructures.scenario

/**
 * Lincheck test of [Mutex] against [SequentialMutex]: the suspending `lock()` of
 * `dev.handoff.coroutines` (cancelled by Lincheck at random while it waits, prompt cancellation
 * included), `tryLock`, `unlock` and the observers `isLocked` and `queueLength`, in model checking
 * and stress mode.
 *
 * Unlocks by any thread. The mutex has no owner: `unlock()` is called by whichever thread the
 * scenario puts it in, and returns whether the mutex accepted it — `false` where it throws
 * IllegalStateException (not locked; nothing changes). Its misuse check is the core's over-release
 * check, atomic with the release, so an unlock by a thread that does not hold the lock is either an
 * unlock or an exact refusal, whatever it races.
 *
 * That includes a `lock()` whose grant races its cancellation: until the waker delivers the grant
 * (or the cancellation undoes it) the lock is held by nobody, and an unlock that could only pass by
 * counting it waits until that is decided (see "Provisional grants" in FifoCore's notes). The last
 * two custom scenarios play that race: a lock cancelled as soon as it suspends, against two unlocks
 * of the one lock the initial part holds, by other threads. (Until 2026-11-26 each thread unlocked
 * only the locks its own calls had obtained: a thread that held nothing could unlock the grant of a
 * coroutine on its way back from the cancellation, the give-back then found the mutex unlocked, and
 * no sequential history had that.)
 *
 * As for the semaphore (see SemaphoreLincheckTest.kt), Lincheck 3.7 cannot show whether a coroutine
 * cancelled after its grant was delivered unlocks again: neither the adapter's nor the
 * specification's give-back runs, so such a call keeps the lock on both sides. The custom scenarios
 * without prompt cancellation are the ones where `Cancelled` means the cancellation came before the
 * grant was delivered.
 */
class MutexLincheckTest : AbstractLincheckTest() {
    private val mutex = Mutex()

    @Operation(cancellableOnSuspension = true, promptCancellation = true)
    suspend fun lock() = mutex.lockSuspending()

    @Operation fun tryLock(): Boolean = mutex.tryLock()

    /**
     * `unlock()` by whichever thread runs it: `false` if it throws IllegalStateException (not
     * locked).
     */
    @Operation
    fun unlock(): Boolean =
        try {
            mutex.unlock()
            true
        } catch (notLocked: IllegalStateException) {
            false
        }

    @Operation fun isLocked(): Boolean = mutex.isLocked

    @Operation fun queueLength(): Int = mutex.queueLength()

    override fun <O : Options<O, *>> O.customize(): O =
        sequentialSpecification(SequentialMutex::class.java)
            .actorsAfter(0) // Lincheck runs no post part after suspending operations
            .actorsPerThread(3)
            // unlock vs cancel: the unlock may hand the lock to the waiter just as it is cancelled;
            // the waiter behind it must then get it (or the lock must be free), never nobody
            .addCustomScenario(
                scenario {
                    initial { actor(MutexLincheckTest::tryLock) }
                    parallel {
                        thread {
                            add(cancelledOnSuspension(MutexLincheckTest::lock))
                            actor(MutexLincheckTest::isLocked)
                        }
                        thread {
                            actor(MutexLincheckTest::lock)
                            actor(MutexLincheckTest::queueLength)
                            actor(MutexLincheckTest::unlock)
                        }
                        thread {
                            actor(MutexLincheckTest::unlock)
                            actor(MutexLincheckTest::tryLock)
                        }
                    }
                }
            )
            // the initial part's lock is unlocked while a lock() queues and a tryLock() tries to
            // barge:
            // the lock goes to the waiter or is free, and tryLock never overtakes a queued waiter
            .addCustomScenario(
                scenario {
                    initial { actor(MutexLincheckTest::tryLock) }
                    parallel {
                        thread {
                            actor(MutexLincheckTest::lock)
                            actor(MutexLincheckTest::isLocked)
                        }
                        thread { actor(MutexLincheckTest::unlock) }
                        thread {
                            actor(MutexLincheckTest::tryLock)
                            actor(MutexLincheckTest::queueLength)
                        }
                    }
                }
            )
            // two unlocks of one lock against a lock() cancelled as soon as it suspends: at most
            // one
            // unlock passes unless the grant was delivered, and the cancelled lock ends Cancelled
            // (prompt: also after its resumption)
            .addCustomScenario(unlocksAgainstCancelledLock(prompt = true))
            // the same without prompt cancellation: a lock() that ends Cancelled never had its
            // grant
            // delivered, so then exactly one unlock passes and the lock is free afterwards
            .addCustomScenario(unlocksAgainstCancelledLock(prompt = false))
}

/**
 * After `tryLock()` in the initial part: threads 1 and 2 each `unlock()` while thread 3 runs
 * `lock()`, cancelled as soon as it suspends ([prompt]: also after its resumption), then
 * `isLocked()` and `tryLock()` once that call has ended.
 */
private fun unlocksAgainstCancelledLock(prompt: Boolean) = scenario {
    initial { actor(MutexLincheckTest::tryLock) }
    parallel {
        thread { actor(MutexLincheckTest::unlock) }
        thread { actor(MutexLincheckTest::unlock) }
        thread {
            add(cancelledOnSuspension(MutexLincheckTest::lock, prompt = prompt))
            actor(MutexLincheckTest::isLocked)
            actor(MutexLincheckTest::tryLock)
        }
    }
}
