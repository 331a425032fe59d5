// SPDX-License-Identifier: Apache-2.0
package dev.handoff.ktor

import dev.handoff.adaptive.Outcome
import dev.handoff.edge.Admission
import dev.handoff.edge.AdmissionControl
import dev.handoff.edge.Decision
import io.ktor.http.HttpHeaders
import io.ktor.http.HttpStatusCode
import io.ktor.server.application.ApplicationCall
import io.ktor.server.application.ApplicationCallPipeline
import io.ktor.server.application.Hook
import io.ktor.server.application.RouteScopedPlugin
import io.ktor.server.application.call
import io.ktor.server.application.createRouteScopedPlugin
import io.ktor.server.response.header
import io.ktor.server.response.respond
import io.ktor.util.pipeline.PipelinePhase
import java.util.concurrent.CompletableFuture
import kotlin.coroutines.cancellation.CancellationException
import kotlinx.coroutines.future.await

/**
 * The configuration of [AdmissionGate]: the gate every call passes and how a response's status
 * tells an adaptive limit how the call ended.
 *
 * ```kotlin
 * install(AdmissionGate) {
 *     control = AdmissionControl.builder<ApplicationCall>().capacity(64).build()
 *     outcome = { status -> if (status.value >= 500) Outcome.FAILURE else Outcome.SUCCESS }
 * }
 * ```
 */
public class AdmissionGateConfig {
    /**
     * The gate each call is admitted by (its cost, key, limit, wait and queue bounds); required.
     * The key and cost functions read the call: a header, the route, the principal (install the
     * plugin after `Authentication` to see it). One gate may serve several routes, which then share
     * its permits.
     *
     * ```kotlin
     * control = AdmissionControl.builder<ApplicationCall>()
     *     .capacity(32)
     *     .key({ call -> call.request.headers["X-Tenant"] ?: "" }, { 1L })
     *     .build()
     * ```
     */
    public var control: AdmissionControl<ApplicationCall>? = null

    /**
     * How a call whose handler returned releases its permits, from the response's status (200 if
     * none was set): by default [Outcome.SUCCESS] below 500, [Outcome.DROPPED] for 503 and 504
     * (overload downstream: an adaptive limit shrinks), [Outcome.FAILURE] for any other 5xx. A call
     * whose handler threw (or was cancelled) is released with the exception, which an adaptive
     * limit's classifier counts. With a fixed capacity the outcome makes no difference. Must not
     * return [Outcome.REJECTED] (the call is then released as a failure, and
     * [IllegalStateException] thrown).
     *
     * ```kotlin
     * outcome = { status -> if (status == HttpStatusCode.TooManyRequests) Outcome.DROPPED else defaultOutcome(status) }
     * ```
     */
    public var outcome: (HttpStatusCode) -> Outcome = ::defaultOutcome

    /**
     * The default of [outcome]: [Outcome.SUCCESS] below 500, [Outcome.DROPPED] for 503 and 504,
     * [Outcome.FAILURE] for other statuses of 500 and above.
     *
     * ```kotlin
     * check(defaultOutcome(HttpStatusCode.GatewayTimeout) == Outcome.DROPPED)
     * ```
     *
     * @param status the response's status
     * @return how the call ended, as an adaptive limit counts it
     */
    public fun defaultOutcome(status: HttpStatusCode): Outcome =
        when {
            status.value < 500 -> Outcome.SUCCESS
            status == HttpStatusCode.ServiceUnavailable ||
                status == HttpStatusCode.GatewayTimeout -> Outcome.DROPPED
            else -> Outcome.FAILURE
        }
}

/**
 * Admission control for a Ktor server: every call takes its permits from
 * [AdmissionGateConfig.control] before its route handler runs, and gives them back exactly once
 * when its response has been written, however the call ends: a normal response, a streamed one
 * (`respondBytesWriter`, `respondOutputStream`, server-sent events: held until their last byte), an
 * exception from the handler, or the call's coroutine cancelled (the client went away). A call that
 * has to wait suspends, at most the gate's `maxWait`, in the limit's FIFO (or fair-share) queue; if
 * it is cancelled while it waits, its wait is withdrawn and nothing is held.
 *
 * A call that is not admitted (shed: its wait timed out, the queue is full, its cost is too high,
 * the gate is closed) is answered `503 Service Unavailable` with a `Retry-After` header (the gate's
 * `retryAfter`, in whole seconds rounded up), and its handler does not run. Customize that answer
 * with `StatusPages`' `status(HttpStatusCode.ServiceUnavailable) { .. }`.
 *
 * A route-scoped plugin: install it in the application or routing root for every route, or in a
 * route (`route("/upload") { install(AdmissionGate) { .. } }`) for that route and those below it,
 * each with its own gate; the innermost installation governs a route (Ktor refuses an installation
 * in both the application and a route: install in `routing { }` then). The admission runs after the
 * plugins of the `Plugins` phase installed before it (authentication among them), right before the
 * handler.
 *
 * ```kotlin
 * routing {
 *     install(AdmissionGate) {
 *         control = AdmissionControl.builder<ApplicationCall>()
 *             .capacity(64)
 *             .maxWait(Duration.ofMillis(200))
 *             .build()
 *     }
 *     get("/report") { call.respondText(report()) }
 * }
 * ```
 *
 * Installing it throws [IllegalStateException] if [AdmissionGateConfig.control] is not set.
 */
public val AdmissionGate: RouteScopedPlugin<AdmissionGateConfig> =
    createRouteScopedPlugin("HandoffAdmissionGate", ::AdmissionGateConfig) {
        val control =
            checkNotNull(pluginConfig.control) {
                "install(AdmissionGate): control is not set; set control = AdmissionControl.builder<ApplicationCall>()...build()"
            }
        on(AroundHandler, Gatekeeper(control, pluginConfig.outcome))
    }

/** Hooks a [Gatekeeper] around the rest of the call's pipeline: the handler and its response. */
private object AroundHandler : Hook<Gatekeeper> {
    private val phase = PipelinePhase("HandoffAdmission")

    override fun install(pipeline: ApplicationCallPipeline, handler: Gatekeeper) {
        pipeline.insertPhaseAfter(ApplicationCallPipeline.Plugins, phase)
        pipeline.intercept(phase) {
            var proceeded = false
            handler.around(call) {
                proceeded = true
                proceed()
            }
            if (!proceeded) finish()
        }
    }
}

/**
 * Admits each call, runs the rest of its pipeline, and releases its permits when that returns or
 * throws. The engines (Netty, CIO, Jetty, Tomcat) write a response, a streamed body included,
 * before `respond` returns, so the permits are held until its last byte is written; Ktor's test
 * engine writes a streamed body in a coroutine of its own afterwards.
 */
private class Gatekeeper(
    private val control: AdmissionControl<ApplicationCall>,
    private val outcome: (HttpStatusCode) -> Outcome,
) {
    suspend fun around(call: ApplicationCall, handler: suspend () -> Unit) {
        val decision = await(control.admitAsync(call))
        val admission = decision.admission()
        if (admission == null) {
            call.response.header(HttpHeaders.RetryAfter, decision.retryAfterSeconds())
            call.respond(HttpStatusCode.ServiceUnavailable)
            return
        }
        try {
            handler()
        } catch (thrown: Throwable) {
            admission.release(thrown)
            throw thrown
        }
        release(admission, call.response.status() ?: HttpStatusCode.OK)
    }

    private fun release(admission: Admission, status: HttpStatusCode) {
        val how =
            try {
                outcome(status)
            } catch (thrown: Throwable) {
                admission.release(Outcome.FAILURE)
                throw thrown
            }
        if (how == Outcome.REJECTED) {
            admission.release(Outcome.FAILURE)
            throw IllegalStateException(
                "AdmissionGate outcome($status) returned REJECTED, which is for calls never admitted;" +
                    " return SUCCESS, FAILURE or DROPPED"
            )
        }
        admission.release(how)
    }
}

/**
 * Waits for the decision; if the wait is cancelled, withdraws it, and gives back the permits of a
 * grant that came too late for the cancel (the decision was complete, nobody else holds it).
 */
private suspend fun await(decision: CompletableFuture<Decision>): Decision =
    try {
        decision.await()
    } catch (cancelled: CancellationException) {
        decision.cancel(false)
        if (!decision.isCompletedExceptionally) {
            decision.join().admission()?.release(cancelled)
        }
        throw cancelled
    }
