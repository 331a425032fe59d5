// SPDX-License-Identifier: Apache-2.0
@file:Suppress("unused") // operations are called by Lincheck through reflection

package dev.handoff

import org.jetbrains.lincheck.datastructures.Operation
import org.jetbrains.lincheck.datastructures.Options
import org.jetbrains.lincheck.datastructures.Param
import org.jetbrains.lincheck.datastructures.ThreadIdGen
import org.jetbrains.lincheck.datastructures.scenario
import java.util.concurrent.atomic.AtomicIntegerArray
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
 *
 * Unlocks are owned. With public kotlinx API only, a coroutine whose grant races its
 * cancellation holds the lock for an instant (between the grant and the give-back of its
 * `onCancellation`); an `unlock()` by a thread that does not hold the lock, landing in that
 * instant, unlocks it, and the give-back then finds it unlocked (its unlock throws to kotlinx's
 * exception handler and changes nothing). No sequential history has that, because the
 * specification's cancelled calls never held the lock. It is misuse (unlocking a lock one does not
 * hold), so the test only unlocks what the calling thread holds: each thread records the locks its
 * own calls obtained, and `unlock(owner)` by a thread that holds none returns `false` without
 * calling the mutex. The over-release check itself is covered by java-core's tests.
 */
class MutexLincheckTest : AbstractLincheckTest() {
    private val mutex = Mutex()

    /**
     * 1 where the thread of that slot holds the lock through its own lock() or tryLock(); slot 0,
     * the initial part's, may be unlocked by any thread (custom scenarios pass 0 explicitly).
     */
    private val holds = AtomicIntegerArray(SequentialMutex.MAX_SLOTS)

    @Operation(cancellableOnSuspension = true, promptCancellation = true)
    suspend fun lock(@Param(gen = ThreadIdGen::class) owner: Int) {
        mutex.lockSuspending()
        holds.set(owner, 1)
    }

    @Operation
    fun tryLock(@Param(gen = ThreadIdGen::class) owner: Int): Boolean =
        mutex.tryLock().also { if (it) holds.set(owner, 1) }

    @Operation
    fun unlock(@Param(gen = ThreadIdGen::class) owner: Int): Boolean {
        if (!holds.compareAndSet(owner, 1, 0)) return false
        mutex.unlock()
        return true
    }

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
            initial { actor(MutexLincheckTest::tryLock, 0) }
            parallel {
                thread {
                    add(cancelledOnSuspension(MutexLincheckTest::lock, 1))
                    actor(MutexLincheckTest::isLocked)
                }
                thread {
                    actor(MutexLincheckTest::lock, 2)
                    actor(MutexLincheckTest::queueLength)
                    actor(MutexLincheckTest::unlock, 2)
                }
                thread {
                    actor(MutexLincheckTest::unlock, 0)
                    actor(MutexLincheckTest::tryLock, 3)
                }
            }
        })
        // the initial part's lock is unlocked while a lock() queues and a tryLock() tries to barge:
        // the lock goes to the waiter or is free, and tryLock never overtakes a queued waiter
        .addCustomScenario(scenario {
            initial { actor(MutexLincheckTest::tryLock, 0) }
            parallel {
                thread {
                    actor(MutexLincheckTest::lock, 1)
                    actor(MutexLincheckTest::isLocked)
                }
                thread { actor(MutexLincheckTest::unlock, 0) }
                thread {
                    actor(MutexLincheckTest::tryLock, 3)
                    actor(MutexLincheckTest::queueLength)
                }
            }
        })
}
