// SPDX-License-Identifier: Apache-2.0
package dev.handoff.coroutines

import kotlin.test.assertEquals
import kotlin.test.assertTrue
import kotlin.test.fail
import org.junit.jupiter.api.Test

/**
 * Proves which kotlinx-coroutines the suite runs on. kotlin-ext is compiled against the oldest
 * supported release (`kotlinx.coroutines.oldest.version`), and its pom runs the whole suite twice
 * in `verify`: in `default-test` on the pom's `kotlinx.coroutines.version`, whose jars it puts in
 * place of the compile-time ones, and in `kotlinx-oldest` on the oldest supported release. Each
 * execution names the version it means in the system property `handoff.expectedKotlinx`.
 */
class KotlinxVersionTest {

    private val expected: String =
        System.getProperty("handoff.expectedKotlinx")
            ?: fail(
                "handoff.expectedKotlinx is not set: run through Maven (kotlin-ext/pom.xml sets it for each " +
                    "test execution), or pass -Dhandoff.expectedKotlinx=<version>"
            )

    @Test
    fun `runs on the kotlinx-coroutines-core this execution names`() {
        assertEquals(
            expected,
            KotlinxOnClasspath.coreVersion(),
            "kotlinx-coroutines-core on the test classpath",
        )
    }

    @Test
    fun `runs on the kotlinx-coroutines-test this execution names`() {
        assertEquals(
            expected,
            KotlinxOnClasspath.testVersion(),
            "kotlinx-coroutines-test on the test classpath",
        )
    }

    @Test
    fun `exactly one copy of kotlinx-coroutines classes is on the classpath`() {
        for (resource in
            listOf(
                "kotlinx/coroutines/CancellableContinuation.class",
                "kotlinx/coroutines/test/TestScope.class",
            )) {
            val holders = KotlinxOnClasspath.locationsOf(resource)
            assertEquals(1, holders.size, "places holding $resource: $holders")
        }
    }

    @Test
    fun `the loaded kotlinx has the public three-argument resume the adapter relies on`() {
        assertTrue(
            KotlinxOnClasspath.hasResumeWithContext(),
            "CancellableContinuation.resume(value, (cause, value, context) -> Unit) is missing from kotlinx " +
                "${KotlinxOnClasspath.coreVersion()}; it is public API since 1.9.0",
        )
    }
}
