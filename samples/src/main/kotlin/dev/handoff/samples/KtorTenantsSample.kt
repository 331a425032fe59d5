// SPDX-License-Identifier: Apache-2.0
package dev.handoff.samples

import dev.handoff.edge.AdmissionControl
import dev.handoff.ktor.AdmissionGate
import io.ktor.server.application.ApplicationCall
import io.ktor.server.application.createApplicationPlugin
import io.ktor.server.application.install
import io.ktor.server.engine.embeddedServer
import io.ktor.server.netty.Netty
import io.ktor.server.response.respondText
import io.ktor.server.routing.get
import io.ktor.server.routing.routing
import io.ktor.util.AttributeKey
import java.net.URI
import java.net.http.HttpClient
import java.net.http.HttpRequest
import java.net.http.HttpResponse
import java.time.Duration
import java.util.concurrent.atomic.AtomicLong
import kotlinx.coroutines.CompletableDeferred
import kotlinx.coroutines.delay
import kotlinx.coroutines.future.await
import kotlinx.coroutines.runBlocking

/**
 * Sample 22: a noisy tenant kept off a polite tenant's back, over HTTP.
 *
 * A Ktor server on Netty (a free port) serves `/work`, 10 ms a call, behind the `AdmissionGate`
 * plugin: [SLOTS] calls at once. The tenant `noisy` floods it with [FLOOD] calls at once; while its
 * backlog waits, the tenant `polite` sends [POLITE] calls, one after the other. The gate is run
 * twice: keyed by the `X-Tenant` header (a fair share across tenants), then as one FIFO queue. For
 * each polite call the server counts the noisy calls that went in while it waited. Fair: at most
 * one per busy tenant (it checks at most [MAX_AHEAD]); FIFO: the whole backlog ahead.
 */
public object KtorTenantsSample {

    /** Calls served at once. */
    public const val SLOTS: Long = 4

    /** The noisy tenant's calls, sent at once. */
    public const val FLOOD: Int = 200

    /** The polite tenant's calls, sent one after the other. */
    public const val POLITE: Int = 5

    /**
     * The most noisy calls a polite call may see go in while it waits, with the fair share: one for
     * the busy tenant, plus up to [SLOTS] granted just before it arrived whose handlers had not yet
     * counted themselves. FIFO puts the whole backlog ahead of it.
     */
    public const val MAX_AHEAD: Long = SLOTS + 1

    /**
     * What one run measured: for each polite call, the noisy calls admitted while it waited; the
     * permits free and the calls waiting after the run.
     */
    public data class Figures(
        val noisyAhead: List<Long>,
        val availableAfter: Long,
        val waitingAfter: Int,
    )

    private val NOISY_AT_ARRIVAL = AttributeKey<Long>("noisyAdmittedAtArrival")

    /** Runs the flood against a gate fair across tenants ([fair]) or one FIFO queue. */
    @JvmStatic
    public fun run(fair: Boolean): Figures {
        val builder =
            AdmissionControl.builder<ApplicationCall>()
                .capacity(SLOTS)
                .maxWait(Duration.ofSeconds(30))
        if (fair) builder.key({ call -> call.request.headers["X-Tenant"] ?: "anonymous" }, { 1L })
        val gate = builder.build()
        val noisyAdmitted = AtomicLong()
        val open =
            CompletableDeferred<
                Unit
            >() // the first noisy calls hold the slots until the backlog waits
        val server =
            embeddedServer(Netty, port = 0) {
                    // Before the gate: how many noisy calls went in when this call arrived.
                    install(
                        createApplicationPlugin("Arrival") {
                            onCall { call ->
                                call.attributes.put(NOISY_AT_ARRIVAL, noisyAdmitted.get())
                            }
                        }
                    )
                    routing {
                        install(AdmissionGate) { control = gate }
                        get("/work") {
                            val ahead =
                                if (call.request.headers["X-Tenant"] == "noisy") {
                                    noisyAdmitted.incrementAndGet()
                                    open.await()
                                    0
                                } else {
                                    noisyAdmitted.get() - call.attributes[NOISY_AT_ARRIVAL]
                                }
                            delay(10) // the work
                            call.respondText(ahead.toString())
                        }
                    }
                }
                .start(wait = false)
        try {
            return runBlocking {
                val port = server.engine.resolvedConnectors().first().port
                val http = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).build()
                fun call(tenant: String) =
                    http.sendAsync(
                        HttpRequest.newBuilder(URI.create("http://127.0.0.1:$port/work"))
                            .header("X-Tenant", tenant)
                            .build(),
                        HttpResponse.BodyHandlers.ofString(),
                    )
                val flood = (1..FLOOD).map { call("noisy") }
                val queue = gate.primitive()
                while (queue.queueLength() < FLOOD - SLOTS) delay(1) // the flood's backlog waits
                val first = call("polite")
                while (queue.queueLength() < FLOOD - SLOTS + 1) delay(1) // behind it
                open.complete(Unit)
                val ahead =
                    listOf(first.await().body().toLong()) +
                        (2..POLITE).map { call("polite").await().body().toLong() }
                flood.forEach { check(it.await().statusCode() == 200) }
                Figures(ahead, free(gate), queue.queueLength())
            }
        } finally {
            server.stop(0, 2_000)
        }
    }

    private fun free(gate: AdmissionControl<ApplicationCall>): Long =
        when (val p = gate.primitive()) {
            is dev.handoff.Semaphore -> p.availablePermits()
            is dev.handoff.FairShareSemaphore<*> -> p.availablePermits()
            else -> error("unexpected primitive $p")
        }

    /** Runs both gates, prints the figures and checks them ([args] are ignored). */
    @JvmStatic
    public fun main(args: Array<String>) {
        val fair = run(fair = true)
        val fifo = run(fair = false)
        println(
            "22. Ktor: a noisy tenant floods $FLOOD calls; a polite one sends $POLITE, one by one"
        )
        println("   noisy calls admitted while each polite call waited")
        println("   fair share by X-Tenant: ${fair.noisyAhead}")
        println("   one FIFO queue:         ${fifo.noisyAhead}")
        println("   free slots after: ${fair.availableAfter} and ${fifo.availableAfter} of $SLOTS")
        check(fair.noisyAhead.all { it <= MAX_AHEAD }) {
            "a polite call waited behind the flood: $fair"
        }
        check(fair.availableAfter == SLOTS && fifo.availableAfter == SLOTS) {
            "permits lost: $fair $fifo"
        }
    }
}
