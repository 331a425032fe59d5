// SPDX-License-Identifier: Apache-2.0
package dev.handoff.ktor

import dev.handoff.adaptive.Outcome
import dev.handoff.edge.AdmissionControl
import dev.handoff.edge.ShedReason
import io.ktor.client.request.get
import io.ktor.client.request.header
import io.ktor.client.request.prepareGet
import io.ktor.client.statement.bodyAsChannel
import io.ktor.client.statement.bodyAsText
import io.ktor.http.HttpHeaders
import io.ktor.http.HttpStatusCode
import io.ktor.server.application.ApplicationCall
import io.ktor.server.application.ApplicationCallPipeline
import io.ktor.server.application.call
import io.ktor.server.application.install
import io.ktor.server.response.respond
import io.ktor.server.response.respondBytesWriter
import io.ktor.server.response.respondText
import io.ktor.server.routing.Route
import io.ktor.server.routing.get
import io.ktor.server.routing.route
import io.ktor.server.testing.testApplication
import io.ktor.utils.io.readLine
import io.ktor.utils.io.writeStringUtf8
import java.time.Duration
import java.util.concurrent.ConcurrentLinkedQueue
import java.util.concurrent.atomic.AtomicInteger
import kotlinx.coroutines.CompletableDeferred
import kotlinx.coroutines.async
import kotlinx.coroutines.awaitAll
import kotlinx.coroutines.awaitCancellation
import kotlinx.coroutines.channels.Channel
import kotlinx.coroutines.coroutineScope
import kotlinx.coroutines.withTimeoutOrNull
import org.junit.jupiter.api.Assertions.assertEquals
import org.junit.jupiter.api.Assertions.assertTrue
import org.junit.jupiter.api.Test
import org.junit.jupiter.api.assertThrows

/**
 * Two routes behind a gate: `/hold` holds its permits until [done] (once [holding]), `/count`
 * counts its runs in [ran].
 */
private data class HoldAndCount(
    val ran: AtomicInteger = AtomicInteger(),
    val holding: CompletableDeferred<Unit> = CompletableDeferred(),
    val done: CompletableDeferred<Unit> = CompletableDeferred(),
) {
    fun install(routes: Route, gate: AdmissionControl<ApplicationCall>) {
        routes.install(AdmissionGate) { control = gate }
        routes.get("/hold") {
            holding.complete(Unit)
            done.await()
            call.respondText("held")
        }
        routes.get("/count") {
            ran.incrementAndGet()
            call.respondText("ran")
        }
    }
}

/**
 * The plugin on Ktor's test engine: admission, shedding, waiting, streaming, failures, fairness.
 */
class AdmissionGateTest {

    @Test
    fun admittedCallsRunAndGiveTheirPermitsBack(): Unit = testApplication {
        val gate = gate(2)
        val statuses = ConcurrentLinkedQueue<HttpStatusCode>()
        routing {
            install(AdmissionGate) {
                control = gate
                outcome = { status ->
                    statuses.add(status)
                    defaultOutcome(status)
                }
            }
            get("/ok") { call.respondText("ok") }
            get("/missing") { call.respond(HttpStatusCode.NotFound, "no") }
        }
        assertEquals("ok", client.get("/ok").bodyAsText())
        assertEquals(HttpStatusCode.NotFound, client.get("/missing").status)
        gate.allBack()
        assertEquals(listOf(HttpStatusCode.OK, HttpStatusCode.NotFound), statuses.toList())
    }

    @Test
    fun aShedCallIsAnswered503WithRetryAfterAndItsHandlerNeverRuns(): Unit = testApplication {
        val gate = gate(1, maxWait = Duration.ZERO, retryAfter = Duration.ofMillis(1500))
        val routes = HoldAndCount()
        routing { routes.install(this, gate) }
        val (ran, holding, done) = routes
        coroutineScope {
            val held = async { client.get("/hold") }
            holding.await()
            val shed = client.get("/count")
            assertEquals(HttpStatusCode.ServiceUnavailable, shed.status)
            assertEquals("2", shed.headers[HttpHeaders.RetryAfter])
            assertEquals(0, ran.get(), "the shed call's handler never ran")
            assertEquals(1, gate.shedCount(ShedReason.QUEUE_FULL))
            done.complete(Unit)
            assertEquals("held", held.await().bodyAsText())
        }
        assertEquals("ran", client.get("/count").bodyAsText())
        assertEquals(1, ran.get())
        gate.allBack()
    }

    @Test
    fun aCallThatWaitsTooLongIsShedAsTimedOut(): Unit = testApplication {
        val gate = gate(1, maxWait = Duration.ofMillis(20))
        val routes = HoldAndCount()
        routing { routes.install(this, gate) }
        val (ran, holding, done) = routes
        coroutineScope {
            val held = async { client.get("/hold") }
            holding.await()
            val shed = client.get("/count")
            assertEquals(HttpStatusCode.ServiceUnavailable, shed.status)
            assertEquals("1", shed.headers[HttpHeaders.RetryAfter])
            assertEquals(1, gate.shedCount(ShedReason.TIMED_OUT))
            assertEquals(0, ran.get())
            done.complete(Unit)
            held.await()
        }
        gate.allBack()
    }

    @Test
    fun aWaitingCallIsAdmittedWhenAnotherEnds(): Unit = testApplication {
        val gate = gate(1)
        val holding = CompletableDeferred<Unit>()
        val done = CompletableDeferred<Unit>()
        routing {
            install(AdmissionGate) { control = gate }
            get("/hold") {
                holding.complete(Unit)
                done.await()
                call.respondText("first")
            }
            get("/next") { call.respondText("second") }
        }
        coroutineScope {
            val first = async { client.get("/hold") }
            holding.await()
            val second = async { client.get("/next") }
            eventually("the second call waits") { gate.waiting == 1 }
            assertTrue(second.isActive)
            done.complete(Unit)
            assertEquals("first", first.await().bodyAsText())
            assertEquals("second", second.await().bodyAsText())
        }
        gate.allBack()
    }

    /**
     * Ktor's test engine writes a streamed body in a coroutine of its own, after the handler
     * returns: here the permits only come back exactly once. That they are held until the last byte
     * is [NettyAdmissionTest]'s to check, on an engine that writes the body as the response is
     * sent.
     */
    @Test
    fun aStreamedResponseGivesItsPermitsBack(): Unit = testApplication {
        val gate = gate(1)
        val lastLine = CompletableDeferred<Unit>()
        routing {
            install(AdmissionGate) { control = gate }
            get("/stream") {
                call.respondBytesWriter {
                    writeStringUtf8("first\n")
                    flush()
                    lastLine.await()
                    writeStringUtf8("last\n")
                }
            }
        }
        client.prepareGet("/stream").execute { response ->
            val body = response.bodyAsChannel()
            assertEquals("first", body.readLine())
            lastLine.complete(Unit)
            assertEquals("last", body.readLine())
            assertEquals(null, body.readLine())
        }
        gate.allBack()
    }

    @Test
    fun aHandlerThatThrowsGivesItsPermitsBack(): Unit = testApplication {
        val gate = gate(1)
        val statuses = AtomicInteger()
        routing {
            install(AdmissionGate) {
                control = gate
                outcome = {
                    statuses.incrementAndGet()
                    Outcome.SUCCESS
                }
            }
            get("/boom") { throw IllegalStateException("boom") }
        }
        repeat(3) { assertEquals(HttpStatusCode.InternalServerError, client.get("/boom").status) }
        gate.allBack()
        assertEquals(0, statuses.get(), "released with the exception, not a status")
    }

    /**
     * An interceptor before the gate gives each call a deadline (`X-Deadline`, ms): one call is
     * cancelled while it waits for the permit, another while its handler runs. Neither holds
     * anything afterwards, and the one cancelled while waiting never ran.
     */
    @Test
    fun aCallCancelledWhileItWaitsOrRunsHoldsNothing(): Unit = testApplication {
        val gate = gate(1)
        val ran = AtomicInteger()
        val holding = CompletableDeferred<Unit>()
        val done = CompletableDeferred<Unit>()
        application {
            intercept(ApplicationCallPipeline.Plugins) {
                val deadline = call.request.headers["X-Deadline"]?.toLong() ?: 60_000
                if (withTimeoutOrNull(deadline) { proceed() } == null) {
                    call.respond(HttpStatusCode.GatewayTimeout)
                    finish()
                }
            }
        }
        routing {
            install(AdmissionGate) { control = gate }
            get("/hold") {
                ran.incrementAndGet()
                holding.complete(Unit)
                done.await()
                call.respondText("held")
            }
            get("/hang") {
                ran.incrementAndGet()
                awaitCancellation()
            }
        }
        coroutineScope {
            val held = async { client.get("/hold") }
            holding.await()
            val waited = client.get("/hold") { header("X-Deadline", "50") }
            assertEquals(HttpStatusCode.GatewayTimeout, waited.status)
            assertEquals(0, gate.waiting, "the wait was withdrawn")
            assertEquals(1, ran.get(), "the call cancelled while waiting never ran")
            done.complete(Unit)
            assertEquals("held", held.await().bodyAsText())
        }
        val hung = client.get("/hang") { header("X-Deadline", "50") }
        assertEquals(HttpStatusCode.GatewayTimeout, hung.status)
        assertEquals(2, ran.get())
        gate.allBack()
        assertEquals(0, gate.shedCount(ShedReason.TIMED_OUT))
    }

    @Test
    fun anOutcomeOfRejectedIsRefusedAndStillReleases(): Unit = testApplication {
        val gate = gate(1)
        routing {
            install(AdmissionGate) {
                control = gate
                outcome = { Outcome.REJECTED }
            }
            get("/ok") { call.respondText("ok") }
        }
        client.get("/ok")
        gate.allBack()
    }

    @Test
    fun installingWithoutAGateFailsNamingTheSetting() {
        val e =
            assertThrows<IllegalStateException> {
                testApplication {
                    routing { install(AdmissionGate) {} }
                    client.get("/")
                }
            }
        assertTrue(e.message!!.contains("control is not set"), e.message)
    }

    @Test
    fun eachRouteIsGovernedByItsInnermostInstallation(): Unit = testApplication {
        val outer = gate(4)
        val inner = gate(1)
        val seen = Channel<Pair<Long, Long>>(Channel.UNLIMITED)
        routing {
            install(AdmissionGate) { control = outer }
            get("/a") {
                seen.send(outer.available to inner.available)
                call.respondText("a")
            }
            route("/upload") {
                install(AdmissionGate) { control = inner }
                get {
                    seen.send(outer.available to inner.available)
                    call.respondText("upload")
                }
            }
        }
        client.get("/a")
        assertEquals(3L to 1L, seen.receive())
        client.get("/upload")
        assertEquals(4L to 0L, seen.receive())
        outer.allBack()
        inner.allBack()
    }

    /**
     * Tenant A floods a gate of capacity 1 with [FLOOD] calls; tenant B sends one call behind that
     * backlog. The handlers run one at a time, in the order the gate admits them: B's call must run
     * after at most one more of A's (the fair share alternates between busy keys), not behind A's
     * whole backlog.
     */
    @Test
    fun aFloodFromOneTenantDoesNotDelayAnother(): Unit = testApplication {
        val gate = tenantGate(1)
        val order = ConcurrentLinkedQueue<String>()
        val tickets = Channel<Unit>(Channel.UNLIMITED)
        routing {
            install(AdmissionGate) { control = gate }
            get("/work/{id}") {
                order.add(call.parameters["id"]!!)
                tickets.receive()
                call.respondText("done")
            }
        }
        coroutineScope {
            val flood =
                (1..FLOOD).map { i ->
                    async { client.get("/work/A$i") { header("X-Tenant", "A") } }
                }
            eventually("A's backlog queued") { order.size == 1 && gate.waiting == FLOOD - 1 }
            val b = async { client.get("/work/B") { header("X-Tenant", "B") } }
            eventually("B queued behind A's backlog") { gate.waiting == FLOOD }
            repeat(FLOOD + 1) { tickets.send(Unit) }
            (flood + b).awaitAll().forEach { assertEquals(HttpStatusCode.OK, it.status) }
        }
        val ran = order.toList()
        val running = ran.first() // admitted before B came
        val bAt = ran.indexOf("B")
        val aheadOfB = ran.subList(1, bAt).filter { it != running }
        assertTrue(
            aheadOfB.size <= 1,
            "B waited for ${aheadOfB.size} of A's ${FLOOD - 1} queued calls: $ran",
        )
        gate.allBack()
    }

    private companion object {
        const val FLOOD = 20
    }
}
