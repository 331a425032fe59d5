// SPDX-License-Identifier: Apache-2.0
package dev.handoff.coroutines

import java.io.File
import java.net.URL
import java.util.jar.JarFile
import kotlin.test.assertEquals
import kotlin.test.fail
import kotlinx.coroutines.CancellableContinuation

/**
 * Which kotlinx-coroutines jars the test JVM really loaded. kotlin-ext's pom runs the same compiled
 * tests on several kotlinx releases (see the surefire executions there); this is how the tests
 * check that each execution runs on the jars it says.
 *
 * Uses the JDK and Java reflection only, so it also works on kotlinx releases the adapter does not
 * support (UnsupportedKotlinxTest runs on one).
 */
internal object KotlinxOnClasspath {

    /**
     * Every kotlinx-coroutines jar carries its version in this resource (1.8.1, 1.9.0 and 1.11.0
     * checked). The manifest's Implementation-Version is not enough: 1.9.0 and older have none.
     */
    private fun versionResource(module: String) = "META-INF/kotlinx_coroutines_$module.version"

    /**
     * The version of kotlinx-coroutines-core that `kotlinx.coroutines.CancellableContinuation` was
     * loaded from.
     */
    fun coreVersion(): String = versionOf(CancellableContinuation::class.java, "core")

    /**
     * The version of kotlinx-coroutines-test, found by name so that this object still loads where
     * that jar is not on the classpath.
     */
    fun testVersion(): String =
        versionOf(Class.forName("kotlinx.coroutines.test.TestScope"), "test")

    /**
     * Whether the loaded `CancellableContinuation` has the public `resume(value, onCancellation:
     * (cause, value, context) -> Unit)` of kotlinx 1.9.0 and later, the call the adapter is built
     * on. Checked by reflection, independently of any version string.
     */
    fun hasResumeWithContext(): Boolean =
        CancellableContinuation::class.java.methods.any {
            it.name == "resume" &&
                it.parameterTypes.contentEquals(arrayOf(Any::class.java, Function3::class.java))
        }

    /** Every jar or directory on the classpath that holds [resource]. */
    fun locationsOf(resource: String): List<URL> =
        KotlinxOnClasspath::class.java.classLoader.getResources(resource).toList()

    /**
     * The version of the kotlinx-coroutines jar that [type] was loaded from, read from the version
     * resource of that very jar. Also checks that this jar is the only one of its module on the
     * classpath, and that its manifest (where it has an Implementation-Version) and its file name
     * (where it carries one) agree.
     */
    private fun versionOf(type: Class<*>, module: String): String {
        val resource = versionResource(module)
        val holders = locationsOf(resource)
        assertEquals(1, holders.size, "jars holding $resource on the test classpath: $holders")
        val location =
            type.protectionDomain?.codeSource?.location
                ?: fail("${type.name} has no code source, cannot tell which jar it came from")
        val file = File(location.toURI())
        if (!file.isFile) {
            fail("${type.name} was loaded from $file, not from a kotlinx-coroutines-$module jar")
        }
        JarFile(file).use { jar ->
            val entry =
                jar.getJarEntry(resource)
                    ?: fail("$file, where ${type.name} comes from, has no $resource")
            val version =
                jar.getInputStream(entry).use { it.readBytes().toString(Charsets.UTF_8).trim() }
            val declared = jar.manifest?.mainAttributes?.getValue("Implementation-Version")
            if (declared != null) {
                assertEquals(version, declared, "Implementation-Version in the manifest of $file")
            }
            val named =
                Regex("""kotlinx-coroutines-$module(?:-jvm)?-(.+)\.jar""")
                    .matchEntire(file.name)
                    ?.groupValues
                    ?.get(1)
            if (named != null) {
                assertEquals(version, named, "version in the file name $file")
            }
            return version
        }
    }
}
