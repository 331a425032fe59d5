// SPDX-License-Identifier: Apache-2.0
package dev.handoff.docs

// tag::readme-kotlin[]
import dev.handoff.Semaphore
import dev.handoff.coroutines.withPermits

class Uploads(private val downstream: Downstream) {
    val inFlight = Semaphore(64L shl 20) // at most 64 MiB of bodies in flight

    suspend fun upload(body: ByteArray): Response =
        inFlight.withPermits(body.size) { // suspends, in FIFO order, until the bytes fit
            downstream.send(body)
        } // released on return, on exception and on cancellation
}
// end::readme-kotlin[]
