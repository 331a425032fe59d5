// SPDX-License-Identifier: Apache-2.0
package dev.handoff.coroutines

import dev.handoff.Semaphore
import java.io.File
import java.nio.file.Path
import kotlin.test.assertEquals
import kotlin.test.assertTrue
import org.jetbrains.kotlin.cli.common.ExitCode
import org.jetbrains.kotlin.cli.common.messages.CompilerMessageSeverity
import org.jetbrains.kotlin.cli.common.messages.CompilerMessageSourceLocation
import org.jetbrains.kotlin.cli.common.messages.MessageCollector
import org.jetbrains.kotlin.cli.jvm.K2JVMCompiler
import org.jetbrains.kotlin.config.Services
import org.junit.jupiter.api.BeforeAll
import org.junit.jupiter.api.Test
import org.junit.jupiter.api.TestInstance
import org.junit.jupiter.api.io.TempDir

/**
 * The traps of the old naming do not compile any more (CONTRACT §8: the suffix names the face).
 *
 * With the Java callback faces named `acquire(n, waker)`, `lock(waker)`, `readLock(waker)` and
 * `writeLock(waker)`, Kotlin's SAM conversion made `sem.acquire(5) { }` or `mutex.lock { }` compile
 * as a callback that runs on grant or close and never releases; and `tryAcquire(n,
 * java.time.Duration)` parked a coroutine's thread where `tryAcquire(n, kotlin.time.Duration)`
 * suspends. Each trap here is compiled with the embedded Kotlin compiler against this module and
 * the core as they are built, and must fail; its twin, the same source with the correct call on the
 * same line, must compile, so a trap cannot "fail" for an unrelated reason (a missing import, a
 * classpath without the core). The explicit callback faces (`acquireThen`, `lockThen`, ...) still
 * take a trailing lambda: that is what they are for.
 *
 * Two compilations (all traps together, then all twins), each a few seconds.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class SuffixNamingCompileTest {

    /**
     * One place where a wrong call once compiled: the [trap] and the [correct] call on line [HOLE].
     */
    private class Case(
        val name: String,
        val template: String,
        val trap: String,
        val correct: String,
    ) {
        fun source(call: String): String {
            check(template.lines().indexOfFirst { HOLE_MARK in it } + 1 == HOLE) {
                "$name: the hole is not on line $HOLE"
            }
            return template.replace(HOLE_MARK, call)
        }
    }

    private val cases =
        listOf(
            Case(
                "AcquireWithLambda",
                inCoroutine("AcquireWithLambda", "sem: Semaphore"),
                trap = "sem.acquire(5) { println(\"never released\") }",
                correct = "sem.withPermits(5) { println(\"released\") }",
            ),
            Case(
                "MutexLockWithLambda",
                inCoroutine("MutexLockWithLambda", "mutex: Mutex"),
                trap = "mutex.lock { println(\"never unlocked\") }",
                correct = "mutex.withLock { println(\"unlocked\") }",
            ),
            Case(
                "ReadLockWithLambda",
                inCoroutine("ReadLockWithLambda", "rw: RwLock"),
                trap = "rw.readLock { println(\"never unlocked\") }",
                correct = "rw.withReadLock { println(\"unlocked\") }",
            ),
            Case(
                "WriteLockWithLambda",
                inCoroutine("WriteLockWithLambda", "rw: RwLock"),
                trap = "rw.writeLock { println(\"never unlocked\") }",
                correct = "rw.withWriteLock { println(\"unlocked\") }",
            ),
            Case(
                "TryAcquireJavaDuration",
                inSuspendFunction("TryAcquireJavaDuration", "sem: Semaphore"),
                trap = "if (sem.tryAcquire(1, java.time.Duration.ofSeconds(1))) sem.release(1)",
                correct = "if (sem.tryAcquire(1, 1.seconds)) sem.release(1)",
            ),
            // JSpecify (strict): the core's nullable results are nullable types, not platform types
            Case(
                "FailureIsNullable",
                inSuspendFunction("FailureIsNullable", "a: Acquisition"),
                trap = "val cause: Throwable = a.failure(); println(cause)",
                correct = "val cause: Throwable? = a.failure(); println(cause)",
            ),
            Case(
                "NameIsNullable",
                inSuspendFunction("NameIsNullable", "sem: Semaphore"),
                trap = "val name: String = sem.name(); println(name.length)",
                correct = "val name: String = sem.name() ?: \"unnamed\"; println(name.length)",
            ),
        )

    /**
     * The explicit faces: a trailing lambda is a callback, and `Blocking` parks; all must compile.
     */
    private val explicitFaces =
        """
        package check

        import dev.handoff.*
        import java.time.Duration

        fun callbacks(sem: Semaphore, mutex: Mutex, rw: RwLock) {
            sem.acquireThen(5) { sem.release(5) }
            mutex.lockThen { mutex.unlock() }
            rw.readLockThen { rw.readUnlock() }
            rw.writeLockThen { rw.writeUnlock() }
        }

        fun blocking(sem: Semaphore, mutex: Mutex) {
            if (sem.tryAcquireBlocking(1, Duration.ofSeconds(1))) sem.release(1)
            sem.acquireBlocking(2).use { held -> println(held.permits()) }
            if (mutex.tryLockBlocking(Duration.ofSeconds(1))) mutex.unlock()
        }
        """
            .trimIndent()

    private lateinit var trapErrors: Map<String, List<Message>>
    private lateinit var trapExit: ExitCode
    private lateinit var correctErrors: List<Message>
    private lateinit var correctExit: ExitCode

    @BeforeAll
    fun compileBoth(@TempDir dir: Path) {
        val traps = cases.map { write(dir.resolve("traps"), it.name, it.source(it.trap)) }
        val trapRun = compile(traps, dir.resolve("traps-out"))
        trapExit = trapRun.first
        trapErrors = trapRun.second.groupBy { File(it.path ?: "?").name.removeSuffix(".kt") }

        val twins =
            cases.map { write(dir.resolve("twins"), it.name, it.source(it.correct)) } +
                write(dir.resolve("twins"), "ExplicitFaces", explicitFaces)
        val twinRun = compile(twins, dir.resolve("twins-out"))
        correctExit = twinRun.first
        correctErrors = twinRun.second
    }

    @Test
    fun `the correct forms and the explicit faces compile, so the traps fail for their own reason`() {
        assertEquals(emptyList(), correctErrors.map { it.toString() })
        assertEquals(ExitCode.OK, correctExit)
    }

    @Test
    fun `sem acquire(5) { } in a coroutine does not compile`() =
        assertTrapFails("AcquireWithLambda")

    @Test
    fun `mutex lock { } in a coroutine does not compile`() = assertTrapFails("MutexLockWithLambda")

    @Test
    fun `rw readLock { } in a coroutine does not compile`() = assertTrapFails("ReadLockWithLambda")

    @Test
    fun `rw writeLock { } in a coroutine does not compile`() =
        assertTrapFails("WriteLockWithLambda")

    @Test fun `a nullable failure() is not a Throwable`() = assertTrapFails("FailureIsNullable")

    @Test fun `a nullable name() is not a String`() = assertTrapFails("NameIsNullable")

    @Test
    fun `tryAcquire(n, java time Duration) in a suspend function does not compile`() =
        assertTrapFails("TryAcquireJavaDuration")

    /**
     * The trap's file has errors, all of them on the trap's line (its twin compiles: see above).
     */
    private fun assertTrapFails(name: String) {
        assertEquals(ExitCode.COMPILATION_ERROR, trapExit)
        val errors = trapErrors[name].orEmpty()
        assertTrue(errors.isNotEmpty(), "$name compiled: ${cases.single { it.name == name }.trap}")
        val elsewhere = errors.filter { it.line != HOLE }
        assertEquals(
            emptyList(),
            elsewhere.map { it.toString() },
            "$name: errors off the trap's line",
        )
    }

    private data class Message(val path: String?, val line: Int, val text: String) {
        override fun toString(): String = "${path?.let { File(it).name }}:$line: $text"
    }

    /**
     * Compiles [sources] against this module's test classpath; returns the exit code and the
     * errors.
     */
    private fun compile(sources: List<File>, out: Path): Pair<ExitCode, List<Message>> {
        val errors = mutableListOf<Message>()
        val collector =
            object : MessageCollector {
                override fun clear() = errors.clear()

                override fun hasErrors(): Boolean = errors.isNotEmpty()

                override fun report(
                    severity: CompilerMessageSeverity,
                    message: String,
                    location: CompilerMessageSourceLocation?,
                ) {
                    if (severity.isError) {
                        errors += Message(location?.path, location?.line ?: -1, message)
                    }
                }
            }
        val compiler = K2JVMCompiler()
        val arguments = compiler.createArguments()
        compiler.parseArguments(
            arrayOf(
                "-no-stdlib",
                "-no-reflect",
                "-jvm-target",
                "17",
                "-Xjspecify-annotations=strict", // as this module's own compilation
                "-classpath",
                classpath(),
                "-d",
                out.toString(),
            ) + sources.map { it.path },
            arguments,
        )
        return compiler.exec(collector, Services.EMPTY, arguments) to errors
    }

    /**
     * Where the classes the sources use were loaded from in this run: the core and this module (as
     * built), the Kotlin stdlib and the kotlinx-coroutines of this test execution. Read from the
     * classes themselves, since surefire's `java.class.path` may be a manifest-only jar.
     */
    private fun classpath(): String =
        listOf(
                Semaphore::class.java, // handoff-core
                Class.forName("dev.handoff.coroutines.Semaphores"), // handoff-kotlin's main classes
                Unit::class.java, // kotlin-stdlib
                kotlinx.coroutines.CoroutineScope::class.java, // kotlinx-coroutines-core-jvm
                org.jspecify.annotations.NullMarked::class.java, // the core's nullness annotations
            )
            .map { File(it.protectionDomain.codeSource.location.toURI()).path }
            .distinct()
            .joinToString(File.pathSeparator)

    private fun write(dir: Path, name: String, source: String): File {
        val file = dir.resolve("$name.kt").toFile()
        file.parentFile.mkdirs()
        file.writeText(source)
        return file
    }

    private companion object {
        const val HOLE_MARK = "/*HOLE*/"

        /** The line of [HOLE_MARK] in every template (1-based). */
        const val HOLE = 9

        fun inCoroutine(name: String, parameters: String) =
            """
            package check

            import dev.handoff.*
            import dev.handoff.coroutines.*
            import kotlinx.coroutines.*
            import kotlin.time.Duration.Companion.seconds

            fun CoroutineScope.use$name($parameters): Job = launch {
                $HOLE_MARK
            }
        """
                .trimIndent()

        fun inSuspendFunction(name: String, parameters: String) =
            """
            package check

            import dev.handoff.*
            import dev.handoff.coroutines.*
            import kotlinx.coroutines.*
            import kotlin.time.Duration.Companion.seconds

            suspend fun use$name($parameters) {
                $HOLE_MARK
            }
        """
                .trimIndent()
    }
}
