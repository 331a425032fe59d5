@file:Suppress("unused") // operations are called by Lincheck through reflection

package dev.handoff

import org.jetbrains.lincheck.datastructures.Operation
import org.jetbrains.lincheck.datastructures.Options
import org.jetbrains.lincheck.datastructures.scenario
import dev.handoff.coroutines.lock as lockSuspending

/**
 * Lincheck test of [Mutex] against [SequentialMutex]: the suspending `lock()` of
 * `dev.handoff.coroutines` (cancelled by Lincheck at random while it waits, prompt cancellation
 * included), `tryLock`, `unlock` (unlocking an unlocked mutex throws and changes nothing) and the
 * observers `isLocked` and `queueLength`, in model checking and stress mode.
 *
 * Unlike [RwLock.readUnlock], [Mutex.unlock] needs no ownership restriction: its misuse check is
 * the core's own over-release check, atomic with the release, so an `unlock` by any thread, even
 * one racing a grant, is either a correct unlock or an exact misuse.
 *
 * As for the semaphore (see SemaphoreLincheckTest.kt), Lincheck 3.7 cannot show whether a
 * coroutine cancelled after its grant unlocks again: neither the adapter's nor the
 * specification's give-back runs, so such a call keeps the lock on both sides.
 */
class MutexLincheckTest : AbstractLincheckTest() {
    private val mutex = Mutex()

    @Operation(cancellableOnSuspension = true, promptCancellation = true)
    suspend fun lock() = mutex.lockSuspending()

    @Operation
    fun tryLock(): Boolean = mutex.tryLock()

    @Operation
    fun unlock() = mutex.unlock()

    @Operation
    fun isLocked(): Boolean = mutex.isLocked

    @Operation
    fun queueLength(): Int = mutex.queueLength()

    override fun <O : Options<O, *>> O.customize(): O = sequentialSpecification(SequentialMutex::class.java)
        .actorsAfter(0) // Lincheck runs no post part after suspending operations
        .actorsPerThread(3)
        // unlock vs cancel: the unlock may hand the lock to the waiter just as it is cancelled;
        // the waiter behind it must then get it (or the lock must be free), never nobody
        .addCustomScenario(scenario {
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
        })
        // two unlocks race a handoff: the second one unlocks the lock just handed to the waiter
        // (a mutex has no owner) or, if nothing is locked any more, throws and changes nothing
        .addCustomScenario(scenario {
            initial { actor(MutexLincheckTest::tryLock) }
            parallel {
                thread {
                    actor(MutexLincheckTest::lock)
                    actor(MutexLincheckTest::isLocked)
                }
                thread { actor(MutexLincheckTest::unlock) }
                thread {
                    actor(MutexLincheckTest::unlock)
                    actor(MutexLincheckTest::queueLength)
                }
            }
        })
}
