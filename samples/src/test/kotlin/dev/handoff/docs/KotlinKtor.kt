// SPDX-License-Identifier: Apache-2.0
package dev.handoff.docs

// tag::ktor-gate[]
import dev.handoff.edge.AdmissionControl
import dev.handoff.ktor.AdmissionGate
import io.ktor.server.application.Application
import io.ktor.server.application.ApplicationCall
import io.ktor.server.application.install
import io.ktor.server.response.respondText
import io.ktor.server.routing.get
import io.ktor.server.routing.post
import io.ktor.server.routing.route
import io.ktor.server.routing.routing
import java.time.Duration
// end::ktor-gate[]

/** The Kotlin example of docs/integrations/ktor.md, over a stand-in report store. */
class KotlinKtor(private val reports: Reports) {

    /** The work behind the routes. */
    interface Reports {
        suspend fun find(id: String): String

        suspend fun export(): String
    }

    // tag::ktor-gate[]
    val api = AdmissionControl.builder<ApplicationCall>()
        .capacity(64)                                            // calls in flight
        .key({ call -> call.request.headers["X-Tenant"] ?: "anonymous" }, { 1L })
        .maxWait(Duration.ofMillis(200))                         // then 503 + Retry-After
        .maxQueueLength(256)
        .name("api")
        .build()

    val exports = AdmissionControl.builder<ApplicationCall>()
        .capacity(2)                                             // two exports at a time
        .maxWait(Duration.ZERO)                                  // a third is shed at once
        .build()

    fun Application.module() {
        routing {
            install(AdmissionGate) { control = api }             // every route below
            get("/reports/{id}") {
                call.respondText(reports.find(call.parameters["id"]!!))
            }
            route("/exports") {
                install(AdmissionGate) { control = exports }     // here: the route's own gate
                post { call.respondText(reports.export()) }
            }
        }
    }
    // end::ktor-gate[]
}
