// SPDX-License-Identifier: Apache-2.0
package dev.handoff.ktor

import dev.handoff.edge.AdmissionControl
import io.ktor.server.application.ApplicationCall
import io.ktor.server.application.install
import io.ktor.server.engine.EmbeddedServer
import io.ktor.server.engine.embeddedServer
import io.ktor.server.netty.Netty
import io.ktor.server.netty.NettyApplicationEngine
import io.ktor.server.response.respondBytesWriter
import io.ktor.server.response.respondOutputStream
import io.ktor.server.response.respondText
import io.ktor.server.routing.Routing
import io.ktor.server.routing.get
import io.ktor.server.routing.routing
import io.ktor.utils.io.writeStringUtf8
import java.io.BufferedReader
import java.io.InputStream
import java.io.InputStreamReader
import java.net.URI
import java.net.http.HttpClient
import java.net.http.HttpRequest
import java.net.http.HttpResponse
import java.net.http.HttpTimeoutException
import java.time.Duration
import java.util.concurrent.CompletionException
import java.util.concurrent.CountDownLatch
import java.util.concurrent.TimeUnit
import java.util.concurrent.atomic.AtomicInteger
import kotlinx.coroutines.CancellationException
import kotlinx.coroutines.delay
import kotlinx.coroutines.future.await
import kotlinx.coroutines.runBlocking
import kotlinx.coroutines.runInterruptible
import org.junit.jupiter.api.Assertions.assertEquals
import org.junit.jupiter.api.Assertions.assertTrue
import org.junit.jupiter.api.Test

/** The plugin on a real Netty engine (port 0), called by the JDK's HTTP client. */
class NettyAdmissionTest {

    private val http: HttpClient =
        HttpClient.newBuilder()
            .version(HttpClient.Version.HTTP_1_1)
            .connectTimeout(Duration.ofSeconds(5))
            .build()

    private fun serve(
        gate: AdmissionControl<ApplicationCall>,
        routes: Routing.() -> Unit,
        test: suspend (port: Int) -> Unit,
    ) {
        val server: EmbeddedServer<NettyApplicationEngine, NettyApplicationEngine.Configuration> =
            embeddedServer(Netty, port = 0) {
                    routing {
                        install(AdmissionGate) { control = gate }
                        routes()
                    }
                }
                .start(wait = false)
        try {
            runBlocking { test(server.engine.resolvedConnectors().first().port) }
        } finally {
            server.stop(0, 2_000)
        }
    }

    private fun get(port: Int, path: String, timeout: Duration = Duration.ofSeconds(20)) =
        HttpRequest.newBuilder(URI.create("http://127.0.0.1:$port$path")).timeout(timeout).build()

    @Test
    fun aStreamedResponseHoldsItsPermitsUntilItsLastByte() {
        streamHoldsUntilLastByte("/output-stream")
        streamHoldsUntilLastByte("/bytes-writer")
    }

    private fun streamHoldsUntilLastByte(path: String) {
        val gate = gate(1)
        val lastLine = CountDownLatch(1)
        serve(
            gate,
            {
                get("/output-stream") {
                    call.respondOutputStream {
                        write("first\n".toByteArray())
                        flush()
                        lastLine.await(20, TimeUnit.SECONDS)
                        write("last\n".toByteArray())
                    }
                }
                get("/bytes-writer") {
                    call.respondBytesWriter {
                        writeStringUtf8("first\n")
                        flush()
                        runInterruptible { lastLine.await(20, TimeUnit.SECONDS) }
                        writeStringUtf8("last\n")
                    }
                }
            },
        ) { port ->
            val response =
                http.sendAsync(get(port, path), HttpResponse.BodyHandlers.ofInputStream()).await()
            BufferedReader(InputStreamReader(response.body())).use { body ->
                assertEquals("first", body.readLine())
                assertEquals(0, gate.available, "held while the response streams")
                lastLine.countDown()
                assertEquals("last", body.readLine())
                assertEquals(null, body.readLine())
            }
            gate.allBack()
        }
    }

    /**
     * Clients that give up (a request timeout closes the connection) while their call runs or
     * waits: every call's permits come back, and the server still serves at full capacity
     * afterwards.
     */
    @Test
    fun clientsThatGiveUpLeaveNoPermitBehind() {
        val gate = gate(2, maxWait = Duration.ofSeconds(5))
        val cancelled = AtomicInteger()
        serve(
            gate,
            {
                get("/slow") {
                    try {
                        delay(100)
                        call.respondText("slow")
                    } catch (e: CancellationException) {
                        cancelled.incrementAndGet()
                        throw e
                    }
                }
                get("/ok") { call.respondText("ok") }
            },
        ) { port ->
            val requests =
                (1..CALLS).map {
                    http.sendAsync(
                        get(port, "/slow", Duration.ofMillis(50)),
                        HttpResponse.BodyHandlers.ofString(),
                    )
                }
            var timedOut = 0
            for (r in requests) {
                try {
                    r.await()
                } catch (e: HttpTimeoutException) {
                    timedOut++
                } catch (e: CompletionException) {
                    if (e.cause is HttpTimeoutException) timedOut++ else throw e
                }
            }
            assertEquals(CALLS, timedOut, "every client gave up")
            gate.allBack()
            println("clients gave up: $CALLS, handlers cancelled: ${cancelled.get()}")
            val after =
                (1..4).map {
                    http.sendAsync(get(port, "/ok"), HttpResponse.BodyHandlers.ofString())
                }
            after.forEach { assertEquals("ok", it.await().body()) }
            gate.allBack()
        }
    }

    /** Hundreds of calls over real connections, some shed, some cancelled: no permit leaks. */
    @Test
    fun manyCallsOverRealConnectionsLeaveEveryPermitBack() {
        val gate = gate(4, maxWait = Duration.ofMillis(30))
        serve(
            gate,
            {
                get("/ok") { call.respondText("ok") }
                get("/boom") { throw IllegalStateException("boom") }
                get("/stream") {
                    call.respondOutputStream {
                        repeat(8) {
                            write(ByteArray(1024))
                            flush()
                        }
                    }
                }
                get("/slow") {
                    delay(20)
                    call.respondText("slow")
                }
            },
        ) { port ->
            val paths = listOf("/ok", "/boom", "/stream", "/slow")
            val statuses = java.util.concurrent.ConcurrentHashMap<Int, AtomicInteger>()
            val requests =
                (0 until VOLUME).map { i ->
                    val timeout = if (i % 7 == 0) Duration.ofMillis(10) else Duration.ofSeconds(20)
                    http
                        .sendAsync(
                            get(port, paths[i % paths.size], timeout),
                            HttpResponse.BodyHandlers.ofInputStream(),
                        )
                        .thenApply { r ->
                            r.body().use(InputStream::readAllBytes)
                            r.statusCode()
                        }
                        .exceptionally { -1 }
                }
            for (r in requests) statuses
                .computeIfAbsent(r.await()) { AtomicInteger() }
                .incrementAndGet()
            gate.allBack()
            assertTrue(statuses.keys.all { it in setOf(-1, 200, 500, 503) }, "statuses: $statuses")
            assertTrue((statuses[200]?.get() ?: 0) > 0, "statuses: $statuses")
        }
    }

    private companion object {
        const val CALLS = 12
        const val VOLUME = 200
    }
}
