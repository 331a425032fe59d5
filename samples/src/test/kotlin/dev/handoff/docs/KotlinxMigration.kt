// SPDX-License-Identifier: Apache-2.0
package dev.handoff.docs

// tag::readme-kotlinx[]
import dev.handoff.Semaphore
import dev.handoff.coroutines.asKotlinxSemaphore
import kotlinx.coroutines.sync.withPermit

class Fetcher(private val http: Http) {
    val pool = Semaphore(8) // dev.handoff.Semaphore: FIFO, closable, observable
    private val connections = pool.asKotlinxSemaphore() // was: kotlinx.coroutines.sync.Semaphore(8)

    suspend fun fetch(url: String): String = connections.withPermit { http.get(url) } // kotlinx's own withPermit
}
// end::readme-kotlinx[]
