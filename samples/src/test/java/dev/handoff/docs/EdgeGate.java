// SPDX-License-Identifier: Apache-2.0
package dev.handoff.docs;

// tag::admission-java[]
import dev.handoff.edge.Admission;
import dev.handoff.edge.AdmissionControl;
import dev.handoff.edge.Decision;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
// end::admission-java[]

/** The Java example of docs/guide/admission.md, over a stand-in request and handler. */
final class EdgeGate {

    /** A request of some framework. */
    record Request(String tenant, long size) {}

    /** A response: a status and, when shed, the seconds of its Retry-After header. */
    record Response(int status, long retryAfterSeconds) {}

    /** What the example runs when a request is admitted. */
    interface Handler {
        CompletableFuture<Response> handle(Request request);
    }

    private final Handler handler;

    EdgeGate(Handler handler) {
        this.handler = handler;
    }

    // tag::admission-java[]
    final AdmissionControl<Request> gate = AdmissionControl.<Request>builder()
            .capacity(64)                                  // permits in flight
            .key(Request::tenant, tenant -> 1)             // fair across tenants, equal shares
            .cost(r -> r.size() > 1_000_000 ? 4 : 1)       // a large upload weighs 4
            .maxWait(Duration.ofMillis(200))               // then shed: TIMED_OUT
            .maxQueueLength(256)                           // beyond: shed at once, QUEUE_FULL
            .retryAfter(Duration.ofSeconds(2))
            .name("api")
            .build();

    CompletableFuture<Response> serve(Request request) {
        return gate.admitAsync(request).thenCompose((Decision decision) -> {
            Admission admission = decision.admission();
            if (admission == null) {                       // shed: the handler does not run
                return CompletableFuture.completedFuture(
                        new Response(503, decision.retryAfterSeconds()));
            }
            CompletableFuture<Response> response;
            try {
                response = handler.handle(request);
            } catch (RuntimeException e) {
                admission.release(e);                      // exactly once, however it ends
                throw e;
            }
            return response.whenComplete((r, e) -> {
                if (e != null) admission.release(e);       // classified: a timeout is a drop
                else admission.release();
            });
        });
    }
    // end::admission-java[]
}
