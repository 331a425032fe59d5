// SPDX-License-Identifier: Apache-2.0
package dev.handoff.docs;

// tag::readme-blocking[]
import dev.handoff.Permits;
import dev.handoff.Semaphore;
// end::readme-blocking[]
import dev.handoff.docs.Fakes.Client;
import dev.handoff.docs.Fakes.Response;
import java.util.concurrent.CompletableFuture;

/** The README's Java quick start. */
final class QuickStart {

    private final Client client;

    QuickStart(Client client) {
        this.client = client;
    }

    // tag::readme-blocking[]
    final Semaphore inFlight = new Semaphore(64L << 20);   // at most 64 MiB of bodies in flight

    void upload(byte[] body) throws InterruptedException {
        // Waits its turn (FIFO) until body.length permits are free. A body larger than the
        // capacity could never fit: acquireBlocking throws IllegalArgumentException at once.
        try (Permits permits = inFlight.acquireBlocking(body.length)) {
            client.send(body);
        }                                                   // released here, also when send throws
    }
    // end::readme-blocking[]

    // tag::readme-async[]
    CompletableFuture<Response> uploadAsync(byte[] body) {
        // No thread waits. The permits go back once, when the stage of sendAsync completes,
        // however it completes; a wait that fails or is cancelled gives back nothing.
        return inFlight.withPermitsAsync(body.length, () -> client.sendAsync(body));
    }
    // end::readme-async[]

    // tag::readme-clamp[]
    void uploadAnySize(byte[] body) throws InterruptedException {
        long cost = Math.min(body.length, inFlight.capacity()); // an oversized body takes the whole budget
        try (Permits permits = inFlight.acquireBlocking(cost)) {
            client.send(body);
        }
    }
    // end::readme-clamp[]
}
