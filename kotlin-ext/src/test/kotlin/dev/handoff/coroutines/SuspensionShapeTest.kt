// SPDX-License-Identifier: Apache-2.0
package dev.handoff.coroutines

import kotlin.test.assertFalse
import kotlin.test.assertNotNull
import org.junit.jupiter.api.Test
import org.junit.jupiter.api.assertThrows

/**
 * The shape of the suspending slow path in the bytecode, which decides what a suspension allocates
 * besides the node and kotlinx's own objects: no state machine in [ContinuationAcquisition.await]
 * or in the suspension it calls, and the permits passed to that suspension as a primitive. These
 * are facts about the compiled classes, not timings; a boxed `Long` is 24 bytes per suspension
 * whenever the JIT does not eliminate it, which varied from one JVM to the next (176 or 200 B per
 * acquisition in workload 3, fork by fork).
 */
class SuspensionShapeTest {
    private val node = "dev/handoff/coroutines/ContinuationAcquisition"

    @Test
    fun awaitAndItsSuspensionHaveNoStateMachine() {
        assertNotNull(Class.forName(node.replace('/', '.')))
        for (frame in listOf("await", "suspendOn")) {
            assertThrows<ClassNotFoundException>("$frame got a state machine class") {
                Class.forName("${node.replace('/', '.')}\$$frame\$1")
            }
        }
    }

    @Test
    fun permitsReachTheSuspensionUnboxed() {
        val bytes =
            assertNotNull(javaClass.classLoader.getResourceAsStream("$node.class")).use {
                it.readBytes()
            }
        val constants = String(bytes, Charsets.ISO_8859_1)
        assertFalse(
            "boxLong" in constants,
            "ContinuationAcquisition boxes a Long (kotlin.coroutines Boxing.boxLong)",
        )
        // Long.valueOf or any other method returning or taking a boxed Long has this in its
        // descriptor
        assertFalse(
            "Ljava/lang/Long;" in constants,
            "ContinuationAcquisition passes a boxed Long somewhere",
        )
    }
}
