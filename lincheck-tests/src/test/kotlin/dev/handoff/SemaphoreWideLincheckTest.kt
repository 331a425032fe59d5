// SPDX-License-Identifier: Apache-2.0
@file:Suppress("unused") // operations are called by Lincheck through reflection

package dev.handoff

import org.jetbrains.lincheck.datastructures.Options
import org.jetbrains.lincheck.datastructures.scenario

/*
 * Weights of 2^40 and more, against the same specification: the parameters 1, 2 and 3 stand for
 * 1, 2^40 and 2^40 + 1 permits (0 stays 0), on a semaphore of capacity 2^40 + 1 with at most
 * 2^40 + 1 permits queued, the callback face.
 *
 * What it exercises in the core: a capacity above 2^40 - 1 puts the state word in its wide
 * layout, where the free count takes the bits of the compact layout's resize stamp (see "State
 * word" in StateWord); and a waiter of 2^32 permits or more is queued under the lock only, its
 * weight's high part counted apart (queuedHi, see "Queue counters" in WaitQueue), while a light
 * waiter behind it appends without the lock and checks the bound against counters a heavy append
 * or withdrawal may be changing.
 *
 * Shown once (2026-11-29, by hand, then reverted): with the wide word's count above 2^40 kept as if
 * it were the stamp (StateWord.kept returning `s & (KEEP | STAMP_MASK)` in both layouts), both
 * modes fail on the second scenario below (2^40 free beside a waiter: availablePermits() 2^40
 * while it waits); with a heavy append adding its high part to queuedHi after the CAS that
 * publishes it instead of before, the model checker fails on the third: a light appender read
 * the heavy node as the tail but not its weight, and queued past the bound (queuedPermits()
 * 2^40 + 3 > 2^40 + 1).
 */

/** The weight a parameter stands for here: 1, 2^40, 2^40 + 1 (and 0). */
internal fun wideWeight(n: Int): Long =
    when (n) {
        2 -> 1L shl 40
        3 -> (1L shl 40) + 1
        else -> n.toLong()
    }

/** Capacity 2^40 + 1, at most 2^40 + 1 permits queued, weights mapped by [wideWeight]. */
class SequentialWide3 :
    SequentialWeightedSemaphore(wideWeight(3), maxQueuedPermits = wideWeight(3)) {
    override fun weight(n: Int): Long = wideWeight(n)
}

class SemaphoreWideLincheckTest :
    SemaphoreCallbackLincheckTest(
        Semaphore.builder(wideWeight(3)).maxQueuedPermits(wideWeight(3)).build(),
        SequentialWide3::class,
    ) {

    override fun weight(n: Int): Long = wideWeight(n)

    override fun <O : Options<O, *>> O.customize(): O =
        sequentialSpecification(SequentialWide3::class.java)
            // a heavy waiter queued first (under the lock), all permits held: a light one appends
            // behind it without the lock (1 + 2^40 fits the bound) while the heavy one is withdrawn
            // and the releases hand permits on; the queued weight seen in between is a real one
            .addCustomScenario(
                scenario {
                    initial {
                        actor(SemaphoreOperations::tryAcquire, 3)
                        actor(SemaphoreCallbackLincheckTest::start, 0, 2)
                    }
                    parallel {
                        thread {
                            actor(SemaphoreCallbackLincheckTest::start, 1, 1)
                            actor(SemaphoreOperations::queuedPermits)
                        }
                        thread {
                            actor(SemaphoreCallbackLincheckTest::cancel, 0)
                            actor(SemaphoreOperations::queueLength)
                        }
                        thread {
                            actor(SemaphoreOperations::release, 2)
                            actor(SemaphoreOperations::availablePermits)
                        }
                    }
                    post {
                        actor(SemaphoreOperations::queuedPermits)
                        actor(SemaphoreOperations::availablePermits)
                    }
                }
            )
            // 2^40 free (the bit just above the compact layout's count) when a waiter of 2^40 + 1
            // queues: they become its partial assignment, nothing is free while it waits, and its
            // withdrawal or a release that serves it leaves exactly what is due
            .addCustomScenario(
                scenario {
                    initial {
                        actor(SemaphoreOperations::tryAcquire, 1)
                        actor(SemaphoreCallbackLincheckTest::start, 0, 3)
                    }
                    parallel {
                        thread {
                            actor(SemaphoreOperations::availablePermits)
                            actor(SemaphoreCallbackLincheckTest::cancel, 0)
                        }
                        thread {
                            actor(SemaphoreOperations::release, 1)
                            actor(SemaphoreOperations::availablePermits)
                        }
                    }
                    post {
                        actor(SemaphoreOperations::availablePermits)
                        actor(SemaphoreOperations::tryAcquire, 3)
                    }
                }
            )
            // a light waiter queued first: a heavy one (under the lock) and a second light one
            // (without it) race for the room left by the bound, 2^40 permits; whichever comes
            // second is refused unless the release served the first waiter meanwhile
            .addCustomScenario(
                scenario {
                    initial {
                        actor(SemaphoreOperations::tryAcquire, 3)
                        actor(SemaphoreCallbackLincheckTest::start, 0, 1)
                    }
                    parallel {
                        thread {
                            actor(SemaphoreCallbackLincheckTest::start, 1, 2)
                            actor(SemaphoreOperations::queuedPermits)
                        }
                        thread {
                            actor(SemaphoreCallbackLincheckTest::start, 2, 1)
                            actor(SemaphoreCallbackLincheckTest::start, 2, 1)
                        }
                        thread {
                            actor(SemaphoreOperations::release, 1)
                            actor(SemaphoreOperations::queueLength)
                        }
                    }
                    post {
                        actor(SemaphoreOperations::queuedPermits)
                        actor(SemaphoreOperations::availablePermits)
                    }
                }
            )
}
