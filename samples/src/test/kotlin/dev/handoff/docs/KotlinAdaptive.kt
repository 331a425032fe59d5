// SPDX-License-Identifier: Apache-2.0
package dev.handoff.docs

// tag::adaptive-kotlin[]
import dev.handoff.Semaphore
import dev.handoff.adaptive.AdaptiveCapacity
import dev.handoff.adaptive.withPermits
import kotlin.time.Duration.Companion.seconds
import kotlinx.coroutines.withTimeout

class Crawler(private val http: Http) {
    val adaptive: AdaptiveCapacity = AdaptiveCapacity.builder(Semaphore(20)).maxCapacity(500).build()

    suspend fun fetch(url: String): String = adaptive.withPermits(1) {
        withTimeout(2.seconds) { http.get(url) } // a timeout counts as a drop, another exception as a failure
    }
}
// end::adaptive-kotlin[]
