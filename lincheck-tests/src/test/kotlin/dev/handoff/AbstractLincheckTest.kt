// SPDX-License-Identifier: Apache-2.0
package dev.handoff

import kotlin.reflect.KFunction
import kotlin.reflect.jvm.javaMethod
import org.jetbrains.kotlinx.lincheck.Actor
import org.jetbrains.lincheck.datastructures.ModelCheckingOptions
import org.jetbrains.lincheck.datastructures.Options
import org.jetbrains.lincheck.datastructures.StressOptions
import org.junit.jupiter.api.Test

/**
 * The base of every Lincheck test in this module: one test class per configuration of a primitive
 * (`Semaphore2LincheckTest`, ...), each checked twice against its sequential specification:
 * - [modelCheckingTest] runs each scenario under Lincheck's model checker, which explores thread
 *   interleavings systematically (switching threads at shared-memory accesses, lock operations and
 *   coroutine suspensions), so a race of two or three steps is found deterministically;
 * - [stressTest] runs the same kind of scenarios on real threads, which checks the code without
 *   Lincheck's instrumentation in the way.
 *
 * A subclass declares the operations (`@Operation`) and the sequential specification, and tunes
 * both modes through the `customize` hooks (custom scenarios, smaller scenarios, validation).
 *
 * Model checking coroutine code costs a few milliseconds per invocation here, so every budget is
 * explicit. The default keeps the whole module within a few minutes on two cores; with
 * `-Dlincheck.deep=true` ([DEEP]) every test explores many more scenarios and interleavings.
 */
abstract class AbstractLincheckTest {

    /** Settings common to both modes: the sequential specification, custom scenarios, sizes. */
    protected open fun <O : Options<O, *>> O.customize(): O = this

    /** Settings for the model checker only. */
    protected open fun ModelCheckingOptions.customizeModelChecking(): ModelCheckingOptions = this

    /** Settings for the stress mode only. */
    protected open fun StressOptions.customizeStress(): StressOptions = this

    @Test
    fun modelCheckingTest() {
        modelCheckingOptions().check(this::class)
    }

    @Test
    fun stressTest() {
        stressOptions().check(this::class)
    }

    /**
     * The model checker's settings of [modelCheckingTest], for running them on another class too;
     * [quick]: the fewer scenarios of the quick build (see [QUICK]).
     */
    fun modelCheckingOptions(quick: Boolean = QUICK): ModelCheckingOptions =
        ModelCheckingOptions()
            .iterations(if (DEEP) 50 else if (quick) 4 else 12)
            .invocationsPerIteration(if (DEEP) 2_000 else if (quick) 250 else 400)
            .threads(3)
            .actorsPerThread(2)
            .actorsBefore(2)
            .actorsAfter(2)
            .customize()
            .customizeModelChecking()

    /** The stress mode's settings of [stressTest]; [quick] as in [modelCheckingOptions]. */
    fun stressOptions(quick: Boolean = QUICK): StressOptions =
        StressOptions()
            .iterations(if (DEEP) 50 else if (quick) 6 else 15)
            .invocationsPerIteration(if (DEEP) 5_000 else if (quick) 500 else 1_000)
            .threads(3)
            .actorsPerThread(3)
            .actorsBefore(2)
            .actorsAfter(2)
            .customize()
            .customizeStress()

    companion object {
        /**
         * `-Dlincheck.deep=true`: explore many more scenarios and interleavings (minutes, not
         * seconds).
         */
        @JvmStatic val DEEP: Boolean = System.getProperty("lincheck.deep").toBoolean()

        /**
         * Set by the quick build (the README's test command, without `-Dfull`): fewer scenarios of
         * the same sizes, so that the quick set stays within its minute; `-Dfull` runs the rest.
         */
        @JvmStatic val QUICK: Boolean = System.getProperty("handoff.quick").toBoolean()
    }
}

/**
 * An actor for a custom scenario that Lincheck cancels as soon as it suspends, by default with
 * prompt cancellation (it may be cancelled after it was resumed, before it returns); with `prompt =
 * false` a cancellation that comes after the resumption fails and the call completes. The scenario
 * DSL has no such flags, so the actor is built directly.
 */
internal fun cancelledOnSuspension(
    function: KFunction<*>,
    vararg arguments: Any?,
    prompt: Boolean = true,
): Actor =
    Actor(
        method = requireNotNull(function.javaMethod) { "$function is not a method" },
        arguments = arguments.toList(),
        cancelOnSuspension = true,
        promptCancellation = prompt,
    )

/**
 * Runs a release or an unlock; `false` if it threw IllegalStateException (an over-release, or an
 * unlock the caller may not make: refused, nothing changed), `true` otherwise.
 */
internal inline fun accepted(call: () -> Unit): Boolean =
    try {
        call()
        true
    } catch (refused: IllegalStateException) {
        false
    }
