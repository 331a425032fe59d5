// SPDX-License-Identifier: Apache-2.0
@file:Suppress("unused") // operations are called by Lincheck through reflection

package dev.handoff

import org.jetbrains.lincheck.datastructures.Operation
import org.jetbrains.lincheck.datastructures.Options
import org.jetbrains.lincheck.datastructures.Param
import org.jetbrains.lincheck.datastructures.ThreadIdGen
import org.jetbrains.lincheck.datastructures.scenario
import kotlin.reflect.KClass
import dev.handoff.coroutines.readLock as readLockSuspending
import dev.handoff.coroutines.writeLock as writeLockSuspending

/*
 * Lincheck tests of dev.handoff.RwLock against SequentialRwLock, on maxReaders 2 and 3 (small, so
 * that a writer queued behind readers, and readers queued behind that writer, are reached in a
 * few operations): the suspending readLock()/writeLock() of dev.handoff.coroutines (cancelled by
 * Lincheck at random while they wait, prompt cancellation included), tryReadLock, tryWriteLock,
 * readUnlock, writeUnlock and downgrade, in model checking and stress mode.
 *
 * Thread-local ownership of unlocks
 * ---------------------------------
 * RwLock has no owners, and its misuse checks are exact only when they do not race the grant or
 * the release that they contradict: readUnlock() reads the write-locked flag and then releases a
 * permit, and the flag is set just after a tryWriteLock's permits are taken and cleared just
 * before a writeUnlock/downgrade gives them back. A readUnlock() by a thread that holds no read
 * lock, racing such a writer, can therefore succeed and take a permit from the writer; a
 * writeUnlock() that loses the flag to a concurrent writeUnlock throws while the permits are still
 * held. (Unrestricted, the model checker finds within seconds: downgrade() clears the flag, two
 * readUnlock() calls of another thread then succeed on the writer's permits, and downgrade() throws
 * "permits are not held" and sets the flag back, leaving the lock write-locked with no permit
 * held.) Those histories are not linearizable, but they come only from misuse. So in the parallel
 * part each thread unlocks only what it holds: the test (and SequentialRwLock, identically) counts
 * per thread the read locks and the write lock its calls obtained, and readUnlock / writeUnlock /
 * downgrade by a thread that holds nothing of the kind return false without calling the lock.
 * Lincheck's initial part (thread 0) runs alone, so it is not restricted: misuse there (say,
 * readUnlock while write-locked) must throw IllegalStateException and change nothing. Custom
 * scenarios may pass owner 0 from a parallel thread to release what the initial part took, when
 * only that thread does so.
 *
 * The observers isWriteLocked() and readLockCount() are not operations: they read the flag and
 * the core's permits one after the other, and are documented as monitoring snapshots.
 * queueLength() is checked in RwLockQueue2LincheckTest at the end. Without observers, a reader
 * that barged past a queued writer still shows: in the results of the try-calls, and in which
 * suspended call is granted first.
 *
 * As for the semaphore (SemaphoreLincheckTest.kt), Lincheck 3.7 cannot show whether a coroutine
 * cancelled after its grant unlocks again: such a call keeps its lock on both sides, for no owner.
 */
abstract class RwLockLincheckTest(maxReaders: Int, private val specification: KClass<*>) : AbstractLincheckTest() {
    protected val lock = RwLock(maxReaders)

    /** Read locks obtained and not yet released, per owner slot (only its own thread writes one). */
    private val readsHeld = IntArray(SequentialRwLock.MAX_SLOTS)

    /** Whether each owner slot holds the write lock. */
    private val writeHeld = BooleanArray(SequentialRwLock.MAX_SLOTS)

    @Operation(cancellableOnSuspension = true, promptCancellation = true)
    suspend fun readLock(@Param(gen = ThreadIdGen::class) owner: Int) {
        lock.readLockSuspending()
        readsHeld[owner]++
    }

    @Operation(cancellableOnSuspension = true, promptCancellation = true)
    suspend fun writeLock(@Param(gen = ThreadIdGen::class) owner: Int) {
        lock.writeLockSuspending()
        writeHeld[owner] = true
    }

    @Operation
    fun tryReadLock(@Param(gen = ThreadIdGen::class) owner: Int): Boolean =
        lock.tryReadLock().also { if (it) readsHeld[owner]++ }

    @Operation
    fun tryWriteLock(@Param(gen = ThreadIdGen::class) owner: Int): Boolean =
        lock.tryWriteLock().also { if (it) writeHeld[owner] = true }

    @Operation
    fun readUnlock(@Param(gen = ThreadIdGen::class) owner: Int): Boolean {
        if (owner != SequentialRwLock.INITIAL && readsHeld[owner] == 0) return false
        lock.readUnlock()
        if (readsHeld[owner] > 0) readsHeld[owner]--
        return true
    }

    @Operation
    fun writeUnlock(@Param(gen = ThreadIdGen::class) owner: Int): Boolean {
        if (owner != SequentialRwLock.INITIAL && !writeHeld[owner]) return false
        lock.writeUnlock()
        writeHeld[owner] = false
        return true
    }

    @Operation
    fun downgrade(@Param(gen = ThreadIdGen::class) owner: Int): Boolean {
        if (owner != SequentialRwLock.INITIAL && !writeHeld[owner]) return false
        lock.downgrade()
        writeHeld[owner] = false
        readsHeld[owner]++
        return true
    }

    override fun <O : Options<O, *>> O.customize(): O = configuration(specification)

    /** Lincheck runs no post part after suspending operations. */
    protected fun <O : Options<O, *>> O.configuration(specification: KClass<*>): O =
        sequentialSpecification(specification.java).actorsAfter(0).actorsPerThread(3)
}

/** Custom scenarios on two read permits; in each, thread k passes owner k and owner 0 is the initial part. */
internal fun <O : Options<O, *>> O.rwLock2Scenarios(): O = this
    // cancel of a queued writer that has collected a read permit, with a reader waiting behind it:
    // the cancelled writer's permit goes on to that reader
    .addCustomScenario(scenario {
        initial {
            actor(RwLockLincheckTest::tryReadLock, 0)
            actor(RwLockLincheckTest::tryReadLock, 0)
        }
        parallel {
            thread {
                add(cancelledOnSuspension(RwLockLincheckTest::writeLock, 1))
                actor(RwLockLincheckTest::tryReadLock, 1)
            }
            thread {
                actor(RwLockLincheckTest::readLock, 2)
                actor(RwLockLincheckTest::tryWriteLock, 2)
            }
            thread {
                actor(RwLockLincheckTest::readUnlock, 0) // the initial part's read lock
                actor(RwLockLincheckTest::tryReadLock, 3)
            }
        }
    })
    // downgrade with a reader and a writer queued: a reader at the head gets in, a writer at the
    // head collects the given-up permit and still waits for the downgraded read lock
    .addCustomScenario(scenario {
        initial { actor(RwLockLincheckTest::tryWriteLock, 0) }
        parallel {
            thread {
                actor(RwLockLincheckTest::readLock, 1)
                actor(RwLockLincheckTest::readUnlock, 1)
            }
            thread {
                actor(RwLockLincheckTest::writeLock, 2)
                actor(RwLockLincheckTest::writeUnlock, 2)
            }
            thread {
                actor(RwLockLincheckTest::downgrade, 0) // the initial part's write lock
                actor(RwLockLincheckTest::readUnlock, 0)
            }
        }
    })
    // write unlock vs cancel of the queued writer, with a reader behind it: the lock goes to
    // exactly one of them (or stays free), and never to the cancelled writer
    .addCustomScenario(scenario {
        initial { actor(RwLockLincheckTest::tryWriteLock, 0) }
        parallel {
            thread {
                add(cancelledOnSuspension(RwLockLincheckTest::writeLock, 1))
                actor(RwLockLincheckTest::tryReadLock, 1)
            }
            thread {
                actor(RwLockLincheckTest::readLock, 2)
                actor(RwLockLincheckTest::readUnlock, 2)
            }
            thread {
                actor(RwLockLincheckTest::writeUnlock, 0)
                actor(RwLockLincheckTest::tryWriteLock, 3)
            }
        }
    })
    // read unlock vs cancel: the last reader leaves just as the writer it would complete is cancelled
    .addCustomScenario(scenario {
        initial {
            actor(RwLockLincheckTest::tryReadLock, 0)
            actor(RwLockLincheckTest::tryReadLock, 0)
        }
        parallel {
            thread {
                add(cancelledOnSuspension(RwLockLincheckTest::writeLock, 1))
                actor(RwLockLincheckTest::tryWriteLock, 1)
            }
            thread {
                actor(RwLockLincheckTest::readUnlock, 0)
                actor(RwLockLincheckTest::readUnlock, 0)
                actor(RwLockLincheckTest::tryReadLock, 2)
            }
        }
    })

open class RwLock2LincheckTest : RwLockLincheckTest(2, SequentialRwLock2::class) {
    override fun <O : Options<O, *>> O.customize(): O = configuration(SequentialRwLock2::class).rwLock2Scenarios()
}

class RwLock3LincheckTest : RwLockLincheckTest(3, SequentialRwLock3::class) {
    override fun <O : Options<O, *>> O.customize(): O = configuration(SequentialRwLock3::class)
        // a writer behind two readers collects their permits one by one; the third read permit is
        // free all along, but a new reader must wait behind the writer
        .addCustomScenario(scenario {
            initial {
                actor(RwLockLincheckTest::tryReadLock, 0)
                actor(RwLockLincheckTest::tryReadLock, 0)
            }
            parallel {
                thread {
                    actor(RwLockLincheckTest::writeLock, 1)
                    actor(RwLockLincheckTest::downgrade, 1)
                }
                thread {
                    actor(RwLockLincheckTest::readLock, 2)
                    actor(RwLockLincheckTest::readUnlock, 2)
                }
                thread {
                    actor(RwLockLincheckTest::readUnlock, 0)
                    actor(RwLockLincheckTest::readUnlock, 0)
                }
            }
        })
}

/**
 * The configuration of [RwLock2LincheckTest] plus the observer `queueLength()`, with a custom
 * scenario for the race it once lost: a writer queuing behind a reader first sets the core's
 * QUEUED flag (taking the free permit as a partial assignment), then links itself and counts the
 * queue; in between, `tryReadLock` fails "because of the queue" while `queueLength()` said 0.
 * The core now reads the length under its lock whenever QUEUED is set.
 *
 * `isWriteLocked()` and `readLockCount()` are not operations: they are documented as monitoring
 * snapshots, because the write flag and the core's permits change one after the other (the model
 * checker shows `readLockCount()` reporting `maxReaders` during a `tryWriteLock`).
 */
class RwLockQueue2LincheckTest : RwLock2LincheckTest() {
    @Operation
    fun queueLength(): Int = lock.queueLength()

    override fun <O : Options<O, *>> O.customize(): O =
        configuration(SequentialRwLock2::class).rwLock2Scenarios().addCustomScenario(
            scenario {
                initial { actor(RwLockLincheckTest::tryReadLock, 0) }
                parallel {
                    thread { actor(RwLockLincheckTest::writeLock, 1) }
                    thread {
                        actor(RwLockLincheckTest::tryReadLock, 2)
                        actor(RwLockQueue2LincheckTest::queueLength)
                    }
                }
            },
        )
}
