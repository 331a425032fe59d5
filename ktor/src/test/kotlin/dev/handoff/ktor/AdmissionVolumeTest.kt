// SPDX-License-Identifier: Apache-2.0
package dev.handoff.ktor

import io.ktor.client.request.get
import io.ktor.client.request.prepareGet
import io.ktor.client.statement.bodyAsChannel
import io.ktor.http.HttpStatusCode
import io.ktor.server.application.install
import io.ktor.server.response.respondBytesWriter
import io.ktor.server.response.respondText
import io.ktor.server.routing.get
import io.ktor.server.testing.testApplication
import io.ktor.utils.io.readRemaining
import io.ktor.utils.io.writeFully
import java.time.Duration
import java.util.concurrent.ConcurrentHashMap
import java.util.concurrent.atomic.AtomicInteger
import kotlinx.coroutines.coroutineScope
import kotlinx.coroutines.delay
import kotlinx.coroutines.launch
import kotlinx.coroutines.withTimeoutOrNull
import kotlinx.coroutines.yield
import org.junit.jupiter.api.Assertions.assertEquals
import org.junit.jupiter.api.Assertions.assertTrue
import org.junit.jupiter.api.Test

/**
 * Ten thousand calls (or as many as fit in [BUDGET]) through a small gate, every way a call can end
 * mixed in: a response, a streamed response, an exception, a shed, a client that gives up. At the
 * end the capacity is full again and nothing waits.
 */
class AdmissionVolumeTest {

    @Test
    fun noPermitLeaksAcrossThousandsOfCalls(): Unit = testApplication {
        val gate = gate(4, maxWait = Duration.ofMillis(5))
        routing {
            install(AdmissionGate) { control = gate }
            get("/ok") { call.respondText("ok") }
            get("/boom") { throw IllegalStateException("boom") }
            get("/slow") {
                delay(1)
                call.respondText("slow")
            }
            get("/stream") {
                call.respondBytesWriter {
                    repeat(4) {
                        writeFully(ByteArray(256))
                        flush()
                        yield()
                    }
                }
            }
        }
        val paths = listOf("/ok", "/boom", "/slow", "/stream", "/slow")
        val statuses = ConcurrentHashMap<Int, AtomicInteger>()
        val started = AtomicInteger()
        val deadline = System.nanoTime() + BUDGET.toNanos()
        // -Dfull: 10,000 calls; the quick build (the README's test command) 3,000
        val calls = if (System.getProperty("handoff.quick").toBoolean()) 3_000 else CALLS
        coroutineScope {
            repeat(WORKERS) { w ->
                launch {
                    while (System.nanoTime() < deadline) {
                        val i = started.getAndIncrement()
                        if (i >= calls) break
                        val path = paths[(i + w) % paths.size]
                        val status =
                            if (i % 11 == 0) {
                                withTimeoutOrNull(1) {
                                    client.prepareGet(path).execute { r ->
                                        r.bodyAsChannel().readRemaining()
                                        r.status.value
                                    }
                                } ?: -1
                            } else {
                                client.get(path).status.value
                            }
                        statuses.computeIfAbsent(status) { AtomicInteger() }.incrementAndGet()
                    }
                }
            }
        }
        gate.allBack()
        val total = statuses.values.sumOf { it.get() }
        println("calls: $total in at most $BUDGET, by status: $statuses")
        assertTrue(total >= 1_000, "too few calls to mean anything: $total")
        assertTrue(statuses.keys.all { it in setOf(-1, 200, 500, 503) }, "statuses: $statuses")
        assertTrue((statuses[HttpStatusCode.OK.value]?.get() ?: 0) > 0, "statuses: $statuses")
        assertEquals(4, gate.available)
    }

    private companion object {
        const val CALLS = 10_000
        const val WORKERS = 32
        val BUDGET: Duration = Duration.ofSeconds(8)
    }
}
