// SPDX-License-Identifier: Apache-2.0
package dev.handoff.ktor

import dev.handoff.FairShareSemaphore
import dev.handoff.Semaphore
import dev.handoff.edge.AdmissionControl
import io.ktor.server.application.ApplicationCall
import java.time.Duration
import kotlinx.coroutines.delay
import org.junit.jupiter.api.Assertions.assertEquals
import org.junit.jupiter.api.Assertions.fail

/** A gate of a fixed [capacity] that waits at most [maxWait]. */
internal fun gate(
    capacity: Long,
    maxWait: Duration = Duration.ofSeconds(10),
    retryAfter: Duration = Duration.ofSeconds(1),
): AdmissionControl<ApplicationCall> =
    AdmissionControl.builder<ApplicationCall>()
        .capacity(capacity)
        .maxWait(maxWait)
        .retryAfter(retryAfter)
        .build()

/** A gate fair across the calls' `X-Tenant` header, equal shares. */
internal fun tenantGate(capacity: Long): AdmissionControl<ApplicationCall> =
    AdmissionControl.builder<ApplicationCall>()
        .capacity(capacity)
        .key({ call: ApplicationCall -> call.request.headers["X-Tenant"] ?: "none" }, { 1L })
        .maxWait(Duration.ofSeconds(30))
        .build()

internal val AdmissionControl<ApplicationCall>.available: Long
    get() =
        when (val p = primitive()) {
            is Semaphore -> p.availablePermits()
            is FairShareSemaphore<*> -> p.availablePermits()
            else -> error("unexpected primitive $p")
        }

internal val AdmissionControl<ApplicationCall>.capacity: Long
    get() =
        when (val p = primitive()) {
            is Semaphore -> p.capacity()
            is FairShareSemaphore<*> -> p.capacity()
            else -> error("unexpected primitive $p")
        }

internal val AdmissionControl<ApplicationCall>.waiting: Int
    get() = primitive().queueLength()

/**
 * Waits until [condition] holds: a bound on how long a test may hang, not an assertion about timing
 * (the condition is what the test checks).
 */
internal suspend fun eventually(what: String, condition: () -> Boolean) {
    val deadline = System.nanoTime() + Duration.ofSeconds(20).toNanos()
    while (!condition()) {
        if (System.nanoTime() > deadline) fail<Unit>("never: $what")
        delay(2)
    }
}

/** Every permit back, nobody waiting. */
internal suspend fun AdmissionControl<ApplicationCall>.allBack() {
    eventually("every permit back ($this)") { available == capacity && waiting == 0 }
    assertEquals(capacity, available)
    assertEquals(0, waiting)
}
